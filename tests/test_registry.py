"""The system registry: names -> typed options -> systems; fusions of named inputs, plugins, two-stage with a
reranker, defaults, records that replay a run exactly, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, run
from harness.goldset.io import load_goldset
from harness.retrieve.fusion import rrf, weighted_fusion
from harness.retrieve.fusion.comb_mnz import comb_mnz
from harness.retrieve.names import parse_name, split_systems
from harness.retrieve.plugin import load_plugin
from harness.retrieve.registry import SystemPlan, plan_systems
from harness.retrieve.two_stage import TwoStageOptions
from harness.retrieve.vector import DEFAULT_RESCORE, VectorOptions

TOY_FILE = REPO / "tests" / "fixtures" / "plugins" / "toy_retriever.py"
TOY = f"toy=py:{TOY_FILE}:ToyRetriever"
RERANK = f"py:{TOY_FILE}:ToyReranker"


def _rows(path: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for line in (path / "per_question.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        row["docs"], row["chunks"] = row["rankings"]["document"], row["rankings"]["chunk"]
        out[(row["system"], row["qid"])] = row
    return out


def _pairs(x):
    return [(i, s) for i, s in x]


# ------------------------------------------------------------------------------------------------------------------
# the grammar


@pytest.mark.parametrize(
    ("text", "head", "options", "rest"),
    [
        ("bm25", "bm25", {}, None),
        ("vector:binarize=centered", "vector", {"binarize": "centered"}, None),
        ("vector:model=e5-small:binarize=centered", "vector", {"model": "e5-small", "binarize": "centered"}, None),
        ("vector[model=/m/a:b;binarize=sign]", "vector", {"model": "/m/a:b", "binarize": "sign"}, None),
        ("rrf:k=10:bm25+mine", "rrf", {"k": "10"}, "bm25+mine"),
        ("w0.6:bm25+mine", "w0.6", {}, "bm25+mine"),
        ("two-stage:rrf:bm25+mine", "two-stage", {}, "rrf:bm25+mine"),
        ("two-stage[reranker=py:r.py:make]:k=1:bm25", "two-stage", {"reranker": "py:r.py:make", "k": "1"}, "bm25"),
        ("two-stage:top_docs=5:rrf:k=3:bm25+vector", "two-stage", {"top_docs": "5"}, "rrf:k=3:bm25+vector"),
    ],
)
def test_one_grammar_for_every_name(text, head, options, rest):
    p = parse_name(text)
    assert (p.head, p.options, p.rest) == (head, options, rest)


def test_system_lists_split_at_commas_outside_brackets():
    assert split_systems(" bm25, two-stage[reranker=py:a,b.py:f]:bm25 ,,rrf ") == [
        "bm25",
        "two-stage[reranker=py:a,b.py:f]:bm25",
        "rrf",
    ]
    with pytest.raises(HarnessInputError, match="without"):
        split_systems("vector[binarize=sign")


# ------------------------------------------------------------------------------------------------------------------
# plans


def test_names_are_kept_as_typed_and_one_system_is_one_key():
    plan = SystemPlan.parse(["rrf", "rrf:bm25+vector", "vector", "vector:binarize=centered", "rrf:k=60"])
    assert plan.names == ["rrf", "rrf:bm25+vector", "vector", "vector:binarize=centered", "rrf:k=60"]
    assert plan.key("rrf") == plan.key("rrf:bm25+vector") == plan.key("rrf:k=60")
    assert plan.key("vector") != plan.key("vector:binarize=centered")
    assert list(plan.nodes) == ["bm25", "vector", "rrf", "rrf:bm25+vector", "vector:binarize=centered", "rrf:k=60"]
    rec = plan.record()
    assert rec["rrf"] == {
        "text": "rrf",
        "kind": "fusion",
        "method": "rrf",
        "options": {"input_depth": 50, "chunk_input_depth": 200, "k": 60.0},  # input depths: issue 42 item 16
        "inputs": ["bm25", "vector"],
        "plugin": None,
    }
    assert rec["vector:binarize=centered"]["options"] == {
        "model": "use",
        "index_fraction": None,
        "until": None,
        "backend": "sqlite-vec",
        "binarize": "centered",
        "rescore": DEFAULT_RESCORE,
    }


def test_defaults_per_kind_and_names_override_them():
    plan = SystemPlan.parse(
        ["vector", "vector:binarize=sign", "vector:until=none", "two-stage:bm25"],
        defaults={
            "vector": VectorOptions(binarize="centered", until="2024-01-01"),
            "two-stage": TwoStageOptions(top_docs=3, vector=None),
        },
    )
    opts = {n: plan.nodes[n].record.options for n in plan.nodes}
    assert opts["vector"]["binarize"] == "centered" and opts["vector"]["until"] == "2024-01-01"
    assert opts["vector:binarize=sign"]["binarize"] == "sign" and opts["vector:until=none"]["until"] is None
    assert opts["two-stage:bm25"]["top_docs"] == 3 and plan.nodes["two-stage:bm25"].record.inputs == ("bm25", "bm25")
    with pytest.raises(HarnessInputError, match="defaults for 'vector'"):
        SystemPlan.parse(["bm25"], defaults={"vector": TwoStageOptions()})


def test_aliases_name_any_system_and_fusions_read_them():
    plan = SystemPlan.parse([TOY, "ctr=vector:binarize=centered", "rrf:bm25+toy", "hyb=w0.5:bm25+toy", "rrf:hyb+ctr"])
    assert plan.names == ["toy", "ctr", "rrf:bm25+toy", "hyb", "rrf:hyb+ctr"]
    assert plan.nodes["toy"].record.kind == "py" and plan.nodes["toy"].record.text == TOY.split("=", 1)[1]
    assert plan.nodes["rrf:hyb+ctr"].record.inputs == ("hyb", "ctr")
    assert plan.nodes["hyb"].record.options == {"input_depth": 50, "chunk_input_depth": 200, "w": 0.5}
    assert list(plan.nodes).index("toy") < list(plan.nodes).index("hyb") < list(plan.nodes).index("rrf:hyb+ctr")


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["bm42"], "unknown system 'bm42'"),
        (["rrf:bm25+mine"], "unknown system 'mine'"),
        (["bm25=py:x.py:X"], "alias 'bm25' is a system name"),
        (["w0.5=bm25"], "alias 'w0.5' is a system name"),
        (["a=bm25", "a=vector"], "alias 'a' given twice"),
        (["a=rrf:b+bm25", "b=rrf:a+bm25"], "reads itself"),
        (["bm25:k1x=1.2"], "k1x: Extra inputs are not permitted"),
        (["vector:binarize=x"], "binarize: Input should be 'sign' or 'centered'"),
        (["vector:index_fraction=2"], "index_fraction"),
        (["vector:bm25"], "vector takes options"),
        (["two-stage"], "name the first-stage system"),
        (["two-stage:top_docs=0:bm25"], "top_docs"),
        (["two-stage[reranker=bert]:bm25"], "expected py:MODULE:ATTR or cross-encoder"),
        (["two-stage[fusion=rrf:bm25+x]:bm25"], "give no inputs"),
        (["mine=py:no_such_module_here:X"], "no module named 'no_such_module_here'"),
        ([""], "no system named"),
    ],
)
def test_plan_errors_are_one_line_naming_the_name(names, message):
    with pytest.raises(HarnessInputError, match=message) as exc:
        SystemPlan.parse(names)
    assert str(exc.value).startswith("--systems") and "\n" not in str(exc.value)


def test_a_plan_round_trips_through_its_record():
    names = [TOY, "rrf:k=10:bm25+toy", "w0.6:bm25+toy", f"two-stage[reranker={RERANK};vector=none]:rrf:bm25+toy"]
    plan = SystemPlan.parse(names)
    again = SystemPlan.from_record(json.loads(json.dumps(plan.record())), plan.names)
    assert again.record() == plan.record() and again.names == plan.names
    assert [again.key(n) for n in again.nodes] == [plan.key(n) for n in plan.nodes]
    assert plan.record()[names[-1]]["plugin"]["attribute"] == "ToyReranker"
    assert plan_systems(plan) is plan
    broken = plan.record()
    del broken["toy"]
    with pytest.raises(HarnessInputError, match="'toy': no entry"):
        SystemPlan.from_record(broken, plan.names)


def test_a_record_older_than_rescoring_replays_as_it_ran():
    """A record written before ``rescore`` / ``scorer`` / ``dense`` existed ranked vectors by Hamming distance and
    fused BM25 with -hamming in two-stage; replaying it must not switch on today's defaults."""
    plan = SystemPlan.parse(["vector:model=wordllama", "two-stage:top_docs=5:rrf"])
    old = json.loads(json.dumps(plan.record()))
    for name in old:
        for key in ("rescore", "scorer", "dense"):
            old[name]["options"].pop(key, None)
    again = SystemPlan.from_record(old, plan.names)
    assert again.nodes["vector:model=wordllama"].options.rescore == 0
    ts = again.nodes["two-stage:top_docs=5:rrf"].options
    assert (ts.scorer, ts.dense, ts.top_docs) == ("fusion", "hamming", 5)
    # a record that states the options keeps them
    kept = SystemPlan.from_record(plan.record(), plan.names).nodes["vector:model=wordllama"].options
    assert kept.rescore == DEFAULT_RESCORE != 0


