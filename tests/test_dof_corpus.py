"""The DOF-scale corpus generator (benchmarks/dof_corpus.py, issue 34) at a small size: the real documents inside it
verbatim, the real gold set re-declared on it validates, the chunk target is met, and the output is deterministic."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from conftest import REAL_CORPUS

from harness.corpus.chunker import get_chunker
from harness.validate.core import validate

pytestmark = [pytest.mark.slow, pytest.mark.realcorpus]

REPO = Path(__file__).resolve().parent.parent


def _generator():
    sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("dof_corpus", REPO / "benchmarks" / "dof_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != "generation.json":
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    if not (REAL_CORPUS / "metadata.jsonl").exists():
        pytest.skip("real corpus not available")
    gen = _generator()
    root = tmp_path_factory.mktemp("dof")
    real_chunks = 91_960
    stats = gen.generate(root / "corpus", n_docs=507 + 300, target_chunks=real_chunks + 3_000, seed=0, real=REAL_CORPUS)
    return gen, root, stats


def test_real_documents_are_inside_verbatim_and_the_gold_set_validates(small):
    _gen, root, stats = small
    corpus = root / "corpus"
    meta = [json.loads(line) for line in (corpus / "metadata.jsonl").read_text("utf-8").splitlines()]
    real = [json.loads(line) for line in (REAL_CORPUS / "metadata.jsonl").read_text("utf-8").splitlines()]
    assert len(meta) == stats["n_documents"] == 807 and meta[: len(real)] == real
    for rec in real[:20]:
        assert (corpus / rec["path"]).read_bytes() == (REAL_CORPUS / rec["path"]).read_bytes()
    report = validate(root / "goldset", corpus)
    assert report.exit_code == 0 and report.status != "fail", report.to_dict()  # V001-V005 quotes, ids, corpus


def test_the_chunk_target_is_met_to_within_a_few_chunks(small):
    """The first full-size corpus missed DOF's count by 3.3 % (length calibration on a sample only); lengths are now
    steered by the chunks actually written, so the target is met to within a few chunks."""
    _gen, root, stats = small
    chunker = get_chunker("md-words-v1")
    corpus = root / "corpus"
    meta = [json.loads(line) for line in (corpus / "metadata.jsonl").read_text("utf-8").splitlines()]
    syn = [m for m in meta if m["collection"] == "dof_synthetic"]
    n = sum(len(chunker.chunk(m["doc_id"], (corpus / m["path"]).read_text("utf-8"))) for m in syn)
    assert n == stats["synthetic_chunks"] and stats["chunks"] == stats["real_chunks"] + n
    assert abs(n - 3_000) <= 15, n  # 0.5 % of the synthetic part


def test_the_same_seed_writes_the_same_bytes(small, tmp_path):
    gen, root, _stats = small
    gen.generate(tmp_path / "corpus", n_docs=507 + 300, target_chunks=91_960 + 3_000, seed=0, real=REAL_CORPUS)
    assert _digest(tmp_path / "corpus") == _digest(root / "corpus")
