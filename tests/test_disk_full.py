"""A full disk: the reserve goes to the spool and never to the store, and what not even the spool can take is
counted in the loss ring that `codeoid doctor` reads.

A real 16 MB tmpfs (`small_disk`) is the data dir's disk (skipped where `mount` is not permitted), filled with a
real file, and real `codeoid-hook` processes send more than the 4 MB reserve can hold.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import executable, fill_disk
from test_hook_faults import fire, prompt, query, spool_entries, tool_call

from codeoid.capture import loss_ring


def store_bytes(home: Path) -> int:
    return sum(os.path.getsize(home / name) for name in ("store.db", "store.db-wal") if (home / name).exists())


def test_the_reserve_goes_to_the_spool_only_and_every_loss_is_counted(small_disk: Path, project: Path) -> None:
    home = small_disk
    for index in range(3):
        fire("UserPromptSubmit", prompt(f"p-{index}"), cwd=project)
    assert (home / "spool" / ".reserve").exists() and (home / "logs" / "lost.ring").exists()

    filler = home.parent / "filler"
    fill_disk(filler)
    before = store_bytes(home)
    sent = [f"t-full-{index}" for index in range(40)]
    outputs = {key: f"{key} " + "0123456789abcdef" * 12_000 for key in sent}  # ~190 KB each, 7.6 MB in all
    for key in sent:
        fire("PostToolUse", tool_call(key, outputs[key]), cwd=project)

    assert store_bytes(home) <= before  # the room the reserve gave back went to the spool
    spooled = len(spool_entries(home))
    lost, lines = loss_ring.losses(str(home / "logs" / "lost.ring"))
    assert spooled > 10 and lost > 0
    assert spooled + lost == len(sent)
    assert all("PostToolUse t-full-" in line and "No space left on device" in line for line in lines)
    doctor = subprocess.run([executable("codeoid"), "doctor"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "HOME": str(home.parent)})
    assert f"{lost} event(s) were lost (not even the spool could take them" in doctor.stdout

    filler.unlink()
    fire("UserPromptSubmit", prompt("p-after"), cwd=project)
    assert spool_entries(home) == []
    rows = dict(query(home, "SELECT coalesce(tool_use_id, prompt_id), text FROM episodes"))
    kept = [key for key in sent if key in rows]
    assert len(kept) == spooled and all(rows[key] == outputs[key] for key in kept)
    assert (home / "spool" / ".reserve").exists()
