"""Episode chunks in Chroma, one collection per workspace, for the indexer to fill and retrieval to query.

Every process reaches Chroma over HTTP (`codeoid.memory.chroma_server` says why): the local server, started on demand,
or the team server `CODEOID_CHROMA_URL` names. A collection is keyed by the workspace's portable id (the
normalized git remote URL), so teammates' clones share one.

Where the text lives. On a team's server the documents hold the chunk text, so a hit from someone else's session
reads as text even though their store is not here (collections `codeoid-v2-*`). The local server keeps no text
at all, only vectors and metadata (`codeoid-v3-*`): this store has every chunk's text already, and text Chroma
never held is text a `codeoid forget` cannot leave behind in Chroma's own files (its SQLite log and full-text
index keep a deleted row's bytes). A local collection an older codeoid filled with text is moved into one without
it, the first time this version opens it: saved to a file, dropped, Chroma's file vacuumed, and written again by a
server process that never read the text.

Episode ids belong to one store (one machine's data dir), so every chunk also names its store: ids are
`<store id>:<episode id>:<chunk number>` and the metadata carries `store`. On a team's server two machines'
episode 123 never overwrite each other, and a hit from another store is never read as a local episode.
Adding the same chunks again replaces them instead of duplicating them: an indexer killed mid-batch simply
redoes the batch.

When Chroma cannot be reached every call raises `VectorIndexUnavailable`, which retrieval turns into a BM25-only
answer that says so. A local server that stopped while idle is restarted once before giving up.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from codeoid import paths
from codeoid.log import log
from codeoid.memory import chroma_rest, chroma_server
from codeoid.memory.chroma_rest import Endpoint
from codeoid.memory.embedding import EmbeddingModelError

MetadataValue = str | int | float | bool
T = TypeVar("T")


class VectorIndexUnavailable(RuntimeError):
    """Chroma cannot be reached (or started); semantic candidates are missing from this answer."""


# The `source` of a chunk of the lines compression cut from a raw output (numbered as the raw output is): such chunks
# rank nothing, they choose which cut lines a hit shows.
CUT_SOURCE = "raw"


@dataclass(frozen=True)
class Chunk:
    """A piece of one episode's text small enough to embed whole (see `Embedder.max_tokens`)."""

    episode_id: int
    number: int  # 0-based position within the episode
    start_line: int  # 1-based, inclusive: the lines of the episode text this chunk holds
    end_line: int
    text: str
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)  # e.g. session, kind, created_at

    @property
    def cut(self) -> bool:
        """Of the lines compression cut (`CUT_SOURCE`), not of the episode's text."""
        return self.metadata.get("source") == CUT_SOURCE


@dataclass(frozen=True)
class Hit:
    store: str  # the store the episode lives in: this machine's, or a teammate's on a shared server
    episode_id: int
    chunk: int
    start_line: int
    end_line: int
    distance: float  # cosine distance: 0 is the same direction, 2 the opposite
    document: str
    metadata: Mapping[str, MetadataValue]

    @property
    def cut(self) -> bool:
        """Of the lines compression cut (`CUT_SOURCE`), not of the episode's text."""
        return self.metadata.get("source") == CUT_SOURCE


def _hit(stored: Mapping[str, object], document: str | None, distance: float) -> Hit:
    metadata = {key: value for key, value in stored.items() if isinstance(value, str | int | float | bool)}
    return Hit(store=str(metadata.get("store", "")), episode_id=int(metadata["episode_id"]),
               chunk=int(metadata["chunk"]), start_line=int(metadata["start_line"]),
               end_line=int(metadata["end_line"]), distance=float(distance), document=document or "",
               metadata=metadata)


def workspace_index_id(portable_id: str | None, key: str) -> str:
    """What a workspace's collection is keyed by: its remote URL, else (no remote, so nothing to share) its
    local key qualified by host, so two machines' `/home/me/project` never meet on a team server."""
    return portable_id or f"local:{socket.gethostname()}:{key}"


def collection_name(workspace: str, *, with_text: bool = True) -> str:
    """Chroma names allow only `[a-zA-Z0-9._-]` and 3-512 characters; the id itself goes in the metadata.

    `v2` is the store-qualified chunk layout with the chunk text (a team's server); `v3` the same without text (the
    local server); the collections before v2 keyed chunks by episode id alone."""
    return ("codeoid-v2-" if with_text else "codeoid-v3-") + _digest(workspace)


