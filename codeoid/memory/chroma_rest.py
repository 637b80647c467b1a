"""Chroma's REST API (v2) with the standard library's HTTP client: what codeoid does with a collection.

A collection is opened or created by name, then read, written and queried by its id: upsert, get, delete, count
and the nearest chunks to a vector. No client library: the chromadb package takes most of a second to import
(about 3 s on a busy 2-core machine), which a one-shot `codeoid search` would pay on every call, and it holds
~60 MB in the long-lived memory service (grpc, protobuf, opentelemetry, the rust bindings) for a handful of
JSON requests. Chroma's engine still serves them: codeoid's own local server (`codeoid.memory.chroma_serve`) or a
team's Chroma.

A collection records which embedding function made its vectors, in the JSON chromadb's own client writes
(`{"type": "known", "name": "codeoid", "config": ...}`), so a bare chromadb client rebuilds the same embedder
through `codeoid.memory.chroma_embedding`; a query is embedded by that embedder (`embedding.embedder_from_config`),
or refused with the reason when this installation does not have it.

Every request goes to an `Endpoint` (a URL and its token, `codeoid.memory.chroma_http`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codeoid.memory.chroma_http import (
    TIMEOUT_SECONDS,
    ChromaRefused,
    ChromaUnreachable,
    Endpoint,
    heartbeat,
    request,
)
from codeoid.memory.embedding import Embedder, EmbeddingModelError, embedder_from_config

__all__ = ["ChromaRefused", "ChromaUnreachable", "CollectionGone", "Endpoint", "heartbeat"]

API = "/api/v2/tenants/default_tenant/databases/default_database"
WRITE_TIMEOUT_SECONDS = 60.0  # an upsert of a batch makes the server write its log and index
EMBEDDING_FUNCTION = "codeoid"  # the name `chroma_embedding.CodeoidEmbeddingFunction` registers
Metadata = Mapping[str, str | int | float | bool]


class CollectionGone(ChromaUnreachable):
    """The collection was deleted (or replaced) since it was opened: open it again by name."""


@dataclass(frozen=True)
class Collection:
    id: str
    embedder: Embedder


@dataclass(frozen=True)
class Neighbour:
    metadata: Mapping[str, object]
    document: str
    distance: float


def embedding_function_config(embedder: Embedder) -> dict[str, Any]:
    """What a collection records about the embedder of its vectors (also `CodeoidEmbeddingFunction.get_config`)."""
    return {"embedder": embedder.name, "dimension": embedder.dimension, "settings": embedder.config()}


def open_collection(endpoint: Endpoint, name: str) -> Collection | None:
    """The collection called `name` and the embedder its vectors came from; None when it does not exist."""
    status, body = request(endpoint, "GET", f"{API}/collections/{urllib.parse.quote(name, safe='')}")
    if status == 404:
        return None
    return _collection(name, _object(status, body))


def create_collection(endpoint: Endpoint, name: str, embedder: Embedder, metadata: Metadata) -> Collection:
    """The collection called `name`, created for `embedder`'s vectors (cosine space) if it does not exist yet."""
    configuration = {"hnsw": {"space": "cosine"}, "spann": None, "embedding_function": {
        "name": EMBEDDING_FUNCTION, "type": "known", "config": embedding_function_config(embedder)}}
    status, body = request(endpoint, "POST", f"{API}/collections", {
        "name": name, "configuration": configuration, "metadata": dict(metadata), "get_or_create": True})
    return _collection(name, _object(status, body))


def delete_collection(endpoint: Endpoint, name: str) -> None:
    """Delete the collection called `name`, if there is one."""
    status, body = request(endpoint, "DELETE", f"{API}/collections/{urllib.parse.quote(name, safe='')}")
    if status != 404:
        _object(status, body if body is not None else {})


def upsert(endpoint: Endpoint, collection: Collection, ids: Sequence[str], embeddings: Sequence[Sequence[float]],
           documents: Sequence[str] | None, metadatas: Sequence[Metadata]) -> None:
    """Add the records, replacing any with the same ids; `documents=None` stores no text at all."""
    payload: dict[str, Any] = {"ids": list(ids), "embeddings": [list(map(float, vector)) for vector in embeddings],
                               "metadatas": [dict(meta) for meta in metadatas]}
    if documents is not None:
        payload["documents"] = list(documents)
    _on(endpoint, collection, "upsert", payload, timeout=WRITE_TIMEOUT_SECONDS)


