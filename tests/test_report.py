"""HTML and Markdown reports from stored run records: figures, refusal of incomparable runs, size bounds.

The fixtures build real run records with the pipeline (BM25 on the tiny corpus), then add systems whose rankings are
seeded perturbations of BM25's, scored by the same ``score_results`` and written by ``write_run_record`` - the same
format a six-system run writes, including the fully covered slice. Known-item and coverage outputs are written in the
format of ``harness.studies.known_item`` / ``harness.studies.coverage`` (and produced by them).
"""

from __future__ import annotations

import json
import math
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from conftest import write_tiny_corpus, write_tiny_goldset

from harness.errors import HarnessInputError, IncomparableError
from harness.evaluation.pipeline import RunOptions, run, score_results
from harness.evaluation.runs import load_run, write_run_record
from harness.goldset.io import load_goldset
from harness.goldset.schema import CATEGORIES, CATEGORY_PREFIX
from harness.report import plots, write_report
from harness.report.html import FIGURE_IDS, figure_ids, render_html
from harness.report.markdown import MAX_CHARS, render_markdown
from harness.report.model import build_report
from harness.retrieve.base import QueryResult
from harness.studies import coverage as cov_mod
from harness.studies import known_item as ki_mod

# --------------------------------------------------------------------------------------------------------------
# Fixture builders (also used by test_report_browser.py)
# --------------------------------------------------------------------------------------------------------------

SIX = {"vector": 0.9, "rrf": 0.5, "w0.25": 0.35, "w0.5": 0.6, "w0.75": 0.8}


def _perturb(ranking: list, strength: float, rng: np.random.Generator) -> list[tuple[str, float]]:
    """Reorder a ranking: position i gets key i * exp(strength * N(0, 1)); scores are descending floats."""
    if not ranking:
        return []
    keys = [(i + 1) * math.exp(strength * rng.standard_normal()) for i in range(len(ranking))]
    order = sorted(range(len(ranking)), key=lambda i: keys[i])
    n = len(order)
    return [(ranking[i][0], float(n - pos)) for pos, i in enumerate(order)]


def add_perturbed_systems(
    base_path: Path,
    runs_dir: Path,
    run_id: str,
    systems: dict[str, float] = SIX,
    *,
    covered: set[str] | None = None,
    keep_base: bool = True,
    seed: int = 0,
    goldset_path: Path | None = None,
) -> Path:
    """A run record holding the base run's systems plus perturbed copies, scored by the real pipeline functions."""
    base = load_run(base_path)
    gpath = goldset_path or Path(base.manifest.goldset.path)
    goldset = load_goldset(gpath)
    rng = np.random.default_rng(seed)
    results: dict[str, dict[str, QueryResult]] = {}
    src = base.systems[0]
    rows = {r.qid: r.rankings for r in base.rows(src)}
    if keep_base:
        for s in base.systems:
            results[s] = {
                r.qid: QueryResult(docs=list(r.rankings.document), chunks=list(r.rankings.chunk)) for r in base.rows(s)
            }
    for name, strength in systems.items():
        results[name] = {
            q: QueryResult(docs=_perturb(r.document, strength, rng), chunks=_perturb(r.chunk, strength, rng))
            for q, r in rows.items()
        }
    man = base.manifest.model_dump()
    opts = RunOptions(
        doc_depth=man["depths"]["document"],
        chunk_depth=man["depths"]["chunk"],
        ks=tuple(man["ks"]),
        bootstrap_reps=200,
        clustering=man["clusters"]["mode"],
    )
    slices = {"covered": covered} if covered else None
    per_q, summary, clusters = score_results(
        goldset,
        results,
        opts,
        n_docs=man["corpus"].get("n_documents"),
        n_chunks=man["corpus"].get("n_chunks"),
        slices=slices,
    )
    man.update(
        run_id=run_id,
        systems=list(results),
        clusters=clusters,
        bootstrap_reps=200,
        system_configs={
            **man.get("system_configs", {}),
            **{
                s: {"system": s, "model_id": "test/static-embedder", "source": "perturbed bm25 (test fixture)"}
                for s in systems
            },
        },
    )
    if covered:
        man["coverage"] = {
            "n_indexed_chunks": 40,
            "n_total_chunks": 100,
            "chunk_fraction": 0.4,
            "gold_documents": 4,
            "gold_documents_fully_indexed": 2,
        }
    return write_run_record(runs_dir, run_id, manifest=man, per_question=per_q, summary=summary, trec_runs={}, qrels={})