def legacy_collection_name(workspace: str) -> str:
    """Where codeoid kept a workspace's chunks before chunk ids named their store (migration m007)."""
    return "codeoid-" + _digest(workspace)


def _digest(workspace: str) -> str:
    return hashlib.sha256(workspace.encode()).hexdigest()[:32]


class VectorIndex:
    """One store's view of every workspace's chunks, over Chroma's REST API (`chroma_rest`), reconnecting when the
    server has moved on: it writes and deletes only its own store's chunks, and its hits say whose they are."""

    def __init__(self, *, store: str, url: str | None = None, token: str | None = None) -> None:
        """`store` is this store's id (`codeoid.store.identity.store_id`); `url` (and `token`) pin one server
        (tests, benchmarks); by default it is `CODEOID_CHROMA_URL` with its token, or the local server."""
        self.store = store
        self._pinned = Endpoint(url, token) if url else None
        self._collections: dict[str, chroma_rest.Collection] = {}  # by collection name
        self._collections_lock = threading.Lock()  # the indexer thread and a recall may open one together

    def add_chunks(self, workspace: str, chunks: Sequence[Chunk]) -> list[Sequence[float]]:
        """Embed and store `chunks`; chunks already there (same episode and number) are replaced. Returns the
        embeddings (the indexer keeps the corpus statistics recall standardises cosines with).

        An episode re-chunked into fewer pieces keeps its old tail: call `delete_episode` first.
        """
        if not chunks:
            return []
        embeddings = self.embed([chunk.text for chunk in chunks])
        self._with_collection(workspace, lambda target, collection: chroma_rest.upsert(
            target, collection,
            ids=[self._chunk_id(chunk.episode_id, chunk.number) for chunk in chunks],
            embeddings=embeddings,
            documents=[chunk.text for chunk in chunks] if keeps_text(target) else None,
            metadatas=[{**chunk.metadata, "store": self.store, "episode_id": chunk.episode_id,
                        "chunk": chunk.number, "start_line": chunk.start_line, "end_line": chunk.end_line}
                       for chunk in chunks],
        ), create=True)
        return embeddings

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """`texts` embedded by the model every collection of this index is made with (recall standardises the
        query's cosines with it before asking for the nearest chunks)."""
        from codeoid.memory.embedding import default_embedder

        return [list(map(float, vector)) for vector in default_embedder().embed(list(texts))]

    def query(self, text: str, workspace: str, n: int = 10, *, embedding: Sequence[float] | None = None
              ) -> list[Hit]:
        """The `n` chunks of `workspace` nearest to `text` (or to its `embedding`, when the caller has it),
        nearest first (empty for an unknown workspace), of every store that shares the collection: `hit.store`
        tells this store's from a teammate's. The query is embedded by the embedder the collection records.
        `hit.document` is the chunk's text on a team's server, empty on the local one (the store has it).

        On a team's server this store's `n` nearest and the others' `n` nearest are asked apart (and merged by
        distance), so teammates' chunks never crowd this store's own out of its recall: with several stores
        writing to one collection, each store's own hits are the ones it would get alone. The others' are not
        asked at all with `CODEOID_SHARED_HITS=off`."""
        if n < 1:
            return []

        def nearest(target: Endpoint, collection: chroma_rest.Collection) -> list[Hit]:
            vector = list(embedding) if embedding is not None else collection.embedder.embed([text])[0].tolist()
            if not keeps_text(target):  # the local server holds this store's chunks alone
                found = chroma_rest.nearest(target, collection, vector, n)
            else:
                found = chroma_rest.nearest(target, collection, vector, n, where={"store": self.store})
                if chroma_server.shared_hits_wanted():
                    found += chroma_rest.nearest(target, collection, vector, n,
                                                 where={"store": {"$ne": self.store}})
                found.sort(key=lambda near: near.distance)
            return [_hit(near.metadata, near.document, near.distance) for near in found]

        try:
            return self._with_collection(workspace, nearest, create=False) or []
        except EmbeddingModelError as error:
            raise VectorIndexUnavailable(f"the vector index cannot be queried: {error}") from error

    def first_chunks(self, workspace: str, episode_ids: Sequence[int]) -> dict[int, tuple[Sequence[float], str]]:
        """The stored vector and text of each of this store's episodes' first chunk, by episode id (missing ones
        left out): what the workspace index clusters into topics, without embedding anything again. The text is
        empty where the collection keeps none (the local server's): the caller reads the store."""
        if not episode_ids:
            return {}

        def fetch(target: Endpoint, collection: chroma_rest.Collection) -> dict[int, tuple[Sequence[float], str]]:
            result = chroma_rest.get(target, collection,
                                     [self._chunk_id(episode_id, 0) for episode_id in episode_ids],
                                     include=["embeddings", "documents", "metadatas"])
            embeddings = result.get("embeddings") or []
            metadatas = result.get("metadatas") or []
            documents = result.get("documents") or [None] * len(metadatas)
            return {int(str(meta["episode_id"])): (vector, document or "")
                    for meta, vector, document in zip(metadatas, embeddings, documents, strict=True)}

        return self._with_collection(workspace, fetch, create=False) or {}

    def delete_episode(self, workspace: str, episode_id: int) -> None:
        """Remove every chunk of one of this store's episodes (retracted, or about to be re-chunked)."""
        where = {"$and": [{"store": self.store}, {"episode_id": episode_id}]}
        self._with_collection(workspace, lambda target, collection: chroma_rest.delete(target, collection, where),
                              create=False)

    def count(self, workspace: str) -> int:
        """Chunks in the workspace's collection, of every store that shares it."""
        return self._with_collection(workspace, chroma_rest.count, create=False) or 0

    def forget_store(self, workspace: str) -> None:
        """Delete this store's chunks of a workspace (a full reindex starts from nothing); a teammate's chunks in
        a shared collection stay."""
        self._with_collection(workspace, lambda target, collection: chroma_rest.delete(target, collection,
                                                                                       {"store": self.store}),
                              create=False)

    def endpoint(self) -> Endpoint:
        """The server this index talks to (the local one is started if need be): raises `VectorIndexUnavailable`."""
        try:
            return self._pinned or chroma_server.endpoint()
        except chroma_server.ChromaServerError as error:
            raise VectorIndexUnavailable(f"the vector index is unreachable: {error}") from error

    def where(self) -> str:
        """The server, named for a person: the team's URL, or the local server."""
        if self._pinned is not None:
            return self._pinned.url
        return chroma_server.remote_url() or "the local Chroma server"

    def vacuum(self) -> tuple[int, int] | None:
        """Have the local server rewrite Chroma's SQLite file so no deleted row's bytes remain: (bytes before,
        after); None on a team's server, which codeoid cannot vacuum."""
        target = self.endpoint()
        if keeps_text(target):
            return None
        try:
            return chroma_rest.vacuum(target)
        except chroma_rest.ChromaUnreachable as error:
            raise VectorIndexUnavailable(f"the vector index at {self.where()} could not be vacuumed: {error}") \
                from error

    def _chunk_id(self, episode_id: int, number: int) -> str:
        return f"{self.store}:{episode_id}:{number}"

    def _with_collection(self, workspace: str, operation: Callable[[Endpoint, chroma_rest.Collection], T], *,
                         create: bool) -> T | None:
        """Run `operation` on the workspace's collection; None when it does not exist and `create` is False.
        Tries twice: a server that stopped while idle is restarted, a collection deleted since it was opened is
        opened again, a token the server refused is read again; then gives up with `VectorIndexUnavailable`."""
        failure: Exception | None = None
        for _ in range(2):
            name = collection_name(workspace)
            try:
                target = self._pinned or chroma_server.endpoint()
                name = collection_name(workspace, with_text=keeps_text(target))
                if self._pinned is None and chroma_server.remote_url() is None:
                    chroma_server.touch_lease()
                collection = self._open(target, workspace, create)
                if collection is None:
                    return None
                return operation(target, collection)
            except (chroma_rest.ChromaUnreachable, chroma_server.ChromaServerError) as error:
                failure = error
                with self._collections_lock:
                    self._collections.pop(name, None)
        raise VectorIndexUnavailable(f"the vector index at {self.where()} is unreachable: {failure}") from failure

    def _open(self, target: Endpoint, workspace: str, create: bool) -> chroma_rest.Collection | None:
        with_text = keeps_text(target)
        name = collection_name(workspace, with_text=with_text)
        with self._collections_lock:
            found = self._collections.get(name)
        if found is not None:
            return found
        found = chroma_rest.open_collection(target, name)
        if found is None and not with_text:
            # This machine's own server: the collections of older codeoids are dead weight (before store-qualified
            # chunk ids), or hold text it no longer keeps (v2). A team server's are left, for teammates still on
            # an older codeoid.
            chroma_rest.delete_collection(target, legacy_collection_name(workspace))
            # None also when another client moved it meanwhile: the collection is then there to open.
            found = _without_text(target, workspace) or chroma_rest.open_collection(target, name)
        if found is None and create:
            from codeoid.memory.embedding import default_embedder

            found = chroma_rest.create_collection(target, name, default_embedder(), {"codeoid_workspace": workspace})
        if found is not None:
            with self._collections_lock:
                self._collections[name] = found
        return found


