"""Schema migrations: an ordered list of plain functions, each applied once and recorded by name.

An applied migration is never edited; a change is a new function appended to the list. `migrate` runs in
one `BEGIN IMMEDIATE` transaction so two processes opening a fresh database cannot both apply a step.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE workspaces (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,          -- real path of the git common dir, else of the project dir
            root TEXT NOT NULL,                -- the project dir it was first seen from
            portable_id TEXT,                  -- normalized git remote URL, shared across machines
            created_at REAL NOT NULL
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,               -- codeoid's durable id, stable across rotations
            workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
            name TEXT,
            forked_from TEXT REFERENCES sessions(id),
            at_turn INTEGER,
            rotation_count INTEGER NOT NULL DEFAULT 0,
            turn_count INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        );
        CREATE TABLE backing_sessions (
            id TEXT PRIMARY KEY,               -- Claude Code's session_id
            session_id TEXT NOT NULL REFERENCES sessions(id),
            source TEXT,                       -- startup | resume | clear | compact | fork
            claude_pid INTEGER,
            transcript_path TEXT,
            started_at REAL NOT NULL,
            ended_at REAL,
            end_reason TEXT
        );
        CREATE TABLE episodes (
            id INTEGER PRIMARY KEY,
            workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            backing_session_id TEXT REFERENCES backing_sessions(id),
            turn INTEGER,
            kind TEXT NOT NULL CHECK (kind IN ('user', 'assistant', 'tool')),
            state TEXT NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'archived', 'retracted')),
            tool_name TEXT,
            tool_use_id TEXT,
            prompt_id TEXT,
            message_id TEXT,
            input TEXT,                        -- tool input as JSON
            command TEXT,                      -- Bash: the command that ran
            original_command TEXT,             -- Bash: the command the model asked for
            text TEXT NOT NULL,                -- prompt, assistant text, or the tool result as text
            response TEXT,                     -- tool_response as Claude Code reported it, JSON
            is_error INTEGER NOT NULL DEFAULT 0,
            exit_status INTEGER,
            paths TEXT,                        -- JSON list of file paths the call touched
            transcript_uuid TEXT,
            agent_id TEXT,                     -- set on subagent turns
            origin TEXT NOT NULL DEFAULT 'user',
            summary TEXT NOT NULL,
            token_estimate INTEGER NOT NULL,
            raw_output_id TEXT,
            created_at REAL NOT NULL
        );
        CREATE UNIQUE INDEX episodes_tool_use_id ON episodes(tool_use_id) WHERE kind = 'tool';
        CREATE UNIQUE INDEX episodes_prompt_id ON episodes(prompt_id) WHERE kind = 'user';
        CREATE UNIQUE INDEX episodes_message_id ON episodes(message_id) WHERE kind = 'assistant';
        CREATE INDEX episodes_session ON episodes(session_id, id);
        CREATE INDEX episodes_workspace ON episodes(workspace_id, id);
        CREATE INDEX episodes_backing_state ON episodes(backing_session_id, state);

        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            input, text, content='episodes', content_rowid='id', tokenize='porter unicode61'
        );
        CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
            INSERT INTO episodes_fts(rowid, input, text) VALUES (new.id, new.input, new.text);
        END;
        CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, input, text)
                VALUES ('delete', old.id, old.input, old.text);
        END;
        CREATE TRIGGER episodes_fts_update AFTER UPDATE OF input, text ON episodes BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, input, text)
                VALUES ('delete', old.id, old.input, old.text);
            INSERT INTO episodes_fts(rowid, input, text) VALUES (new.id, new.input, new.text);
        END;

        CREATE TABLE raw_outputs (
            id TEXT PRIMARY KEY,               -- derived from tool_use_id, or fresh for by-hand runs
            workspace_id INTEGER REFERENCES workspaces(id),
            session_id TEXT,
            tool_use_id TEXT,
            command TEXT NOT NULL,
            cwd TEXT,
            exit_status INTEGER,
            duration_ms INTEGER,
            stdout_size INTEGER NOT NULL DEFAULT 0,
            stderr BLOB,
            complete INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        );
        -- stdout in fixed-size chunks, so a writer streams a 1 GB output with constant memory.
        CREATE TABLE raw_chunks (
            raw_output_id TEXT NOT NULL REFERENCES raw_outputs(id),
            seq INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (raw_output_id, seq)
        ) WITHOUT ROWID;

        CREATE TABLE rotations (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            number INTEGER NOT NULL,
            from_backing_session_id TEXT,
            to_backing_session_id TEXT,
            reason TEXT NOT NULL,
            occupancy_tokens INTEGER,
            window_tokens INTEGER,
            created_at REAL NOT NULL,
            UNIQUE (session_id, number)
        );
        """
    )