def write_corpus_42(root: Path, *, n_docs: int = 14, seed: int = 3) -> tuple[Path, list[dict]]:
    """A synthetic corpus of ``n_docs`` documents and 42 questions over it (6 per category, ids with the category
    prefixes, some two-document questions), giving about ten clusters like the real gold set."""
    rng = np.random.default_rng(seed)
    common = [f"termino{i}" for i in range(120)]
    root.mkdir(parents=True, exist_ok=True)
    meta, texts = [], {}
    for d in range(n_docs):
        own = [f"tema{d}x{i}" for i in range(25)]
        words = list(rng.choice(common + own * 2, 280))
        doc_id, rel = f"doc-{d:02d}", f"leyes/doc_{d:02d}.md"
        texts[doc_id] = (rel, words)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# Documento {d}\n\n" + " ".join(words) + "\n", "utf-8")
        meta.append({"doc_id": doc_id, "path": rel, "title": f"Documento {d}", "date": f"2024-01-{d + 1:02d}",
                     "institution": "X", "doc_type": "ley"})  # fmt: skip
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", "utf-8")

    def gd(doc_id: str) -> dict:
        rel, words = texts[doc_id]
        return {
            "document_id": doc_id,
            "relpath": rel,
            "publication_date": f"2024-01-{int(doc_id[-2:]) + 1:02d}",  # the corpus date (V003)
            "section": None,
            "role": "answer",
            "evidence": [{"chunk_id": f"{doc_id}#0", "chunk_index": 0, "quote": " ".join(words[10:22])}],
        }

    base = {"persona": "abogado", "difficulty": "easy", "as_of": "2024-12-31", "unanswerable_reason": None,
            "answerability": "answerable", "reference_answer": "Una respuesta de referencia."}  # fmt: skip
    recs = []
    i = 0
    for cat in CATEGORIES:
        for j in range(6):
            d = i % n_docs
            docs = [f"doc-{d:02d}"] + ([f"doc-{d ^ 1:02d}"] if i % 7 == 3 else [])
            words = texts[docs[0]][1]
            q = list(rng.choice(words, 5)) + list(rng.choice(common, 4))
            recs.append(
                {
                    **base,
                    "id": f"{CATEGORY_PREFIX[cat]}-{j + 1:03d}",
                    "category": cat,
                    "question": "¿" + " ".join(q) + "? " + "palabras de relleno " * 6,
                    "required_hops": len(docs),
                    "gold_documents": [gd(x) for x in docs],
                }
            )
            i += 1
    return root, recs


def make_base_run(tmp: Path, *, forty_two: bool = False, run_id: str = "base") -> tuple[Path, Path, Path]:
    """``(run path, goldset folder, corpus folder)``: a real BM25 run on the tiny corpus (or the 42-question one)."""
    if forty_two:
        corpus, records = write_corpus_42(tmp / "corpus")
    else:
        corpus, records = write_tiny_corpus(tmp / "corpus"), None
    gs = write_tiny_goldset(tmp / "goldset", corpus, records)
    path = run(
        gs,
        corpus,
        ["bm25"],
        workdir=tmp / "wd",
        runs_dir=tmp / "runs",
        run_id=run_id,
        options=RunOptions(bootstrap_reps=200),
    )
    return path, gs, corpus


