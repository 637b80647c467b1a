"""Chroma's REST API (v2) with the standard library's HTTP client: what codeoid does with a collection.

A collection is opened or created by name, then read, written and queried by its id: upsert, get, delete, count
and the nearest chunks to a vector. No client library: the chromadb package takes most of a second to import
(about 3 s on a busy 2-core machine), which a one-shot `codeoid search` would pay on every call, and it holds
~60 MB in the long-lived memory service (grpc, protobuf, opentelemetry, the rust bindings) for a handful of
JSON requests. The `chroma` executable it ships is still what serves them (`codeoid.memory.chroma_server`).

A collection records which embedding function made its vectors, in the JSON chromadb's own client writes
(`{"type": "known", "name": "codeoid", "config": ...}`), so a bare chromadb client rebuilds the same embedder
through `codeoid.memory.chroma_embedding`; a query is embedded by that embedder (`embedding.embedder_from_config`),
or refused with the reason when this installation does not have it.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codeoid.memory.embedding import Embedder, EmbeddingModelError, embedder_from_config

API = "/api/v2/tenants/default_tenant/databases/default_database"
TIMEOUT_SECONDS = 10.0
WRITE_TIMEOUT_SECONDS = 60.0  # an upsert of a batch makes the server write its log and index
EMBEDDING_FUNCTION = "codeoid"  # the name `chroma_embedding.CodeoidEmbeddingFunction` registers
Metadata = Mapping[str, str | int | float | bool]


class ChromaUnreachable(OSError):
    """No answer from the server, or one that is not Chroma's: the caller may restart it and retry."""


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


def open_collection(url: str, name: str) -> Collection | None:
    """The collection called `name` and the embedder its vectors came from; None when it does not exist."""
    status, body = _request(url, "GET", f"{API}/collections/{urllib.parse.quote(name, safe='')}")
    if status == 404:
        return None
    return _collection(name, _object(status, body))


def create_collection(url: str, name: str, embedder: Embedder, metadata: Metadata) -> Collection:
    """The collection called `name`, created for `embedder`'s vectors (cosine space) if it does not exist yet."""
    configuration = {"hnsw": {"space": "cosine"}, "spann": None, "embedding_function": {
        "name": EMBEDDING_FUNCTION, "type": "known", "config": embedding_function_config(embedder)}}
    status, body = _request(url, "POST", f"{API}/collections", {
        "name": name, "configuration": configuration, "metadata": dict(metadata), "get_or_create": True})
    return _collection(name, _object(status, body))


def delete_collection(url: str, name: str) -> None:
    """Delete the collection called `name`, if there is one."""
    status, body = _request(url, "DELETE", f"{API}/collections/{urllib.parse.quote(name, safe='')}")
    if status != 404:
        _object(status, body if body is not None else {})


def upsert(url: str, collection: Collection, ids: Sequence[str], embeddings: Sequence[Sequence[float]],
           documents: Sequence[str], metadatas: Sequence[Metadata]) -> None:
    """Add the records, replacing any with the same ids."""
    _on(url, collection, "upsert", {"ids": list(ids), "embeddings": [list(map(float, vector)) for vector in embeddings],
                                    "documents": list(documents), "metadatas": [dict(meta) for meta in metadatas]},
        timeout=WRITE_TIMEOUT_SECONDS)


def get(url: str, collection: Collection, ids: Sequence[str], include: Sequence[str]) -> dict[str, Any]:
    """The records with these ids that exist: `{"ids": [...], "<include>": [...]}`, in the same order."""
    return _object(*_on(url, collection, "get", {"ids": list(ids), "include": list(include)}))


def delete(url: str, collection: Collection, where: Mapping[str, object]) -> None:
    """Delete the records whose metadata match `where` (Chroma's filter syntax)."""
    _on(url, collection, "delete", {"where": dict(where)}, timeout=WRITE_TIMEOUT_SECONDS)


def count(url: str, collection: Collection) -> int:
    status, body = _on(url, collection, "count", None, method="GET")
    if status != 200 or not isinstance(body, int):
        raise ChromaUnreachable(f"Chroma answered HTTP {status} to a count: {body!r}")
    return body


def nearest(url: str, collection: Collection, vector: Sequence[float], n: int) -> list[Neighbour]:
    """The `n` chunks nearest to `vector`, nearest first."""
    body = _object(*_on(url, collection, "query", {
        "query_embeddings": [list(vector)], "n_results": n, "include": ["documents", "metadatas", "distances"]}))
    metadatas = (body.get("metadatas") or [[]])[0] or []
    documents = (body.get("documents") or [[]])[0] or []
    distances = (body.get("distances") or [[]])[0] or []
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


def _on(url: str, collection: Collection, operation: str, payload: object, *, method: str = "POST",
        timeout: float = TIMEOUT_SECONDS) -> tuple[int, object]:
    """`operation` on the collection by id; `CollectionGone` when it no longer exists."""
    status, body = _request(url, method, f"{API}/collections/{collection.id}/{operation}", payload, timeout=timeout)
    if status == 404:
        raise CollectionGone(f"the collection {collection.id} is gone")
    return status, body


def _object(status: int, body: object) -> dict[str, Any]:
    """The JSON object of a successful answer; anything else is the server failing (the caller may retry)."""
    if status != 200 or not isinstance(body, dict):
        message = body.get("message") if isinstance(body, dict) else body
        raise ChromaUnreachable(f"Chroma answered HTTP {status}: {message}")
    return body


def _request(url: str, method: str, path: str, payload: object = None, *,
             timeout: float = TIMEOUT_SECONDS) -> tuple[int, object]:
    """One request to the server at `url`, straight to it (never through a proxy named in the environment)."""
    parts = urllib.parse.urlsplit(url)
    secure = parts.scheme == "https"
    connection_type = http.client.HTTPSConnection if secure else http.client.HTTPConnection
    connection = connection_type(parts.hostname or "127.0.0.1", parts.port or (443 if secure else 80),
                                 timeout=timeout)
    body = json.dumps(payload).encode() if payload is not None else None
    try:
        connection.request(method, parts.path.rstrip("/") + path, body=body,
                           headers={"Content-Type": "application/json", "Accept": "application/json"})
        response = connection.getresponse()
        data = response.read()
    except (OSError, http.client.HTTPException) as error:
        raise ChromaUnreachable(str(error) or type(error).__name__) from error
    finally:
        connection.close()
    try:
        return response.status, json.loads(data) if data else None
    except ValueError as error:
        raise ChromaUnreachable(f"Chroma's answer is not JSON (HTTP {response.status})") from error