# ------------------------------------------------------------------------------------------------------------------
# runs on the tiny corpus


@pytest.fixture
def opts() -> RunOptions:
    """Runs of the unit tests use the fast wordllama model (the default, use, is tested in test_embedders)."""
    return RunOptions(bootstrap_reps=200, system_defaults={"vector": VectorOptions(model="wordllama")})


def _run(tiny_goldset, tiny_corpus, tmp_path, systems, opts, run_id="r"):
    return run(
        tiny_goldset,
        tiny_corpus,
        systems,
        workdir=tmp_path / "wd",
        runs_dir=tmp_path / "runs",
        run_id=run_id,
        options=opts,
    )


def test_named_fusions_give_the_short_names_rankings(tiny_corpus, tiny_goldset, tmp_path, opts):
    systems = ["bm25", "vector", "rrf", "rrf:bm25+vector", "w0.75", "w0.75:bm25+vector", "mnz", "mnz:bm25+vector"]
    systems.append("vector:binarize=centered")
    path = _run(tiny_goldset, tiny_corpus, tmp_path, systems, opts)
    rows = _rows(path)
    man = json.loads((path / "manifest.json").read_text("utf-8"))
    assert man["systems"] == systems and list(man["system_options"]) == [*systems[:2], *systems[2:]]
    for qid in ("SP-001", "SP-002", "MD-001"):
        b, v = rows[("bm25", qid)], rows[("vector", qid)]
        for short, named in (("rrf", "rrf:bm25+vector"), ("w0.75", "w0.75:bm25+vector"), ("mnz", "mnz:bm25+vector")):
            assert rows[(short, qid)]["docs"] == rows[(named, qid)]["docs"]
            assert rows[(short, qid)]["chunks"] == rows[(named, qid)]["chunks"]
            assert rows[(short, qid)]["metrics"] == rows[(named, qid)]["metrics"]
        # independently: the fusion of the two stored (cut) input rankings
        assert _pairs(rows[("rrf", qid)]["docs"]) == rrf([_pairs(b["docs"]), _pairs(v["docs"])], k=60, depth=50)
        assert _pairs(rows[("mnz", qid)]["docs"]) == comb_mnz([_pairs(b["docs"]), _pairs(v["docs"])], depth=50)
        assert _pairs(rows[("w0.75", qid)]["chunks"]) == weighted_fusion(
            _pairs(b["chunks"]), _pairs(v["chunks"]), 0.75, depth=200
        )
    cfg = man["system_configs"]
    assert cfg["vector"]["binarize"] == "sign" and cfg["vector:binarize=centered"]["binarize"] == "centered"
    assert cfg["rrf:bm25+vector"]["inputs"]["vector"]["binarize"] == "sign"


