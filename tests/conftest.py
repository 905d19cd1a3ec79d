"""Shared fixtures: a tiny corpus and gold set written by the tests, and the real corpus location."""

from __future__ import annotations

import ast
import functools
import json
import os
from pathlib import Path

import pytest

# The CLI's consoles read COLUMNS once, at import, when stdout is not a terminal (harness/cli/_common.py): pin it so
# that rendered tables do not depend on the developer's terminal or on pytest-xdist's workers (which saw 80 columns
# and wrapped a sweep table's "(chosen)" label). Tests of narrower widths pass their own width to a Console.
os.environ["COLUMNS"] = "150"

REPO = Path(__file__).resolve().parents[1]
REAL_CORPUS = Path(os.environ.get("HARNESS_REAL_CORPUS", REPO.parent / "shared" / "corpus" / "mx-leyes-dof"))
REFERENCE_V4 = REPO.parent / "shared" / "reference" / "dof-rag-eval-v4"
REAL_GOLDSET = REPO / "datasets" / "mx-leyes-dof-eval-v1"

TINY_DOCS = {
    "ley-a": (
        "leyes/ley_a.md",
        "Ley de Aguas Nacionales de Prueba",
        "2020-01-15",
        "# Ley de Aguas Nacionales de Prueba\n\n## Capítulo I\n\n**Artículo 1.-** La presente ley regula la "
        "explotación, uso y aprovechamiento de las aguas nacionales del río Bravo.\n\n**Artículo 2.-** La Comisión "
        "otorgará concesiones por un plazo de treinta años prorrogables.\n",
    ),
    "ley-b": (
        "leyes/ley_b.md",
        "Ley Federal de Bosques de Prueba",
        "2021-03-10",
        "# Ley Federal de Bosques de Prueba\n\n**Artículo 1.-** Los bosques templados y las selvas tropicales son "
        "patrimonio forestal.\n\n**Artículo 2.-** La tala clandestina se sanciona con multa de mil días.\n",
    ),
    "dof-c": (
        "dof/2024-04-01/nota_c.md",
        "TIPO de cambio para solventar obligaciones",
        "2024-04-01",
        "# TIPO de cambio para solventar obligaciones\n\nEl tipo de cambio obtenido el día de hoy fue de "
        "$16.5505 M.N. por un dólar de los EE.UU.A.\n",
    ),
    "dof-d": (
        "dof/2024-04-12/nota_d.md",
        "TASAS de interés interbancarias",
        "2024-04-12",
        "# TASAS de interés interbancarias\n\nLa Tasa de Interés Interbancaria de Equilibrio a plazo de 28 días "
        "fue de 11.2450 por ciento.\n",
    ),
}


def write_tiny_corpus(root: Path) -> Path:
    """Write the tiny corpus (4 documents with metadata.jsonl) under ``root`` and return its folder."""
    root.mkdir(parents=True, exist_ok=True)
    meta = []
    for doc_id, (rel, title, date, text) in TINY_DOCS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        meta.append(
            {
                "doc_id": doc_id,
                "path": rel,
                "title": title,
                "date": date,
                "institution": "X",
                "doc_type": "ley" if doc_id.startswith("ley") else "aviso",
            }
        )
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in meta) + "\n", "utf-8")
    return root