def write_known_item_outputs(folder: Path, *, systems=("bm25", "tfidf"), n_docs: int = 60, seed: int = 1) -> Path:
    """A known-item output folder (``summary.json``, ``per_document.jsonl``, ``coverage.json``) in the format of
    ``harness.studies.known_item`` / ``harness.studies.coverage``."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    lines, sys_summ = [], {}
    for k, name in enumerate(systems):
        n = rng.integers(2, 40, n_docs)
        p = rng.beta(0.6 + 0.3 * k, 1.6, n_docs)
        s = rng.binomial(n, p)
        rates = s / n
        for i in range(n_docs):
            lines.append(
                json.dumps(
                    {
                        "system": name,
                        "doc_id": f"d{i:03d}",
                        "doc_type": ["ley", "aviso", "decreto"][i % 3],
                        "collection": "x",
                        "n": int(n[i]),
                        "s": int(s[i]),
                        "rate": float(rates[i]),
                    }
                )
            )
        sys_summ[name] = {
            "system": name,
            "queries": int(n.sum()),
            "documents": n_docs,
            "hits": int(s.sum()),
            "micro_hit1": float(s.sum() / n.sum()),
            "macro_hit1": float(rates.mean()),
            "mrr_first_same_doc": 0.3,
            "per_document": {"share_at_zero": float(np.mean(rates == 0)), "share_at_one": float(np.mean(rates == 1))},
            "diagnostics": {"icc": 0.3, "deff": 5.2, "n_eff": float(n.sum() / 5.2), "lag1_autocorrelation": 0.1},
        }
    (folder / "per_document.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    summary = {
        "corpus_id": "synthetic",
        "corpus_hash": None,
        "config": {"chunker_id": "md-words-v1", "query_words": 20, "chunk_words": 100, "systems": list(systems)},
        "counts": {"queries": sum(v["queries"] for v in sys_summ.values()) // len(systems), "documents": n_docs},
        "systems": sys_summ,
        "paired": {
            f"{systems[0]} vs {systems[1]}": {
                "micro_diff": 0.02,
                "micro_ci": [-0.01, 0.05],
                "macro_diff": 0.03,
                "macro_ci": [0.0, 0.06],
                "only_a": 10,
                "only_b": 14,
            }
        },
    }
    (folder / "summary.json").write_text(json.dumps(summary), "utf-8")
    designs = []
    methods = {
        "iid_wald": 0.3,
        "chunk_bootstrap": 0.25,
        "eff_wald": 0.88,
        "cr2": 0.86,
        "doc_boot_t": 0.9,
        "macro_t": 0.93,
    }
    for K in (5, 10, 20, 40):
        rows = {}
        for m, c in methods.items():
            for fpc in (False, True):
                cov = min(0.999, c + (0.02 if fpc else 0) + (0.01 * math.log2(K / 5) if m != "iid_wald" else -0.02))
                rows[m + ("_fpc" if fpc else "")] = {
                    "method": m,
                    "target": "macro" if m.startswith("macro") else "micro",
                    "fpc": fpc,
                    "coverage": cov,
                    "mc_margin": 1.96 * math.sqrt(cov * (1 - cov) / 200),
                    "mean_width": 0.4 / math.sqrt(K) * (0.3 if m in ("iid_wald", "chunk_bootstrap") else 1.0),
                    "median_width": 0.4 / math.sqrt(K),
                }
        designs.append({"design": "srs", "K": K, "reps": 200, "seconds": 0.1, "note": {}, "rows": rows})
    designs.append(
        {"design": "two-stage", "K": 24, "reps": 200, "seconds": 0.1, "note": {"skipped": "too few types"}, "rows": {}}
    )
    coverage = {
        "population": {"system": systems[0], "documents": n_docs, "queries": 900, "micro": 0.2, "macro": 0.18},
        "config": {"reps": 200, "K": [5, 10, 20, 40], "level": 0.95, "B": 99, "seed": 0},
        "designs": designs,
        "published_k20": {"iid_wald": 0.295, "cr2": 0.857},
    }
    (folder / "coverage.json").write_text(json.dumps(coverage), "utf-8")
    return folder


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: list[str] = []
        self.tags: dict[str, int] = {}
        self.figures: dict[str, int] = {}
        self.external: list[str] = []
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a:
            self.ids.append(a["id"])
        for k in ("src", "href", "xlink:href"):
            v = a.get(k) or ""
            if v and not v.startswith("#") and not v.startswith("data:"):
                self.external.append(f"{tag} {k}={v}")
        if tag == "link":
            self.external.append(f"link {a}")
        if tag == "figure":
            self._stack.append(a.get("id", ""))
        if tag == "svg" and self._stack:
            self.figures[self._stack[-1]] = self.figures.get(self._stack[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "figure" and self._stack:
            self._stack.pop()


def parse(text: str) -> _Ids:
    p = _Ids()
    p.feed(text)
    p.close()
    return p


@pytest.fixture(scope="module")
def full_inputs(tmp_path_factory) -> dict:
    """A BM25 run, a six-system run with a covered slice, and known-item/coverage outputs."""
    tmp = tmp_path_factory.mktemp("report")
    base, gs, corpus = make_base_run(tmp)
    six = add_perturbed_systems(base, tmp / "runs", "six", covered={"SP-001", "SP-002"}, keep_base=False)
    ki = write_known_item_outputs(tmp / "known-item")
    return {"tmp": tmp, "base": base, "six": six, "goldset": gs, "corpus": corpus, "known_item": ki}


# --------------------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------------------


def test_report_from_stored_run_without_rerunning_retrieval(tmp_path: Path, monkeypatch):
    base, gs, corpus = make_base_run(tmp_path)
    # retrieval is impossible now: no corpus, no indexes, and the system set refuses to be built
    shutil.rmtree(corpus)
    shutil.rmtree(tmp_path / "wd")
    import harness.retrieve.registry

    def boom(*a, **k):
        raise AssertionError("the report must not run retrieval")

    monkeypatch.setattr(harness.retrieve.registry, "SystemSet", boom)
    out = write_report([base], tmp_path / "r.html")
    text = out.read_text("utf-8")
    p = parse(text)
    assert FIGURE_IDS["category"] in p.ids and FIGURE_IDS["ranks"] in p.ids and FIGURE_IDS["depth"] in p.ids
    assert FIGURE_IDS["forest"] not in p.ids  # one system: nothing to pair
    assert "one system only" in text
    # provenance: gold set, corpus, chunker, code version, date
    man = load_run(base).manifest
    for needle in ("tiny v1.0.0", man.corpus.corpus_id, "md-words-v1", "harness 0.1.0", man.created):
        assert needle in text
    # question texts and quotes come from the gold set recorded in the run
    assert "¿Por cuántos años se otorgan las concesiones de aguas nacionales?" in text
    assert "por un plazo de treinta años prorrogables" in text
    md = write_report([base], tmp_path / "r.md", fmt="markdown").read_text("utf-8")
    assert md.startswith("### Retrieval report: tiny v1.0.0") and "| bm25 |" in md.replace("bm25 (baseline)", "bm25")


def test_incomparable_runs_are_refused(full_inputs, tmp_path: Path):
    other = tmp_path / "other"
    shutil.copytree(full_inputs["six"], other)
    man = json.loads((other / "manifest.json").read_text("utf-8"))
    man["corpus"]["corpus_hash"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(man), "utf-8")
    for fmt in ("html", "markdown"):
        with pytest.raises(IncomparableError, match="corpus.corpus_hash differs") as ei:
            write_report([full_inputs["base"], other], tmp_path / f"r.{fmt}", fmt=fmt)
        assert ei.value.exit_code == 2
        assert not (tmp_path / f"r.{fmt}").exists()
    # a baseline run that is incomparable is refused as well
    with pytest.raises(IncomparableError):
        write_report([full_inputs["base"]], tmp_path / "r.html", baseline=other)


def test_html_parses_holds_every_figure_and_is_self_contained(full_inputs, tmp_path: Path):
    out = write_report(
        [full_inputs["base"], full_inputs["six"]], tmp_path / "r.html", known_item=full_inputs["known_item"]
    )
    text = out.read_text("utf-8")
    p = parse(text)
    for fid in FIGURE_IDS.values():
        assert fid in p.ids, fid
        assert p.figures.get(fid) == 1, f"{fid} has no inline svg"
        assert f"{fid}-svg" in p.ids
    assert len(p.ids) == len(set(p.ids)), "duplicate element ids (SVG ids must be prefixed per figure)"
    assert p.external == [], p.external
    assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text
    declared = json.loads(text.split("id='report-figures'>", 1)[1].split("</script>", 1)[0])
    assert set(declared) == set(FIGURE_IDS.values())
    for sec in ("provenance", "systems", "categories", "paired", "depth", "ranks", "covered", "known-item", "coverage"):
        assert sec in p.ids
    assert p.tags.get("details", 0) >= 3 + 1  # one per question, plus the collapsible tables
    assert "q-SP-001" in p.ids
    # known-item paired differences (fixture: micro +0.02 [-0.01, +0.05]) are signed percentage points
    assert "<td>+2.0 pts</td><td>[-1.0 pts, +5.0 pts]</td>" in text
    # systems from two runs share the name bm25 only once, so labels stay plain
    assert "vector" in text and "base:bm25" not in text


def test_markdown_for_42_questions_and_six_systems_fits_a_comment(tmp_path: Path):
    base, gs, _ = make_base_run(tmp_path, forty_two=True)
    assert len(load_run(base).per_question) == 42
    six = add_perturbed_systems(base, tmp_path / "runs", "six", covered={"SP-001", "LI-002", "TE-003"})
    ki = write_known_item_outputs(tmp_path / "ki")
    data = build_report([six], known_item=ki, reps=2000)
    assert len(data.entries) == 6
    md = render_markdown(data)
    assert len(md) < MAX_CHARS
    assert "#### Paired differences against bm25" in md and ("**PASS**" in md or "**FAIL**" in md)
    assert md.count("\n| MD-") == 6  # every question in the per-question table
    assert "#### Fully covered slice" in md and "#### Known-item study" in md and "Interval coverage" in md
    # a tight bound shortens the per-question table and says so
    short = render_markdown(data, max_chars=len(md) - 500)
    assert len(short) <= len(md) - 500 and "more questions not shown" in short
    tiny = render_markdown(data, max_chars=1500)
    assert len(tiny) <= 1500 and "truncated" in tiny


def test_forest_rows_are_the_gates_numbers(full_inputs):
    """The report asks compare for its paired rows: the one-sided bound is the gate's, bit for bit."""
    from harness.evaluation.gate import gate

    data = build_report([full_inputs["six"]], margin=0.05, reps=1000)
    assert data.baseline is not None and data.baseline.label == "vector"
    mrr_rows = [r for r in data.paired if r.metric == "mrr"]
    assert [r.label for r in mrr_rows] == ["rrf", "w0.25", "w0.5", "w0.75"]
    for r in mrr_rows:
        v = gate(full_inputs["six"], full_inputs["six"], metric="mrr", margin=0.05, system_baseline="vector",
                 system_candidate=r.label)  # fmt: skip
        c = v.checks[0]
        assert r.lower_one_sided == c.lower and r.upper_one_sided == c.upper and r.se == c.se and r.df == c.df
        assert r.decision == v.decision and r.noninferior == (v.decision == "PASS")
        assert r.lower <= r.diff <= r.upper
    assert all(r.p_holm is not None and r.p_holm >= r.p for r in mrr_rows)