@migration
def m002_turns_and_transcripts(db: sqlite3.Connection) -> None:
    """Turn boundaries, compaction notes and the transcript read watermark, added with the capture hooks."""
    run_script(
        db,
        """
        ALTER TABLE backing_sessions ADD COLUMN transcript_offset INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE backing_sessions ADD COLUMN model TEXT;
        CREATE TABLE turns (
            session_id TEXT NOT NULL REFERENCES sessions(id),
            number INTEGER NOT NULL,
            backing_session_id TEXT,
            started_at REAL NOT NULL,
            ended_at REAL,
            end_reason TEXT,                   -- stop | stop_failure | interrupted
            PRIMARY KEY (session_id, number)
        );
        CREATE TABLE compactions (
            id INTEGER PRIMARY KEY,
            backing_session_id TEXT NOT NULL,
            trigger TEXT,
            custom_instructions TEXT,
            noted_at REAL NOT NULL,
            archived_count INTEGER,
            applied_at REAL
        );
        """
    )


@migration
def m003_deferred_fts(db: sqlite3.Connection) -> None:
    """Index episodes into FTS after the fact instead of in the hook's transaction.

    Indexing a 1 MB tool result costs ~25 ms, on the hot path of every tool call. Episodes are now indexed
    in id order by `catch_up_fts` (run by searches and the long-lived server); `fts_progress` remembers how
    far, and edits to an already indexed episode still reach the index through the triggers.
    """
    run_script(
        db,
        """
        DROP TRIGGER episodes_fts_insert;
        DROP TRIGGER episodes_fts_update;
        DROP TRIGGER episodes_fts_delete;
        CREATE TABLE fts_progress (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            indexed_upto INTEGER NOT NULL
        );
        INSERT INTO fts_progress VALUES (1, (SELECT coalesce(max(id), 0) FROM episodes));
        CREATE TRIGGER episodes_fts_update AFTER UPDATE OF input, text ON episodes
        WHEN old.id <= (SELECT indexed_upto FROM fts_progress) BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, input, text)
                VALUES ('delete', old.id, old.input, old.text);
            INSERT INTO episodes_fts(rowid, input, text) VALUES (new.id, new.input, new.text);
        END;
        CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes
        WHEN old.id <= (SELECT indexed_upto FROM fts_progress) BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, input, text)
                VALUES ('delete', old.id, old.input, old.text);
        END;
        """,
    )


@migration
def m004_vector_index(db: sqlite3.Connection) -> None:
    """The vector indexer's watermark and claim, and the retracted episodes it still has to remove from Chroma.

    `indexed_upto` is how far episodes are in the vector index; `claimed_upto`/`claimed_by`/`claimed_at` mark a
    batch one indexer is embedding, so a second waits instead of embedding it too (a claim older than its
    lease is taken over: its holder died). A trigger queues retractions of already indexed episodes.
    """
    run_script(
        db,
        """
        CREATE TABLE vector_progress (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            indexed_upto INTEGER NOT NULL,
            claimed_upto INTEGER NOT NULL,
            claimed_by TEXT,
            claimed_at REAL
        );
        INSERT INTO vector_progress VALUES (1, 0, 0, NULL, NULL);
        CREATE TABLE vector_removals (episode_id INTEGER PRIMARY KEY);
        CREATE TRIGGER episodes_vector_retract AFTER UPDATE OF state ON episodes
        WHEN new.state = 'retracted' AND old.state != 'retracted'
             AND old.id <= (SELECT claimed_upto FROM vector_progress) BEGIN
            INSERT OR IGNORE INTO vector_removals VALUES (old.id);
        END;
        """,
    )


@migration
def m005_savings_ledger(db: sqlite3.Connection) -> None:
    """What `codeoid gain` adds up: the rule that compressed a raw output and what the model was shown instead,
    and every later read of the raw bytes that the model paid for in its window.

    `shown_size` stays NULL until the compressor records it (a run from before this migration, or one cut short
    before it could write): the ledger counts such a run as saving nothing. `rule` is NULL when the output passed
    through unchanged.
    """
    run_script(
        db,
        """
        ALTER TABLE raw_outputs ADD COLUMN rule TEXT;
        ALTER TABLE raw_outputs ADD COLUMN shown_size INTEGER;
        CREATE TABLE raw_output_reads (
            id INTEGER PRIMARY KEY,
            raw_output_id TEXT NOT NULL REFERENCES raw_outputs(id),
            reader TEXT NOT NULL,              -- what read it for the model, e.g. get_episode
            backing_session_id TEXT,           -- the Claude Code session that asked, when known
            start_line INTEGER,
            end_line INTEGER,
            bytes INTEGER NOT NULL,            -- UTF-8 size of what the read returned
            tokens INTEGER NOT NULL,           -- its estimated tokens
            created_at REAL NOT NULL
        );
        CREATE INDEX raw_output_reads_raw ON raw_output_reads(raw_output_id);
        """,
    )