def test_a_plugin_fused_with_bm25_and_a_missing_level(tiny_corpus, tiny_goldset, tmp_path, opts):
    systems = [TOY, "rrf:bm25+toy", "w0.6:bm25+toy"]
    path = _run(tiny_goldset, tiny_corpus, tmp_path, [*systems, "bm25"], opts)
    rows = _rows(path)
    summary = json.loads((path / "summary.json").read_text("utf-8"))["systems"]
    man = json.loads((path / "manifest.json").read_text("utf-8"))
    assert summary["toy"]["all"]["overall"]["evidence_mrr"]["mean"] is None  # no chunk ranking
    assert summary["toy"]["all"]["overall"]["mrr"]["mean"] is not None
    # tala, sanción / tiie, días: a tie, put in id order although the plugin returned ley-b first
    assert rows[("toy", "MD-001")]["docs"] == [["dof-d", 2.0], ["ley-b", 2.0]]
    for qid in ("SP-001", "SP-002", "MD-001"):
        b, t = rows[("bm25", qid)], rows[("toy", qid)]
        fused = rows[("rrf:bm25+toy", qid)]
        assert _pairs(fused["docs"]) == rrf([_pairs(b["docs"]), _pairs(t["docs"])], depth=50)
        # the toy has no chunk ranking: the chunk level fuses bm25 alone, and says so
        assert _pairs(fused["chunks"]) == rrf([_pairs(b["chunks"])], depth=200)
        assert fused["flags"]["partial_chunk_fusion"] is True and "partial_doc_fusion" not in fused["flags"]
        w = rows[("w0.6:bm25+toy", qid)]
        assert _pairs(w["docs"]) == weighted_fusion(_pairs(b["docs"]), _pairs(t["docs"]), 0.6, depth=50)
    assert summary["rrf:bm25+toy"]["all"]["overall"]["evidence_mrr"]["mean"] is not None
    toy_cfg = man["system_configs"]["toy"]
    assert toy_cfg["plugin"]["attribute"] == "ToyRetriever" and len(toy_cfg["plugin"]["sha256"]) == 64
    assert toy_cfg["config"]["name"] == "toy" and man["system_options"]["toy"]["kind"] == "py"
    assert man["system_configs"]["rrf:bm25+toy"]["inputs"]["toy"] == toy_cfg


