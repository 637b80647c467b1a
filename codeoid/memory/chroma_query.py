"""The nearest chunks to a query vector over Chroma's REST API (v2), with the standard library's HTTP client.

A query needs two requests (the collection by name, then its nearest neighbours) and no client library: the
chromadb package takes most of a second to import (about 3 s on a busy 2-core machine), which a one-shot
`codeoid search` would pay on every call. Writes, deletes and collection creation still go through chromadb
(`codeoid.memory.vector_index`), where the long-lived indexer pays that import once.

The collection records which embedding function made its vectors; the query is embedded by the same one
(`embedding.embedder_from_config`), or refused with the reason when this installation does not have it.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from codeoid.memory.embedding import Embedder, EmbeddingModelError, embedder_from_config

API = "/api/v2/tenants/default_tenant/databases/default_database"
TIMEOUT_SECONDS = 10.0
EMBEDDING_FUNCTION = "codeoid"  # the name `chroma_embedding.CodeoidEmbeddingFunction` registers


class ChromaUnreachable(OSError):
    """No answer from the server, or one that is not Chroma's: the caller may restart it and retry."""


@dataclass(frozen=True)
class Collection:
    id: str
    embedder: Embedder


@dataclass(frozen=True)
class Neighbour:
    metadata: Mapping[str, object]
    document: str
    distance: float


def open_collection(url: str, name: str) -> Collection | None:
    """The collection called `name` and the embedder its vectors came from; None when it does not exist."""
    status, body = _request(url, "GET", f"{API}/collections/{urllib.parse.quote(name, safe='')}")
    if status == 404:
        return None
    _check(status, body)
    assert isinstance(body, dict)
    configuration = body.get("configuration_json") or {}
    function = configuration.get("embedding_function") if isinstance(configuration, dict) else None
    if not isinstance(function, dict) or function.get("name") != EMBEDDING_FUNCTION:
        found = function.get("name") if isinstance(function, dict) else None
        raise EmbeddingModelError(f"the collection {name} was not made by codeoid's embedder (its embedding "
                                  f"function is {found!r}); rebuild it with `codeoid reindex`")
    config = function.get("config") or {}
    return Collection(str(body["id"]), embedder_from_config(str(config.get("embedder")),
                                                            dict(config.get("settings") or {})))


def nearest(url: str, collection: Collection, vector: list[float], n: int) -> list[Neighbour] | None:
    """The `n` chunks nearest to `vector`, nearest first; None when the collection is gone (deleted since opened)."""
    status, body = _request(url, "POST", f"{API}/collections/{collection.id}/query", {
        "query_embeddings": [vector], "n_results": n, "include": ["documents", "metadatas", "distances"]})
    if status == 404:
        return None
    _check(status, body)
    assert isinstance(body, dict)
    metadatas = (body.get("metadatas") or [[]])[0] or []
    documents = (body.get("documents") or [[]])[0] or []
    distances = (body.get("distances") or [[]])[0] or []
    return [Neighbour(metadata or {}, document or "", float(distance))
            for metadata, document, distance in zip(metadatas, documents, distances, strict=True)]


def _check(status: int, body: object) -> None:
    if status != 200 or not isinstance(body, dict):
        message = body.get("message") if isinstance(body, dict) else body
        raise ChromaUnreachable(f"Chroma answered HTTP {status}: {message}")


def _request(url: str, method: str, path: str, payload: object = None) -> tuple[int, object]:
    """One request to the server at `url`, straight to it (never through a proxy named in the environment)."""
    parts = urllib.parse.urlsplit(url)
    secure = parts.scheme == "https"
    connection_type = http.client.HTTPSConnection if secure else http.client.HTTPConnection
    connection = connection_type(parts.hostname or "127.0.0.1", parts.port or (443 if secure else 80),
                                 timeout=TIMEOUT_SECONDS)
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
