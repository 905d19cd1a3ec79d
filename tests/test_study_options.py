"""The studies' options objects (issue 27 item 5): one declaration per option, shared by every entry point; keyword
fields replace an object's fields, a misspelt keyword is refused."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from test_known_item import KW, write_corpus

from harness.studies.coverage import run_coverage
from harness.studies.coverage.suite import run_suite
from harness.studies.known_item import run_chunk_size_sensitivity, run_known_item, run_study
from harness.studies.options import CoverageOptions, KnownItemOptions, split_fields


def test_of_replaces_fields_and_refuses_unknown_ones():
    base = KnownItemOptions(systems="bm25,tfidf", workers=3)
    got = KnownItemOptions.of(base, workers=1, chunk_words=50)
    assert (got.systems, got.workers, got.chunk_words) == ("bm25,tfidf", 1, 50) and base.workers == 3
    assert KnownItemOptions.of() == KnownItemOptions()
    with pytest.raises(TypeError, match="KnownItemOptions has no field chunkwords"):
        KnownItemOptions.of(chunkwords=50)
    assert CoverageOptions.of(reps=20).reps == 20
    ki, cov = split_fields({"systems": "bm25", "reps": 50, "plots": None}, KnownItemOptions, CoverageOptions)
    assert ki == {"systems": "bm25"} and cov == {"reps": 50, "plots": None}
    with pytest.raises(TypeError, match="no option 'nope'"):
        split_fields({"nope": 1}, KnownItemOptions, CoverageOptions)


def test_entry_points_take_the_objects_instead_of_parameter_lists():
    """No entry point restates the options' parameters: each takes the object and ``**fields``."""
    ki = {f.name for f in dataclasses.fields(KnownItemOptions)}
    cov = {f.name for f in dataclasses.fields(CoverageOptions)}
    for fn, names in (
        (run_known_item, ki),
        (run_chunk_size_sensitivity, ki),
        (run_study, ki | cov),
        (run_coverage, cov),
        (run_suite, cov),
    ):
        params = inspect.signature(fn).parameters
        assert not (set(params) & names), fn.__name__
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), fn.__name__


def test_an_options_object_and_the_same_keywords_give_the_same_study(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    by_object = run_known_item(corpus, None, KnownItemOptions(systems="bm25", workers=1, **KW))
    by_keywords = run_known_item(corpus, None, systems="bm25", workers=1, **KW)
    assert by_object.outcomes["bm25"].hit.tolist() == by_keywords.outcomes["bm25"].hit.tolist()
    with pytest.raises(TypeError, match="no field"):
        run_known_item(corpus, None, chunkwords=50)
