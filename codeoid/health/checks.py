"""One function per check, each returning a list of `Finding`s (status and a sentence that says what to do)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from codeoid.setup.doctor import Finding

# Episodes the vector index may lag behind the store before that is worth a warning (the indexer works in
# batches of tens, a few seconds behind the hooks).
INDEX_BACKLOG_WARN = 500
# A raw output still unfinished after this long was cut short: its command was killed or the compressor died.
UNFINISHED_AFTER_SECONDS = 3600


def health_report(data_dir: Path, project_dir: Path) -> list[Finding]:
    """Every health check, in the order doctor prints them."""
    findings: list[Finding] = []
    for check in CHECKS:
        findings.extend(check(data_dir, project_dir))
    return findings


def chroma_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """Whether the vector index's Chroma server answers (a team server), or is up or will start (the local one)."""
    from codeoid.memory import chroma_server
    from codeoid.memory.ranking import vector_enabled

    if not vector_enabled():
        return [Finding("info", "Semantic memory is off (CODEOID_VECTOR=off): recall uses BM25 alone.")]
    remote = chroma_server.remote_url()
    if remote is not None:
        from codeoid.memory.chroma_http import ChromaRefused, Endpoint, request

        try:
            token = chroma_server.remote_token()
        except chroma_server.ChromaServerError as error:
            return [Finding("fail", f"The team Chroma server's token cannot be read: {error}.")]
        try:
            status, _ = request(Endpoint(remote, token), "GET", "/api/v2/heartbeat", timeout=3.0)
        except ChromaRefused:
            return [Finding("fail", f"The team Chroma server at {remote} refuses codeoid's requests: "
                                    + ("its token (CODEOID_CHROMA_TOKEN or CODEOID_CHROMA_TOKEN_FILE) is wrong."
                                       if token else "it wants a token; set CODEOID_CHROMA_TOKEN or "
                                                     "CODEOID_CHROMA_TOKEN_FILE."))]
        except OSError:
            status = 0
        if status == 200 and token:
            return [Finding("ok", f"The team Chroma server at {remote} answers and takes codeoid's token.")]
        if status == 200:
            return [Finding("warn", f"The team Chroma server at {remote} answers without a token: anyone who can "
                                    "reach it reads and writes this team's memory. Put it behind a token and set "
                                    "CODEOID_CHROMA_TOKEN (or CODEOID_CHROMA_TOKEN_FILE).")]
        return [Finding("fail", f"The team Chroma server at {remote} (CODEOID_CHROMA_URL) does not answer: recall "
                                "falls back to BM25 and nothing is indexed until it is back; check the server or "
                                "unset CODEOID_CHROMA_URL to use a local one.")]
    running = chroma_server.running_server()
    if running is not None:
        return [Finding("ok", f"The local Chroma server answers on {running.socket} (owner-only, with a token; data "
                              f"in {running.data_path}).")]
    if not chroma_server.engine_installed():
        return [Finding("fail", "chromadb's engine is missing from codeoid's environment, so no vector index "
                                "can start: reinstall codeoid (pip install codeoid).")]
    return [Finding("info", "The local Chroma server is not running now; the memory service starts it on the "
                            "first recall or index and it stops itself when idle.")]


def service_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """The memory service of this data dir: running or not, its pid, its socket's mode, its idle clock. Looking
    neither starts it nor counts as activity for its idle stop."""
    from codeoid.memory.ranking import vector_enabled

    if not vector_enabled() or not (data_dir / "service").is_dir():
        return [] if not vector_enabled() else [Finding("info", _SERVICE_STARTS)]
    from codeoid.service import client, lifecycle

    running = lifecycle.running_service()
    if running is None:
        return [Finding("info", _SERVICE_STARTS)]
    try:
        mode = Path(running.socket).stat().st_mode & 0o777
    except OSError as error:
        return [Finding("warn", f"The memory service (pid {running.pid}) runs but its socket {running.socket} is "
                                f"gone ({error}); `codeoid uninstall` or the next start replaces it.")]
    if mode != 0o600:
        return [Finding("fail", f"The memory service's socket {running.socket} has mode {mode:o}, not 600: other "
                                "users could ask it for your history. Stop it (kill " + str(running.pid) + ") and "
                                "let codeoid start it again.")]
    try:
        state = client.health(running)
    except client.ServiceUnavailable as error:
        return [Finding("warn", f"The memory service (pid {running.pid}) does not answer: {error}.")]
    left = max(0.0, float(state["idle_seconds"]) - float(state["idle_for"]))
    return [Finding("ok", f"The memory service runs (pid {running.pid}, socket {running.socket}, mode 600), with "
                          f"{state['indexers']} indexer; idle for {float(state['idle_for']):.0f} s, it stops itself "
                          f"after {left:.0f} s more without a request.")]


_SERVICE_STARTS = ("The memory service is not running now; the first MCP session, recall or `codeoid search` starts "
                   "it, and it stops itself when idle.")