def test_two_stage_over_any_system_with_a_toy_reranker(tiny_corpus, tiny_goldset, tmp_path, opts):
    ts = f"two-stage[reranker={RERANK};rerank_top=3;vector=none]:rrf:bm25+toy"
    plain = "two-stage[vector=none]:rrf:bm25+toy"
    path = _run(tiny_goldset, tiny_corpus, tmp_path, [TOY, ts, plain], opts)
    rows = _rows(path)
    man = json.loads((path / "manifest.json").read_text("utf-8"))
    cfg = man["system_configs"][ts]
    assert cfg["first_stage"] == "rrf:bm25+toy" and cfg["reranker"]["name"] == "toy-reranker"
    assert cfg["reranker"]["rerank_top"] == 3 and man["system_options"][ts]["plugin"]["attribute"] == "ToyReranker"
    with Corpus(man["corpus"]["db"]) as c:
        texts = dict(c.conn.execute("SELECT chunk_id, text FROM chunks").fetchall())
    questions = {r.qid: r.question for r in load_goldset(tiny_goldset).records}
    reranker = load_plugin(RERANK, protocol=("predict",)).obj
    moved = 0
    for qid, q in questions.items():
        r, p = rows[(ts, qid)], rows[(plain, qid)]
        assert r["docs"] == p["docs"]  # documents are the first stage's
        head = [c for c, _ in p["chunks"][:3]]
        scores = reranker.predict([(q, texts[c]) for c in head])
        want = [c for c, _ in sorted(zip(head, scores, strict=True), key=lambda x: (-x[1], x[0]))]
        assert [c for c, _ in r["chunks"][:3]] == want
        assert [c for c, _ in r["chunks"][3:]] == [c for c, _ in p["chunks"][3:]]
        assert r["flags"]["n_reranked"] == len(head)
        moved += want != head
    assert moved  # the reranker changed some order: the check above is not vacuous


def test_a_run_replays_exactly_from_its_manifest(tiny_corpus, tiny_goldset, tmp_path, opts):
    systems = [TOY, "rrf:bm25+toy", "vector:binarize=centered", "w0.5:bm25+vector:binarize=centered"]
    first = _run(tiny_goldset, tiny_corpus, tmp_path, systems, opts, "first")
    man = json.loads((first / "manifest.json").read_text("utf-8"))
    plan = SystemPlan.from_record(man["system_options"], man["systems"])
    again = _run(tiny_goldset, tiny_corpus, tmp_path, plan, RunOptions(bootstrap_reps=200), "again")
    a, b = _rows(first), _rows(again)
    assert a == b
    man2 = json.loads((again / "manifest.json").read_text("utf-8"))
    assert man2["system_options"] == man["system_options"]


# ------------------------------------------------------------------------------------------------------------------
# the command line


