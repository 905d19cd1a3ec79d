"""``docs/metrics.md`` is written from the metric registry (issue 31 item 2): every family documented, the page
current."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REPO

from harness.metrics import METRICS, MetricFamily
from harness.metrics.catalog import render


def test_every_registry_family_is_documented_and_has_an_outcome_class():
    for key, f in METRICS.items():
        assert f.outcome in ("binary", "unit", "continuous"), key
        for field in ("formula", "alternatives", "no_gold", "trec_eval", "ir_measures", "ranx", "difference"):
            assert getattr(f.doc, field).strip(), (key, field)


def test_docs_metrics_md_is_current():
    """Fails when the page is stale: rewrite it with `python -m harness.metrics.catalog docs/metrics.md`."""
    page = (REPO / "docs" / "metrics.md").read_text("utf-8")
    assert page == render()
    for f in METRICS.values():
        assert f"## `{f.name}" in page, f.key


def test_a_family_cannot_be_declared_without_its_outcome_class_and_documentation():
    mrr = METRICS["mrr"]
    with pytest.raises(TypeError, match="outcome"):
        MetricFamily("new_metric", "docs", mrr.compute, doc=mrr.doc)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="doc"):
        MetricFamily("new_metric", "docs", mrr.compute, outcome="unit")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="outcome 'ordinal'"):
        replace(mrr, outcome="ordinal")