def model_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """The bundled embedding model and tokenizer are the files codeoid pins (sha256)."""
    from codeoid.memory import embedding

    model = embedding.MiniLMEmbedder
    try:
        path = model._installed_model_path()
        embedding.verify_file(path, model.MODEL_SHA256, "embedding model")
    except embedding.EmbeddingModelError as error:
        return [Finding("fail", f"The embedding model cannot be used: {error}.")]
    return [Finding("ok", f"The embedding model {model.name} matches its pinned sha256 ({path}).")]


def index_backlog_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """How far the keyword (FTS) and vector indexes trail the store."""
    from codeoid.memory.ranking import vector_enabled
    from codeoid.store import vector_progress

    with _store(data_dir) as db:
        if db is None:
            return []
        latest = int(db.execute("SELECT coalesce(max(id), 0) FROM episodes").fetchone()[0])
        fts_behind = latest - int(db.execute("SELECT indexed_upto FROM fts_progress").fetchone()[0])
        vector_behind = latest - vector_progress.progress(db).indexed_upto
    findings = []
    if vector_enabled() and vector_behind > INDEX_BACKLOG_WARN:
        findings.append(Finding("warn", f"The vector index is {vector_behind:,} episodes behind the store: recall "
                                        "finds them by their words only until the indexer catches up (it runs "
                                        "inside the memory service; `codeoid reindex` does it now)."))
    else:
        trailing = f"{vector_behind:,} episode(s) still to embed" if vector_enabled() and vector_behind else "none"
        findings.append(Finding("ok", f"Indexing backlog: {trailing} of {latest:,} episodes; the keyword index is "
                                      f"{fts_behind:,} behind (caught up at the next search)."))
    return findings


def quarantine_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """What quarantine holds in all (the installation checks name the corrupt databases and inputs one by one)."""
    quarantine = data_dir / "quarantine"
    entries = [entry for entry in quarantine.iterdir() if entry.is_file()] if quarantine.is_dir() else []
    if not entries:
        return [Finding("ok", "Quarantine is empty: no corrupt database or unreadable hook input was set aside.")]
    size = sum(entry.stat().st_size for entry in entries)
    oldest = time.strftime("%Y-%m-%d", time.localtime(min(entry.stat().st_mtime for entry in entries)))
    return [Finding("info", f"Quarantine ({quarantine}) holds {len(entries)} file(s), {size / 1e6:.1f} MB, the "
                            f"oldest from {oldest}; nothing there is searched.")]


def unfinished_raw_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """Raw outputs whose command never reported its end (killed, or the compressor died) more than an hour ago."""
    with _store(data_dir) as db:
        if db is None:
            return []
        rows = db.execute("SELECT id FROM raw_outputs WHERE complete = 0 AND created_at < ? ORDER BY created_at",
                          (time.time() - UNFINISHED_AFTER_SECONDS,)).fetchall()
    if not rows:
        return [Finding("ok", "Every archived raw output was finished.")]
    named = ", ".join(str(row[0]) for row in rows[:3]) + (f" and {len(rows) - 3} more" if len(rows) > 3 else "")
    return [Finding("warn", f"{len(rows)} raw output(s) never finished ({named}): their command was killed or the "
                            "compressor died, so their stored stdout may stop short; `codeoid show <id>` shows "
                            "what was kept.")]


def allow_rule_findings(data_dir: Path, project_dir: Path) -> list[Finding]:
    """Which allow rules would let codeoid compress the Bash output it had to leave whole in this project (the
    `codeoid discover` replay of its history): codeoid never widens permissions itself."""
    import shlex

    from codeoid.hooks.discover import discover
    from codeoid.store import queries

    with _store(data_dir) as db:
        if db is None:
            return []
        workspace_id = queries.workspace_id_for(db, str(project_dir))
        if workspace_id is None:
            return []
        try:
            report = discover(db, workspace_id=workspace_id)
        except Exception as error:  # noqa: BLE001 - a check must not break doctor
            return [Finding("info", f"Could not replay this project's Bash history ({error}).")]
    rules = report.by_allow_rule()
    if not rules:
        return []
    named = "; ".join(f"{rule} {size / report.window_bytes:.0%} of the window" + (f" ({failed} failed calls)"
                                                                                   if failed else "")
                      for rule, size, _, failed in rules[:3])
    return [Finding("info", f"Allow rules would let codeoid compress more of this project's Bash output: {named}. "
                            f"Add one with `codeoid allow {shlex.quote(rules[0][0])}` (see `codeoid discover`).")]


class _store:  # noqa: N801 - a context manager, named like one
    """The store if it exists (opened without creating the data dir), else None."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "store.db"
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection | None:
        from codeoid.store import db as store_db

        if not self.path.is_file():
            return None
        try:
            self.db = store_db.connect(str(self.path))
        except store_db.StoreUnavailable:
            return None
        return self.db

    def __exit__(self, *exc: object) -> None:
        if self.db is not None:
            self.db.close()


CHECKS: tuple[Callable[[Path, Path], list[Finding]], ...] = (
    chroma_findings, service_findings, model_findings, index_backlog_findings, quarantine_findings,
    unfinished_raw_findings, allow_rule_findings,
)