def _cli(tiny_corpus, tiny_goldset, tmp_path, systems, *extra):
    return CliRunner().invoke(
        app,
        [
            "run",
            "--corpus",
            str(tiny_corpus),
            "--goldset",
            str(tiny_goldset),
            "--systems",
            systems,
            "--workdir",
            str(tmp_path / "wd"),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--run-id",
            "cli",
            "--bootstrap-reps",
            "200",
            "--model",
            "wordllama",
            *extra,
        ],
    )


def test_cli_plugs_a_toy_retriever_in_and_fuses_it_with_bm25(tiny_corpus, tiny_goldset, tmp_path):
    r = _cli(tiny_corpus, tiny_goldset, tmp_path, f"{TOY},rrf:bm25+toy,bm25", "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["kind"] == "run" and out["path"].endswith("cli")
    summary = out["data"]["systems"]
    assert list(summary) == ["toy", "rrf:bm25+toy", "bm25"]
    rows = _rows(tmp_path / "runs" / "cli")
    for qid in ("SP-001", "SP-002", "MD-001"):
        b, t = rows[("bm25", qid)], rows[("toy", qid)]
        assert _pairs(rows[("rrf:bm25+toy", qid)]["docs"]) == rrf([_pairs(b["docs"]), _pairs(t["docs"])], depth=50)


def test_cli_reaches_the_two_stage_reranker_option(tiny_corpus, tiny_goldset, tmp_path):
    ts = f"two-stage[reranker={RERANK};rerank_top=2;vector=none]:rrf:bm25+hyb"
    r = _cli(tiny_corpus, tiny_goldset, tmp_path, f"{TOY},hyb=w0.5:bm25+toy,{ts}")
    assert r.exit_code == 0, r.output
    man = json.loads((tmp_path / "runs" / "cli" / "manifest.json").read_text("utf-8"))
    assert man["systems"] == ["toy", "hyb", ts]
    opts = man["system_options"]
    assert opts[ts]["options"]["reranker"] == RERANK and opts[ts]["options"]["rerank_top"] == 2
    assert opts[ts]["inputs"] == ["rrf:bm25+hyb", "bm25"] and opts["rrf:bm25+hyb"]["inputs"] == ["bm25", "hyb"]
    assert opts["hyb"]["text"] == "w0.5:bm25+toy" and man["system_configs"][ts]["reranker"]["rerank_top"] == 2
    # a fusion with inputs of its own cannot be written inline as an input ('+' separates inputs): name it first
    r = _cli(tiny_corpus, tiny_goldset, tmp_path, f"{TOY},rrf:bm25+w0.5:bm25+toy")
    assert r.exit_code == 2 and "wsum takes exactly 2 inputs, got 1" in r.output


def test_cli_vector_flags_are_the_vector_defaults(tiny_corpus, tiny_goldset, tmp_path):
    r = _cli(tiny_corpus, tiny_goldset, tmp_path, "vector,vector:binarize=sign", "--binarize", "centered")
    assert r.exit_code == 0, r.output
    man = json.loads((tmp_path / "runs" / "cli" / "manifest.json").read_text("utf-8"))
    assert man["system_configs"]["vector"]["binarize"] == "centered"
    assert man["system_configs"]["vector:binarize=sign"]["binarize"] == "sign"


@pytest.mark.parametrize(
    ("systems", "extra", "message"),
    [
        ("mine=py:no_such_module_here:X", (), "no module named 'no_such_module_here'"),
        (f"mine=py:{TOY_FILE}:Nope", (), "has no attribute 'Nope'"),
        (f"mine=py:{TOY_FILE}:NotARetriever", (), "is not a retriever"),
        (f"mine=py:{TOY_FILE}:BadResults", (), r"search returned 0 results for 1 queries"),  # asked in blocks
        (f"mine=py:{TOY_FILE}:Crashes", (), r"search failed \(ValueError: index offline\)"),
        ("vector", ("--binarize", "x"), "--binarize: Input should be 'sign' or 'centered'"),
        ("vector", ("--index-fraction", "0.5", "--until", "2024-01-01"), "mutually exclusive"),
    ],
)
def test_cli_refuses_bad_systems_with_exit_2(tiny_corpus, tiny_goldset, tmp_path, systems, extra, message):
    import re

    r = _cli(tiny_corpus, tiny_goldset, tmp_path, systems, *extra)
    assert r.exit_code == 2, r.output
    assert re.search(message, r.output.replace("\n", "")), r.output
    assert not (tmp_path / "runs" / "cli").exists()