def tiny_records() -> list[dict]:
    """Three questions over the tiny corpus (chunk ids under md-words-v1)."""

    def gd(doc_id, chunk_index, quote, role="answer"):
        rel, _t, date, _x = TINY_DOCS[doc_id]
        return {
            "document_id": doc_id,
            "relpath": rel,
            "publication_date": date,
            "section": None,
            "role": role,
            "evidence": [{"chunk_id": f"{doc_id}#{chunk_index}", "chunk_index": chunk_index, "quote": quote}],
        }

    base = {"persona": "abogado", "difficulty": "easy", "as_of": "2024-12-31", "unanswerable_reason": None}
    return [
        {
            **base,
            "id": "SP-001",
            "category": "single_passage",
            "question": "¿Por cuántos años se otorgan las concesiones de aguas nacionales?",
            "answerability": "answerable",
            "reference_answer": "Treinta años, prorrogables.",
            "required_hops": 1,
            "gold_documents": [gd("ley-a", 0, "por un plazo de treinta años prorrogables")],
        },
        {
            **base,
            "id": "SP-002",
            "category": "single_passage",
            "question": "¿Cuál fue el tipo de cambio del 1 de abril de 2024?",
            "answerability": "answerable",
            "reference_answer": "$16.5505 pesos por dólar.",
            "required_hops": 1,
            "gold_documents": [gd("dof-c", 0, "fue de $16.5505 M.N. por un dólar")],
        },
        {
            **base,
            "id": "MD-001",
            "category": "multi_document",
            "question": "¿Qué sanción tiene la tala clandestina y cuál fue la TIIE a 28 días?",
            "answerability": "answerable",
            "reference_answer": "Multa de mil días; 11.2450 %.",
            "required_hops": 2,
            "gold_documents": [
                gd("ley-b", 0, "La tala clandestina se sanciona con multa de mil días."),
                gd("dof-d", 0, "a plazo de 28 días fue de 11.2450 por ciento"),
            ],
        },
    ]


