"""Draw counts are bounded by the population before anything is drawn (issue 44 item 12): ``known-item --sample
10**12`` and ``goldset plan --documents 10**9`` ended in ``MemoryError`` tracebacks."""

from __future__ import annotations

import pytest
from conftest import write_tiny_corpus
from test_known_item import KW, write_corpus
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.studies.known_item import chunk_corpus
from harness.studies.known_item.sample import bound_draws


def _one_line(r) -> str:
    lines = [x for x in r.output.splitlines() if x.strip() and not x.startswith("known-item: ")]
    assert len(lines) == 1 and "Traceback" not in r.output and "MemoryError" not in r.output, r.output
    return lines[0]


def test_known_item_sample_beyond_the_documents_is_refused_on_one_line(tmp_path):
    corpus = write_corpus(tmp_path / "c")
    out = tmp_path / "o"
    args = ["-q", "known-item", "--corpus", str(corpus), "--out", str(out), "--chunk-words", "50", "--query-words", "3",
            "--workers", "1", "--sample", str(10**12)]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2
    assert _one_line(r) == ("error: --sample 1,000,000,000,000: more draws than the 5 documents with queries; draw at "
                            "most 5, or search them all (without --sample: the census, no sampling error)")  # fmt: skip
    assert not out.exists()
    r = CliRunner().invoke(app, [*args[:-1], str(10**12), "--design", "srs"])
    assert r.exit_code == 2 and "only 5 documents have queries (srs draws without replacement)" in _one_line(r)


def test_goldset_plan_documents_beyond_the_population_are_refused_on_one_line(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    out = tmp_path / "plan"
    args = ["goldset", "plan", "--corpus", str(corpus), "--out", str(out), "--chunk-words", "5", "--query-words", "2"]
    r = CliRunner().invoke(app, [*args, "--documents", str(10**9)])
    assert r.exit_code == 2
    line = _one_line(r)
    assert line.startswith("error: --documents 1,000,000,000: more draws than the ") and "chunk-queries" in line
    assert not out.exists()
    r = CliRunner().invoke(app, [*args, "--documents", str(10**9), "--design", "srs"])
    assert r.exit_code == 2 and "--documents 1,000,000,000: only 4 documents have queries" in _one_line(r)


def test_the_bounds_themselves(tmp_path):
    cc = chunk_corpus(write_corpus(tmp_path / "c"), **KW)  # 5 documents with queries, 10 chunk-queries
    for k in (2, 5):
        bound_draws(cc, k, "pps", field="--sample", per_document=True)
        bound_draws(cc, k, "srs", field="--sample", per_document=True)
    bound_draws(cc, 10, "pps", field="--documents", per_document=False)  # a plan may draw a document twice
    with pytest.raises(HarnessInputError, match=r"^--sample 6: more draws than the 5 documents"):
        bound_draws(cc, 6, "pps", field="--sample", per_document=True)
    with pytest.raises(HarnessInputError, match=r"^--documents 11: more draws than the 10 chunk-queries"):
        bound_draws(cc, 11, "pps", field="--documents", per_document=False)
    with pytest.raises(HarnessInputError, match=r"^--documents 6: only 5 documents have queries"):
        bound_draws(cc, 6, "srs", field="--documents", per_document=False)
    with pytest.raises(HarnessInputError, match=r"^--design 'quota'"):
        bound_draws(cc, 3, "quota", field="--sample", per_document=True)
