"""codeoid's embedders as a Chroma embedding function, registered so a collection reopens with its model.

Chroma stores a collection's embedding function by name and config; a chromadb client in another process
rebuilds it through `chromadb.utils.embedding_functions.known_embedding_functions`. codeoid itself talks to
Chroma without chromadb (`codeoid.memory.chroma_rest`, which writes the same config); this module is for a
chromadb client of the same collections (a script, a notebook, a teammate's tools against a shared server):
importing it registers `codeoid`, so that client gets back exactly the embedder the vectors were made with, or
a clear error if it does not have it: a query embedded by another model would return confident nonsense.
"""

from __future__ import annotations

from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from codeoid.memory.chroma_rest import EMBEDDING_FUNCTION, embedding_function_config
from codeoid.memory.embedding import Embedder, default_embedder, embedder_from_config


@register_embedding_function
class CodeoidEmbeddingFunction(EmbeddingFunction[Documents]):
    """Adapts any `codeoid.memory.embedding.Embedder` to Chroma; the default is the bundled MiniLM model."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder or default_embedder()

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return EMBEDDING_FUNCTION

    def get_config(self) -> dict[str, Any]:
        return embedding_function_config(self.embedder)

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> CodeoidEmbeddingFunction:
        return CodeoidEmbeddingFunction(embedder_from_config(config["embedder"], config.get("settings", {})))

    def default_space(self) -> Space:
        # The vectors are unit length, and cosine is what the model was trained for.
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        if old_config.get("embedder") != new_config.get("embedder"):
            raise ValueError("a collection's embedder cannot change: its vectors would mix two spaces")