def test_baseline_by_label_or_run_folder(full_inputs, tmp_path: Path):
    d = build_report([full_inputs["base"], full_inputs["six"]], baseline="w0.5", reps=200)
    assert d.baseline.label == "w0.5" and {r.label for r in d.paired} == {"bm25", "vector", "rrf", "w0.25", "w0.75"}
    d = build_report([full_inputs["six"]], baseline=full_inputs["base"], reps=200)
    assert d.baseline.label == "bm25" and d.runs[0].path == full_inputs["base"]
    with pytest.raises(HarnessInputError, match="--baseline 'nope'"):
        build_report([full_inputs["six"]], baseline="nope")


def test_repeated_system_names_are_labelled_by_run(full_inputs, tmp_path: Path):
    again = add_perturbed_systems(full_inputs["base"], tmp_path, "again", {"vector": 0.3})
    d = build_report([full_inputs["base"], again], reps=200)
    assert d.labels == ["base:bm25", "again:bm25", "again:vector"]  # every label, once a name repeats
    assert d.baseline.label == "base:bm25"
    same = next(r for r in d.paired if r.label == "again:bm25" and r.metric == "mrr")
    assert same.diff == 0.0 and same.questions["ties"] == 3  # the same rankings re-scored
    md = render_markdown(d)
    assert "| again:bm25 | mrr | +0.000 |" in md