def keeps_text(target: Endpoint) -> bool:
    """Whether chunks sent to `target` carry their text: on a team's server (teammates read it), never on the local
    one (`codeoid.memory.chroma_serve`, a unix socket), whose store has it."""
    return not target.url.startswith("unix:")


COPY_PAGE = 500


def _without_text(target: Endpoint, workspace: str) -> chroma_rest.Collection | None:
    """The local collection an older codeoid filled with text (v2), moved into one without (v3). Its vectors and
    metadata are saved to a file of the data dir (`_moving_path`), the old collection dropped, Chroma's file
    vacuumed, and the server started again before the new collection is written: a Chroma process that read the
    old rows can leave pieces of their text in the index files it writes next (it writes them from memory it did
    not clear: `length.bin`, one run in three), and the new process never held them. The file is removed once the
    new collection holds every record; a move cut short resumes from it. None when there is nothing to move."""
    moving = _moving_path(workspace)
    with paths.Locked(moving + ".lock"):  # another thread or process may find the old collection at once
        old = chroma_rest.open_collection(target, collection_name(workspace))
        if old is None and not os.path.exists(moving):
            return None
        if old is not None:
            _save_records(target, old, moving)
            chroma_rest.delete_collection(target, collection_name(workspace))
        before, after = chroma_rest.vacuum(target)
        chroma_server.stop_server()
        target = chroma_server.endpoint()  # a new process, on the same socket with the same token
        from codeoid.memory.embedding import default_embedder

        new = chroma_rest.create_collection(target, collection_name(workspace, with_text=False), default_embedder(),
                                            {"codeoid_workspace": workspace})
        copied = _load_records(target, new, moving)
        os.remove(moving)
    log("vectors", f"{workspace}: {copied} chunks moved to a collection without text; Chroma's file vacuumed "
                   f"({before:,} -> {after:,} bytes) and its server started again")
    return new