@migration
def m006_workspace_index(db: sqlite3.Connection) -> None:
    """The prebuilt workspace index, and what each window was last shown of it.

    A long-lived process builds the index (it needs the vector index for topics); hooks only read it, so
    SessionStart injects it at the cost of one row. `facts` holds what a delta compares (hot files, topics,
    the newest episode), and a window's view keeps the facts it was shown, so its delta says what is new to it.
    """
    run_script(
        db,
        """
        CREATE TABLE workspace_index (
            workspace_id INTEGER PRIMARY KEY REFERENCES workspaces(id),
            version INTEGER NOT NULL,          -- bumped only when the text changes
            body TEXT NOT NULL,                -- everything but the tool reference, which depends on the route
            facts TEXT NOT NULL,               -- JSON from codeoid.workspace_index.gather
            built_at REAL NOT NULL
        );
        CREATE TABLE workspace_index_views (
            backing_session_id TEXT PRIMARY KEY,
            workspace_id INTEGER NOT NULL,
            version INTEGER NOT NULL,
            facts TEXT NOT NULL,
            shown_at REAL NOT NULL
        );
        """,
    )


@migration
def m007_store_identity(db: sqlite3.Connection) -> None:
    """A random id for this store, which its chunks in Chroma carry from now on (`codeoid.store.identity`).

    Before it, chunk ids were `<episode id>:<n>`: on a team's shared server two machines' episode 123 took the
    same id, one overwrote the other, and a teammate's hit read as whatever this store's episode 123 was. Chunks
    now live in store-qualified collections under a new name, so the vector index starts over from the first
    episode (the indexer fills it in the background; recall is BM25 alone until it has begun).
    """
    run_script(
        db,
        """
        CREATE TABLE store_identity (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            store_id TEXT NOT NULL
        );
        INSERT INTO store_identity VALUES (1, lower(hex(randomblob(16))));
        UPDATE vector_progress SET indexed_upto = 0, claimed_upto = 0, claimed_by = NULL, claimed_at = NULL;
        DELETE FROM vector_removals;
        """,
    )


@migration
def m008_retraction(db: sqlite3.Connection) -> None:
    """What `codeoid retract` and `codeoid restore` need: the state an episode had before it was retracted (a
    restore puts it back there), and a queue of restored episodes the vector indexer must embed again (they left
    the index when they were retracted, behind its watermark). A restore before the indexer removed the episode
    cancels the removal.
    """
    run_script(
        db,
        """
        ALTER TABLE episodes ADD COLUMN retracted_from TEXT;
        CREATE TABLE vector_restores (episode_id INTEGER PRIMARY KEY);
        CREATE TRIGGER episodes_vector_restore AFTER UPDATE OF state ON episodes
        WHEN old.state = 'retracted' AND new.state != 'retracted'
             AND old.id <= (SELECT claimed_upto FROM vector_progress) BEGIN
            DELETE FROM vector_removals WHERE episode_id = old.id;
            INSERT OR IGNORE INTO vector_restores VALUES (old.id);
        END;
        """,
    )


@migration
def m009_retention(db: sqlite3.Connection) -> None:
    """What retention and forgetting need (`codeoid.store.retention`): when a raw output's bytes were dropped to
    keep the data dir under its budget (its metadata stays), when an episode's vectors were dropped for the same
    reason, and when an episode was forgotten (its row stays as a tombstone, its content is gone). Raw chunks
    written from now on may be zstd-compressed (`codec`); the ones already stored stay as they are (NULL: plain).
    """
    run_script(
        db,
        """
        ALTER TABLE raw_outputs ADD COLUMN expired_at REAL;
        ALTER TABLE raw_chunks ADD COLUMN codec TEXT;
        ALTER TABLE episodes ADD COLUMN vectors_expired_at REAL;
        ALTER TABLE episodes ADD COLUMN forgotten_at REAL;
        """,
    )