def test_category_intervals_are_the_shown_method_for_the_category_design(full_inputs):
    """A category's design (a handful of clusters) was not measured: its interval is the rule's default for the
    nearest measured design (CR2-logit for MRR on the committed evidence), said so in every rendering, and the
    figures' axis text names it (it said CR2 while drawing another method)."""
    from harness.stats.methods import INTERVALS

    data = build_report([full_inputs["six"]], reps=200)
    run = load_run(full_inputs["six"])
    labels = run.clusters()
    sp = [r for r in run.rows("rrf") if r.category == "single_passage"]
    ref = INTERVALS["cr2_logit"].compute([r.metrics["mrr"] for r in sp], [labels[r.qid] for r in sp])
    got = data.category_values[("rrf", "single_passage", "mrr")]
    assert got.method == "cr2_logit" and "nearest measured design" in got.source
    assert got.mean == pytest.approx(ref.estimate) and got.interval == (ref.lower, ref.upper)
    # multi_document has one question (one cluster): no interval, and the report says so
    assert data.category_info["multi_document"] == {"n": 1, "n_clusters": 1}
    assert data.category_values[("rrf", "multi_document", "mrr")].interval is None
    html = render_html(data)
    assert "No whisker for multi document" in html
    assert "Whiskers: 95 % CR2-logit intervals computed on the category" in html
    assert "coverage not measured for a category" in html and "% CR2 intervals computed" not in html
    md = render_markdown(data)
    assert "#### MRR per category (CR2-logit interval where the category has >= 2 clusters; the rule" in md


