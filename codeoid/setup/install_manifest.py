"""The install manifest (`install.json` in the data dir): what codeoid added where, so uninstall takes back
exactly that and nothing of the user's.

Some things cannot be told apart by looking at the settings afterwards: an allow rule `mcp__codeoid` the user
wrote themselves looks the same as one codeoid added, and an empty `hooks` object may be the user's or a leftover
of ours. The manifest remembers which is which, per install (scope plus project).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeoid.paths import FILE_MODE
from codeoid.setup.json_config import InstallError, load_object, write_atomic

MANIFEST_NAME = "install.json"
MANIFEST_VERSION = 1

KeyPath = tuple[str, ...]


@dataclass
class InstallRecord:
    """One install: its scope, the files it edited, and what in them codeoid brought into being.

    `created` maps each edited file to the key paths codeoid created there; the empty path stands for the file
    itself. `created_dirs` are directories codeoid made to hold those files.
    """

    scope: str
    project: str | None
    settings_file: str
    mcp_file: str
    allow_rule_added: bool
    created: dict[str, list[KeyPath]] = field(default_factory=dict)
    created_dirs: list[str] = field(default_factory=list)

    def created_in(self, path: Path) -> set[KeyPath]:
        return set(self.created.get(str(path), []))


def manifest_path(data_dir: Path) -> Path:
    return data_dir / MANIFEST_NAME


def load_records(path: Path) -> list[InstallRecord]:
    """Every install recorded in the manifest at `path` (none when it does not exist)."""
    data = load_object(path)
    if data is None:
        return []
    try:
        return [
            InstallRecord(
                **{
                    **entry,
                    "created": {file: [tuple(keys) for keys in paths] for file, paths in entry["created"].items()},
                }
            )
            for entry in data["installs"]
        ]
    except (KeyError, TypeError, AttributeError) as error:
        raise InstallError(
            f"The install manifest {path} is damaged ({error!r}); move it away and run again "
            "(uninstall then removes codeoid's entries but leaves the allow rule in place)."
        ) from error


def save_records(path: Path, records: list[InstallRecord]) -> None:
    """Write the manifest (0600), or remove it once no install is left."""
    if not records:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, {"version": MANIFEST_VERSION, "installs": [asdict(r) for r in records]}, mode=FILE_MODE)