def _moving_path(workspace: str) -> str:
    return os.path.join(chroma_server.state_dir(), f"moving-{_digest(workspace)}.jsonl")


def _save_records(target: Endpoint, collection: chroma_rest.Collection, path: str) -> None:
    """Every record's id, vector (float32, base64) and metadata, a page a line, written whole or not at all."""
    partial = path + ".part"
    with os.fdopen(paths.open_private(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as out:
        saved = 0
        while True:
            page = chroma_rest.get_page(target, collection, offset=saved, limit=COPY_PAGE,
                                        include=["embeddings", "metadatas"])
            ids = page.get("ids") or []
            if not ids:
                break
            vectors = [base64.b64encode(array("f", vector).tobytes()).decode("ascii")
                       for vector in page.get("embeddings") or []]
            out.write(json.dumps({"ids": ids, "vectors": vectors,
                                  "metadatas": page.get("metadatas") or [{} for _ in ids]}) + "\n")
            saved += len(ids)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


def _load_records(target: Endpoint, collection: chroma_rest.Collection, path: str) -> int:
    loaded = 0
    with open(path, encoding="utf-8") as saved:
        for line in saved:
            page = json.loads(line)
            vectors = [array("f", base64.b64decode(vector)).tolist() for vector in page["vectors"]]
            chroma_rest.upsert(target, collection, ids=page["ids"], embeddings=vectors, documents=None,
                               metadatas=page["metadatas"])
            loaded += len(page["ids"])
    return loaded