def test_figure_axis_text_names_the_interval_drawn():
    from harness.report.plots_many import category_heatmap, system_intervals

    vals = {("a", "x"): (0.5, (0.4, 0.6))}
    figs = {
        "bars": plots.category_bars(["x"], {}, ["a"], vals, interval_label="CR2-logit"),
        "heat": category_heatmap(["x"], {}, ["a"], vals, interval_label="CR2-logit"),
        "systems": system_intervals(["a"], ["mrr"], {("a", "mrr"): (0.5, (0.4, 0.6))}, interval_label="CR2-logit"),
    }
    texts = {k: " ".join([ax.get_xlabel() + ax.get_ylabel() for ax in f.axes]) for k, f in figs.items()}
    forest = plots.forest(
        [{"label": "b", "metric": "mrr", "diff": 0.01, "lower": -0.01, "upper": 0.03, "lower_one_sided": -0.005}],
        ["mrr"],
        margin=0.02,
        interval_label="CR3",
    )
    texts["forest"] = forest.get_supxlabel()
    cov = plots.slice_compare(["mrr"], ["a"], {("all", "a", "mrr"): (0.5, (0.4, 0.6))}, interval_label="HH-logit")
    texts["covered"] = cov.get_supxlabel()
    assert all("CR2 interval" not in t for t in texts.values()), texts
    assert "95 % CR2-logit interval" in texts["bars"] and "95 % CR2-logit interval" in texts["heat"]
    assert "95 % CR2-logit interval" in texts["systems"]
    assert "95 % CR3 interval" in texts["forest"] and "95 % HH-logit intervals" in texts["covered"]


