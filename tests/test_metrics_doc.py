"""``docs/metrics.md`` is written from the metric registry (issue 31 item 2): every family documented, the page
current."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REPO

from harness import metrics
from harness.metrics import METRICS
from harness.metrics.catalog import DOCS, missing, render


def test_every_registry_family_is_documented_and_nothing_else():
    assert missing() == []
    assert set(DOCS) == set(METRICS)
    for key, d in DOCS.items():
        for field in ("formula", "alternatives", "no_gold", "trec_eval", "ir_measures", "ranx", "difference"):
            assert getattr(d, field).strip(), (key, field)


def test_docs_metrics_md_is_current():
    """Fails when the page is stale: rewrite it with `python -m harness.metrics.catalog docs/metrics.md`."""
    page = (REPO / "docs" / "metrics.md").read_text("utf-8")
    assert page == render()
    for f in METRICS.values():
        assert f"## `{f.name}" in page, f.key


def test_a_new_family_without_documentation_fails(monkeypatch):
    fam = replace(METRICS["mrr"], name="new_metric")
    monkeypatch.setitem(metrics.METRICS, "new_metric", fam)
    assert missing() == ["new_metric"]
    with pytest.raises(KeyError, match="new_metric"):
        render()