def write_tiny_goldset(folder: Path, corpus_dir: Path, records: list[dict] | None = None, **manifest_overrides) -> Path:
    """Write a dataset folder for the tiny corpus (manifest with its real corpus hash)."""
    from harness.corpus.ingest import scan_corpus

    src = scan_corpus(corpus_dir)
    folder.mkdir(parents=True, exist_ok=True)
    recs = records if records is not None else tiny_records()
    (folder / "tiny.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in recs) + "\n", "utf-8")
    lo, hi = src.date_range
    manifest = {
        "name": "tiny",
        "version": "1.0.0",
        "corpus_version": src.corpus_id,
        "corpus_hash": src.corpus_hash,
        "corpus_documents": len(src.docs),
        "corpus_date_min": lo,
        "corpus_date_max": hi,
        "chunker_version": "md-words-v1",
        "schema_version": 1,
        **manifest_overrides,
    }
    (folder / "tiny.meta.json").write_text(json.dumps(manifest, indent=1), "utf-8")
    return folder


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """A freshly written tiny corpus folder."""
    return write_tiny_corpus(tmp_path / "corpus")


@pytest.fixture
def tiny_goldset(tmp_path: Path, tiny_corpus: Path) -> Path:
    """A dataset folder over :func:`tiny_corpus`."""
    return write_tiny_goldset(tmp_path / "goldset", tiny_corpus)


# ---------------------------------------------------------------------------------------------------------------
# The `slow` marker. `pytest -m "not slow"` is the fast subset (docs/CONVENTIONS.md). Chosen by measurement
# (`pytest --durations=80`, whole suite on the shared 2-core machine, 2026-12): Ray, the headless browser, and the
# real-corpus index builds, plus the few tests that take tens of seconds for another reason. Tests in files this
# list names are marked here; new slow tests carry `@pytest.mark.slow` in their own file.

SLOW_MODULES: dict[str, str] = {
    "test_baseline.py": "re-runs the six-system baseline on the real corpus (builds its indexes when cold)",
    "test_ray_embed.py": "Ray clusters: 40-60 s per test",
    "test_report_browser.py": "headless Chromium: 15-23 s per test",
    "test_real_pipeline.py": "real-corpus BM25 and vector index builds (32 s warm, minutes cold)",
}
SLOW_TESTS: dict[str, str] = {
    "test_vector.py::test_real_corpus_default_model_index": "builds the real corpus's vector index: 240 s",
    "test_known_item.py::test_real_corpus_kernel_matches_bm25s_on_a_sample": "real-corpus BM25 index build: 52 s",
    "test_resolve.py::test_resolve_rebuilds_our_gold_set_byte_for_byte_from_its_quotes": "re-chunks the real corpus's "
    "cited documents: 24 s",
    # ranx compiles its numba kernels in whichever of these runs first: 108 s, then 34 s for the other
    "test_fusion.py::test_live_ranx_agrees_without_ties": "live ranx comparison (numba compile)",
    "test_fusion.py::test_live_ranx_differs_on_constant_lists": "live ranx comparison (numba compile)",
    "test_fusion.py::test_live_ranx_comb_mnz_agrees_without_ties": "live ranx comparison (numba compile)",
}


# The next slowest tests of the fast subset (2.6-12 s each by --durations, 2026-12-01, idle 2 cores): left out of
# it so that `pytest -m "not slow" -n 2` stays under two minutes; the whole suite runs them.
_FAST_SUBSET_CUT = (
    "test_reliability_quotes.py::test_a_20_mb_quote_gives_a_bounded_finding_in_every_output_format",
    "test_registry.py::test_named_fusions_give_the_short_names_rankings",
    "test_binary.py::test_golden_bytes_numpy_and_sentence_transformers",
    "test_report.py::test_markdown_for_42_questions_and_six_systems_fits_a_comment",
    "test_cli_manners.py::test_coverage_lower_case_options_and_aliases",
    "test_measurements_doc.py::test_the_baseline_block_is_what_its_command_prints_now",
    "test_coverage.py::test_run_coverage_writes_files_and_renders",
    "test_embedders.py::test_a_worker_with_other_weights_is_refused",
    "test_embedders.py::test_sharded_embedding_equals_one_process_bit_for_bit",
    "test_report_escaping.py::test_html_report_holds_no_markup_from_inputs",
    "test_report.py::test_html_parses_holds_every_figure_and_is_self_contained",
    "test_cli_known_item.py::test_each_mode_prints_its_tables",
    "test_chunker_legal.py::test_properties_against_the_rules",
    "test_report.py::test_gold_set_unreadable_shows_question_ids",
    "test_embed.py::test_packaged_minilm_is_extracted_once_and_loads_offline",
    "test_cli_manners.py::test_every_long_step_shows_progress_with_elapsed_time_and_eta",
    # second cut (2026-12-01, evening): 2.6-7.7 s each, measured with --durations on the idle 2 cores
    "test_embed.py::test_default_model_offline_matches_mean_of_wheel_token_vectors",
    "test_binary.py::test_hamming_agrees_across_conventions_and_sqlite_vec",
    "test_gate_real.py::test_identical_candidate_passes_exit_0",
    "test_report.py::test_report_of_real_known_item_and_coverage_outputs",
    "test_paired_evidence.py::test_every_format_carries_this_designs_coverage",
    "test_known_item.py::test_run_study_known_item_then_coverage",
    "test_report.py::test_category_intervals_are_the_shown_method_for_the_category_design",
    "test_cli_known_item.py::test_known_item_then_coverage",
    "test_registry.py::test_a_run_replays_exactly_from_its_manifest",
    "test_known_item_chunker.py::test_cli_known_item_with_coverage_under_md_legal",
    "test_gate_real.py::test_one_question_a_rank_lower_is_inconclusive_exit_3",
    # third cut, same evening: the tests that then paid a module fixture (the USE model load, 9.6 s) or ran 3-12 s
    "test_embed.py::test_default_model_identity_is_stable",
    "test_embed.py::test_embed_rejects_a_bare_string",
    "test_reliability_unicode.py::test_the_tiny_gold_set_in_nfd_gives_exactly_the_nfc_runs_metrics",
    "test_coverage_evidence.py::test_run_tables_print_this_designs_coverage_not_the_whole_document_range",
    "test_stats_batched.py::test_cluster_bootstrap_kernels_equal_the_scalar_method_on_the_same_resamples",
)
SLOW_TESTS.update(dict.fromkeys(_FAST_SUBSET_CUT, "2.6-12 s in the fast subset"))


# Not marked, measured 2–10 s each in the fast subset (next candidates if it must shrink): test_report.py (9 tests,
# 24 s), test_binary.py::test_golden_bytes_numpy_and_sentence_transformers (10 s, mostly the first torch import),
# test_registry.py (4 tests, 8 s), test_stats_batched.py bootstrap kernels (7 s), test_cli_known_item.py (6 s).


# The tests that build or read the real corpus's derived files in the one shared work directory (``HARNESS_WORKDIR``,
# default ``.harness``), and every ``realcorpus`` test (a CLI call without ``--workdir`` ingests into that directory
# too): under pytest-xdist (``-n 2 --dist loadgroup``, the README's test command) they are one work unit, run on one
# worker in file order, so that two workers never build the same index or embedding cache at once (the second writer
# of a derived folder is refused by design, harness/io.py) and the cold embedding is paid once. Every other test is
# its own work unit, spread over the workers. xdist 3.8's own `xdist_group` marker does not group under pytest 9.2
# (it appends the group to ``item._nodeid``, which pytest 9 no longer reads), and the controller that schedules never
# sees markers, so the group is decided from the node id: the files and tests that carry the
# ``realcorpus`` mark in their source (read with ``ast``). The collection hook checks that every test collected with
# the mark is in the group.
SHARED_WORKDIR_GROUP = "real-corpus-workdir"
# realcorpus files that only read the corpus and write under tmp_path (checked by reading them): spread like the rest
REALCORPUS_OWN_DIRS = frozenset({"test_dof_corpus.py", "test_known_item_gate_real.py"})


def _marks_realcorpus(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "realcorpus" for n in ast.walk(node))


@functools.cache
def _realcorpus_in_source() -> tuple[frozenset[str], frozenset[str]]:
    """``(files, "file::test" keys)`` whose source marks them ``realcorpus``: a module-level ``pytestmark`` that names
    the mark, or a decorator of a test function or class."""
    files, tests = set(), set()
    for path in sorted((REPO / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
                if _marks_realcorpus(node.value):
                    files.add(path.name)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                if any(_marks_realcorpus(d) for d in node.decorator_list):
                    tests.add(f"{path.name}::{node.name}")
    return frozenset(files), frozenset(tests)


def in_shared_workdir_group(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (``tests/test_x.py::test_y[param]`` or ``...::Class::test_y``) joins the group."""
    parts = nodeid.split("::")
    name = parts[0].rsplit("/", 1)[-1]
    keys = {f"{name}::{p.split('[', 1)[0]}" for p in parts[1:]}
    rc_files, rc_tests = _realcorpus_in_source()
    return name not in REALCORPUS_OWN_DIRS and (name in rc_files or bool(keys & rc_tests))


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup``: xdist's load-scope scheduler with the shared-work-directory group as one scope and every
    other test as its own (the largest scope, the group, is handed out first)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedWorkdirScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED_WORKDIR_GROUP if in_shared_workdir_group(nodeid) else nodeid

    return SharedWorkdirScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SLOW_MODULES` and :data:`SLOW_TESTS` ``slow``; a stale entry, or a ``realcorpus``
    test outside the shared-work-directory group, is an error."""
    seen_files = {item.path.name for item in items}
    matched: set[str] = set()
    for item in items:
        key = f"{item.path.name}::{item.originalname}"
        own = item.path.name in REALCORPUS_OWN_DIRS
        if item.get_closest_marker("realcorpus") is not None and not own and not in_shared_workdir_group(item.nodeid):
            raise pytest.UsageError(f"{item.nodeid} is marked realcorpus but conftest's xdist group misses it")
        if item.path.name in SLOW_MODULES or key in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
            matched.add(key)
    # stale = named in a collected file that does not define it (a run of a few node ids collects only some tests)
    stale = [
        k
        for k in SLOW_TESTS
        if k.split("::")[0] in seen_files
        and k not in matched
        and f"def {k.split('::')[1]}(" not in (REPO / "tests" / k.split("::")[0]).read_text("utf-8")
    ]
    if stale:
        raise pytest.UsageError(f"conftest.SLOW_TESTS names tests that do not exist: {', '.join(stale)}")