def test_gold_set_unreadable_shows_question_ids(full_inputs, tmp_path: Path):
    other = tmp_path / "moved"
    shutil.copytree(full_inputs["six"], other)
    man = json.loads((other / "manifest.json").read_text("utf-8"))
    man["goldset"]["path"] = "gone/nowhere/gold.jsonl"
    (other / "manifest.json").write_text(json.dumps(man), "utf-8")
    data = build_report([other], reps=200)
    assert data.gold is None and "not readable" in data.gold_note
    html = render_html(data)
    assert "<code>SP-001</code>" in html and "<code>ley-a#0</code>" in html  # ids from the run record itself


def test_bad_arguments(full_inputs, tmp_path: Path):
    with pytest.raises(HarnessInputError, match="--format"):
        write_report([full_inputs["base"]], tmp_path / "x", fmt="pdf")
    with pytest.raises(HarnessInputError, match="--margin"):
        write_report([full_inputs["base"]], tmp_path / "x", margin=-0.1)
    with pytest.raises(HarnessInputError, match="no run record"):
        write_report([], tmp_path / "x")
    with pytest.raises(HarnessInputError, match="run record not found"):
        write_report([tmp_path / "missing"], tmp_path / "x")
    with pytest.raises(HarnessInputError, match="coverage.json"):
        write_report([full_inputs["base"]], tmp_path / "x", coverage=tmp_path)


def test_figures_are_deterministic_and_ids_prefixed():
    def fig():
        return plots.depth_curves(
            {"all_hop": {"a": [(1, 0.2, (0.1, 0.3)), (5, 0.5, None)]}, "evidence_recall": {"a": [(1, 0.1, None)]}},
            ["a"],
        )

    s1 = plots.figure_svg(fig(), "fig-x", title="t")
    s2 = plots.figure_svg(fig(), "fig-x", title="t")
    assert s1 == s2
    assert s1.startswith("<svg") and 'id="fig-x-svg"' in s1 and '<title id="fig-x-title">t</title>' in s1
    ids = [m for m in __import__("re").findall(r'\bid="([^"]+)"', s1)]
    assert ids and all(i.startswith("fig-x-") for i in ids)
    refs = __import__("re").findall(r'(?:url\(#|href="#)([^)"]+)', s1)
    assert refs and all(r in ids for r in refs)


def test_styles_differ_beyond_colour():
    st = [plots.style(i) for i in range(6)]
    assert len({s["marker"] for s in st}) == 6
    assert len({str(s["linestyle"]) for s in st}) == 6
    assert len({s["hatch"] for s in st}) == 6


def test_report_of_real_known_item_and_coverage_outputs(full_inputs, tmp_path: Path):
    """The known-item and coverage modules' own outputs feed the report."""
    corpus = tmp_path / "kc"
    rng = np.random.default_rng(0)
    vocab = [f"palabra{i}" for i in range(300)]
    meta = []
    for d in range(12):
        words = " ".join(rng.choice(vocab, 260))
        rel = f"d{d:02d}.md"
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(f"# Documento {d}\n\n{words}\n", "utf-8")
        meta.append({"doc_id": f"doc-{d:02d}", "path": rel, "title": f"Documento {d}", "date": "2024-01-01",
                     "doc_type": ["ley", "aviso"][d % 2]})  # fmt: skip
    (corpus / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", "utf-8")
    out = tmp_path / "ki"
    ki_mod.run_known_item(corpus, out, systems=("bm25", "tfidf"))
    cov_mod.run_coverage(out, reps=40, ks=(3, 6), b=39, types=0, plots=False)
    html = write_report([full_inputs["base"]], tmp_path / "r.html", known_item=out).read_text("utf-8")
    p = parse(html)
    for fid in (FIGURE_IDS["known_item"], FIGURE_IDS["coverage"], FIGURE_IDS["width"]):
        assert p.figures.get(fid) == 1
    data = build_report([full_inputs["base"]], known_item=out)
    assert FIGURE_IDS["coverage"] in figure_ids(data)
    assert len(render_markdown(data)) < MAX_CHARS