def get(endpoint: Endpoint, collection: Collection, ids: Sequence[str], include: Sequence[str]) -> dict[str, Any]:
    """The records with these ids that exist: `{"ids": [...], "<include>": [...]}`, in the same order."""
    return _object(*_on(endpoint, collection, "get", {"ids": list(ids), "include": list(include)}))


def get_page(endpoint: Endpoint, collection: Collection, *, offset: int, limit: int, include: Sequence[str]
             ) -> dict[str, Any]:
    """Up to `limit` records from `offset` on, in the collection's own order (for copying one out whole)."""
    return _object(*_on(endpoint, collection, "get", {"offset": offset, "limit": limit, "include": list(include)},
                        timeout=WRITE_TIMEOUT_SECONDS))


def delete(endpoint: Endpoint, collection: Collection, where: Mapping[str, object]) -> None:
    """Delete the records whose metadata match `where` (Chroma's filter syntax)."""
    _on(endpoint, collection, "delete", {"where": dict(where)}, timeout=WRITE_TIMEOUT_SECONDS)


def count(endpoint: Endpoint, collection: Collection) -> int:
    status, body = _on(endpoint, collection, "count", None, method="GET")
    if status != 200 or not isinstance(body, int):
        raise ChromaUnreachable(f"Chroma answered HTTP {status} to a count: {body!r}")
    return body


def nearest(endpoint: Endpoint, collection: Collection, vector: Sequence[float], n: int,
            where: Mapping[str, object] | None = None) -> list[Neighbour]:
    """The `n` chunks nearest to `vector` (among those whose metadata match `where`), nearest first."""
    payload: dict[str, Any] = {"query_embeddings": [list(vector)], "n_results": n,
                               "include": ["documents", "metadatas", "distances"]}
    if where is not None:
        payload["where"] = dict(where)
    body = _object(*_on(endpoint, collection, "query", payload))
    metadatas = (body.get("metadatas") or [[]])[0] or []
    distances = (body.get("distances") or [[]])[0] or []
    documents = (body.get("documents") or [[]])[0] or [None] * len(metadatas)  # a collection that keeps no text
    return [Neighbour(metadata or {}, document or "", float(distance))
            for metadata, document, distance in zip(metadatas, documents, distances, strict=True)]


def _collection(name: str, body: dict[str, Any]) -> Collection:
    configuration = body.get("configuration_json") or {}
    function = configuration.get("embedding_function") if isinstance(configuration, dict) else None
    if not isinstance(function, dict) or function.get("name") != EMBEDDING_FUNCTION:
        found = function.get("name") if isinstance(function, dict) else None
        raise EmbeddingModelError(f"the collection {name} was not made by codeoid's embedder (its embedding "
                                  f"function is {found!r}); rebuild it with `codeoid reindex`")
    config = function.get("config") or {}
    return Collection(str(body["id"]), embedder_from_config(str(config.get("embedder")),
                                                            dict(config.get("settings") or {})))


def _on(endpoint: Endpoint, collection: Collection, operation: str, payload: object, *, method: str = "POST",
        timeout: float = TIMEOUT_SECONDS) -> tuple[int, object]:
    """`operation` on the collection by id; `CollectionGone` when it no longer exists."""
    status, body = request(endpoint, method, f"{API}/collections/{collection.id}/{operation}", payload, timeout=timeout)
    if status == 404:
        raise CollectionGone(f"the collection {collection.id} is gone")
    return status, body


def _object(status: int, body: object) -> dict[str, Any]:
    """The JSON object of a successful answer; anything else is the server failing (the caller may retry)."""
    if status != 200 or not isinstance(body, dict):
        message = body.get("message") if isinstance(body, dict) else body
        raise ChromaUnreachable(f"Chroma answered HTTP {status}: {message}")
    return body


def vacuum(endpoint: Endpoint) -> tuple[int, int]:
    """Have codeoid's own server (`codeoid.memory.chroma_serve`) rewrite its SQLite file so no deleted row's bytes
    stay behind: (bytes before, bytes after). A team's Chroma has no such endpoint (ChromaUnreachable)."""
    body = _object(*request(endpoint, "POST", "/codeoid/v1/vacuum", {}, timeout=WRITE_TIMEOUT_SECONDS * 5))
    return int(body["bytes_before"]), int(body["bytes_after"])