@migration
def m010_context_index(db: sqlite3.Connection) -> None:
    """Each episode indexed with its session neighbours (`codeoid.store.context_index`), and the corpus statistics
    of the vector index's embeddings that recall standardises cosines with.

    `episodes_context` holds, per episode, its own text and the neighbours before and after it in three more
    columns by distance; `context_progress` is how far new episodes are in it (0 here: existing rows are built by
    the first catch-up, in small transactions, never in this one, which may be a hook's). A neighbour's row changes
    when an episode next to it is retracted, restored or edited (episodes are never deleted): triggers queue those
    in `context_dirty`.
    `dense_stats` keeps, per vector collection, the count, sum and sum of outer products of the embeddings the
    indexer has written (float64 blobs), so a mean and covariance are always at hand.
    """
    run_script(
        db,
        """
        CREATE VIRTUAL TABLE episodes_context USING fts5(self, near, mid, far, tokenize='porter unicode61');
        CREATE TABLE context_progress (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            indexed_upto INTEGER NOT NULL
        );
        INSERT INTO context_progress VALUES (1, 0);
        CREATE TABLE context_dirty (episode_id INTEGER PRIMARY KEY);
        CREATE TRIGGER episodes_context_state AFTER UPDATE OF state ON episodes
        WHEN (old.state = 'retracted') != (new.state = 'retracted')
             AND old.id <= (SELECT indexed_upto FROM context_progress) BEGIN
            INSERT OR IGNORE INTO context_dirty VALUES (old.id);
        END;
        CREATE TRIGGER episodes_context_edit AFTER UPDATE OF input, text ON episodes
        WHEN old.id <= (SELECT indexed_upto FROM context_progress) BEGIN
            INSERT OR IGNORE INTO context_dirty VALUES (old.id);
        END;
        CREATE TABLE dense_stats (
            collection TEXT PRIMARY KEY,       -- the vector collection's workspace key
            dimension INTEGER NOT NULL,
            count INTEGER NOT NULL,
            total BLOB NOT NULL,               -- sum of the vectors, float64
            outer_total BLOB NOT NULL          -- sum of their outer products, float64, row-major
        );
        """,
    )


@migration
def m011_agents(db: sqlite3.Connection) -> None:
    """Which agent CLI a backing session ran in and each episode came from (NULL: Claude Code; `codex`, `gemini`),
    so recall and `sessions` can name it; and when an agent CLI's own hooks first reported a run (`hooked_at`), so
    the fork path's read-back at exit leaves a run its hooks captured live alone. Codex and Gemini fork runs
    captured before this are named after their `source`, which already said which CLI it was.
    """
    run_script(
        db,
        """
        ALTER TABLE backing_sessions ADD COLUMN agent TEXT;
        ALTER TABLE backing_sessions ADD COLUMN hooked_at REAL;
        ALTER TABLE episodes ADD COLUMN agent TEXT;
        UPDATE backing_sessions SET agent = source WHERE source IN ('codex', 'gemini');
        UPDATE episodes SET agent = (SELECT b.agent FROM backing_sessions b WHERE b.id = episodes.backing_session_id)
            WHERE backing_session_id IN (SELECT id FROM backing_sessions WHERE agent IS NOT NULL);
        """,
    )


@migration
def m012_recall_filter_index(db: sqlite3.Connection) -> None:
    """The columns recall filters every BM25 match by (workspace, state, origin, backing session), in an index of
    their own, keyed on the episode id. Read from the table, `origin` and `backing_session_id` sit behind each row's
    text, and a common word's thousands of matches each walked their episode's overflow pages to reach them: at
    100k episodes a third of a query's time (`codeoid.store.context_index.search`).
    """
    run_script(
        db,
        """
        CREATE INDEX episodes_recall_filter ON episodes(id, workspace_id, state, origin, backing_session_id);
        """,
    )



@migration
def m013_session_titles(db: sqlite3.Connection) -> None:
    """A title for every session, from its first prompt the user typed (`codeoid.store.session_titles`): the sessions
    page and `codeoid sessions` showed hex ids only. Sessions stored before get theirs from the prompts they hold.
    """
    from codeoid.store.session_titles import refresh_titles

    if "title" not in {row[1] for row in db.execute("PRAGMA table_info(sessions)")}:
        db.execute("ALTER TABLE sessions ADD COLUMN title TEXT")
    refresh_titles(db)


@migration
def m014_command_as_typed(db: sqlite3.Connection) -> None:
    """The command the model typed is what an episode stores, indexes and shows; the rewrite's wrapper is kept apart.

    For a call the PreToolUse rewrite wrapped, `input` and `command` held codeoid's own wrapper script (~600
    characters whose words `filter`, `status`, `exit`, `return` matched everyday questions in BM25): now `command`
    and `input.command` hold what the model typed, and `wrapper` the script that ran (a fact about how the call ran,
    never indexed). `cut` says, in a sentence, where an episode's text is not the call's whole result (a failed
    command Claude Code cut to its first and last 5,000 characters; a persisted output past codeoid's read cap).
    `partly_shown` is 1 where the model's window held only part of the text (Claude Code showed a preview of a
    result it saved to a file): recall then finds it in its own window too. Existing rows are moved where the typed
    command is known (`original_command` differs from the wrapper): the
    update of `input` re-indexes them in FTS and the context index through their triggers.
    """
    columns = {row[1] for row in db.execute("PRAGMA table_info(episodes)")}
    if "wrapper" not in columns:
        db.execute("ALTER TABLE episodes ADD COLUMN wrapper TEXT")
    if "cut" not in columns:
        db.execute("ALTER TABLE episodes ADD COLUMN cut TEXT")
    if "partly_shown" not in columns:
        db.execute("ALTER TABLE episodes ADD COLUMN partly_shown INTEGER")
    db.execute(
        """UPDATE episodes SET wrapper = command, command = original_command,
               input = CASE WHEN json_valid(input) AND json_type(input, '$.command') = 'text'
                            THEN json_set(input, '$.command', original_command) ELSE input END
           WHERE kind = 'tool' AND tool_name = 'Bash' AND original_command IS NOT NULL AND command IS NOT NULL
             AND command != original_command AND instr(command, '__codeoid_') > 0 AND wrapper IS NULL"""
    )


@migration
def m015_turn_and_time_indexes(db: sqlite3.Connection) -> None:
    """Episodes by session and turn, and by time: recall ranks a turn of work as a unit (`codeoid.memory.turns`) and
    reads the episodes of each candidate's turn, which the session index alone finds only by walking the whole
    session; and it resolves "yesterday afternoon" to the episodes of that span (`codeoid.memory.when`), which
    without an index on time means reading every episode of the workspace."""
    run_script(db, """
        CREATE INDEX IF NOT EXISTS episodes_turn ON episodes(session_id, turn, id);
        CREATE INDEX IF NOT EXISTS episodes_time ON episodes(workspace_id, created_at);
    """)


@migration
def m016_raw_output_words(db: sqlite3.Connection) -> None:
    """The words compression cut from a Bash output, searchable (`codeoid.store.context_index`): `raw_context` holds
    one row per episode with a raw output, rowid = episode id, of the raw lines its text does not hold (within the
    first `raw.SEARCHED_BYTES`). `raw_context_progress` is how far episodes are in it: 0 here, so the raw outputs
    already stored are indexed by the next catch-ups, a few at a time, never in this transaction (it may be a
    hook's)."""
    run_script(
        db,
        """
        CREATE VIRTUAL TABLE IF NOT EXISTS raw_context USING fts5(raw, tokenize='porter unicode61');
        CREATE TABLE IF NOT EXISTS raw_context_progress (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            indexed_upto INTEGER NOT NULL
        );
        INSERT OR IGNORE INTO raw_context_progress VALUES (1, 0);
        """,
    )


def migrate(db: sqlite3.Connection, upto: str | None = None) -> list[str]:
    """Apply every migration not yet recorded (stopping after `upto` if given); return the names applied."""
    if _is_current(db, upto):
        return []
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
        applied = []
        for fn in MIGRATIONS:
            if fn.__name__ not in done:
                fn(db)
                db.execute("INSERT INTO _migrations VALUES (?, ?)", (fn.__name__, time.time()))
                applied.append(fn.__name__)
            if fn.__name__ == upto:
                break
        db.execute(f"PRAGMA user_version = {len(done) + len(applied)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return applied


def _is_current(db: sqlite3.Connection, upto: str | None) -> bool:
    """Cheap check on every open: `user_version` counts the applied migrations."""
    wanted = len(MIGRATIONS) if upto is None else [fn.__name__ for fn in MIGRATIONS].index(upto) + 1
    version: int = db.execute("PRAGMA user_version").fetchone()[0]
    return version >= wanted


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Run a multi-statement script inside the open transaction (`executescript` would commit first)."""
    for statement in _split_statements(script):
        db.execute(statement)


def _split_statements(script: str) -> list[str]:
    """Split a script on statement boundaries, keeping trigger bodies whole (`sqlite3.complete_statement`)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending)
            pending = ""
    if pending.strip():
        statements.append(pending)
    return statements
