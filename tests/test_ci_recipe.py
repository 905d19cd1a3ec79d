"""The CI recipe cannot rot (issue 17 item 2): the GitHub Actions workflow's steps run here, in order, from a fresh
clone of this repository's HEAD, and the GitLab job's script runs the same way.

Only the clone is fresh. The interpreter is the test environment's (``python`` on ``PATH`` is ``sys.executable``;
the workflow calls ``python -m harness``), the ``install`` step is stood in for by that environment (its extras are
checked against ``pyproject.toml``), the work directory is warm (``HARNESS_WORKDIR``, filled by the baseline run the
test makes), and every ``uses:`` step has a stand-in: checkout = the clone, setup-python = ``sys.executable``,
cache/restore = the corpus and work directory the test wrote (their ``path`` must be ``HARNESS_CORPUS`` /
``HARNESS_WORKDIR``; a drive can make the work directory a miss), cache/save = a record of what would be saved,
upload-artifact / sticky comment / JUnit report = copies into folders of ``tmp_path``. ``hashFiles`` is the sha256
of the clone's file; ``steps.<id>.outcome`` and ``steps.<id>.outputs.<name>`` conditions are evaluated. Both files are
also linted against the GitHub workflow and GitLab CI schemas (``check-jsonschema``, the test extra), and checked
for the cache and artifact rules of issue 28: no cache is saved only on success, no key holds a run id, no artifact
is uploaded before the gate step, the model is the committed baseline's, no deprecated option is used. The
corpus (30 short documents) and gold set (30 questions, one document each) are written by the test; the baseline is a
``harness run --systems bm25`` made here. Three drives see the documented exit codes: PASS 0 (the candidate is
``harness run`` of the same system), FAIL 1 and INCONCLUSIVE 3 (the candidate is ``harness evaluate`` of a TREC file:
every gold document pushed to rank 2 to 6, or three questions' gold document swapped to rank 2), with the JSON verdict,
the JUnit XML (parsed, schema-shaped) and the Markdown comment checked each time.

A workflow that uses an expression, condition or action this runner does not know fails the test rather than being
skipped, so the runner and the recipe change together.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from conftest import write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = ".github/workflows/harness-gate.yml"
GITLAB = "ci/gitlab-harness-gate.yml"
N = 30
EVENT = "pull_request"
RUN_URL = "https://github.example/o/r/actions/runs/42#artifacts"


def _word(i: int) -> str:
    letters = "bcdfghjklmnpqrstvz"
    return "clave" + letters[i // len(letters)] + letters[i % len(letters)] + "o"


def write_corpus(root: Path) -> Path:
    """``N`` one-paragraph laws, each with its own key word (so BM25 ranks its document first)."""
    meta = []
    for i in range(N):
        rel = f"leyes/ley_{i:03d}.md"
        text = (
            f"# Ley {i} de la contribución {_word(i)}\n\nArtículo único. La contribución {_word(i)} se fija en "
            f"{7 * i + 3} unidades de medida para el ejercicio {2000 + i}.\n"
        )
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
        meta.append({"doc_id": f"ley-{i:03d}", "path": rel, "title": f"Ley {i}", "date": f"2024-01-{i % 28 + 1:02d}",
                     "institution": "X", "doc_type": "ley"})  # fmt: skip
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in meta) + "\n", "utf-8")
    return root


def goldset_records() -> list[dict]:
    base = {"persona": "abogado", "difficulty": "easy", "as_of": "2024-12-31", "unanswerable_reason": None,
            "answerability": "answerable", "required_hops": 1, "category": "single_passage"}  # fmt: skip
    return [
        {
            **base,
            "id": f"SP-{i:03d}",
            "question": f"¿En cuántas unidades se fija la contribución {_word(i)}?",
            "reference_answer": f"{7 * i + 3} unidades.",
            "gold_documents": [
                {
                    "document_id": f"ley-{i:03d}",
                    "relpath": f"leyes/ley_{i:03d}.md",
                    "publication_date": f"2024-01-{i % 28 + 1:02d}",
                    "section": None,
                    "role": "answer",
                    "evidence": [
                        {
                            "chunk_id": f"ley-{i:03d}#0",
                            "chunk_index": 0,
                            "quote": f"se fija en {7 * i + 3} unidades de medida",
                        }
                    ],  # fmt: skip
                }
            ],
        }
        for i in range(N)
    ]


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict:
    """Corpus, gold set, warm work directory, baseline run and the candidates' TREC files, written once."""
    tmp = tmp_path_factory.mktemp("ci")
    corpus = write_corpus(tmp / "corpus")
    goldset = write_tiny_goldset(tmp / "goldset", corpus, goldset_records())
    warm = tmp / "warm"
    r = CliRunner().invoke(app, ["run", "--corpus", str(corpus), "--goldset", str(goldset), "--systems", "bm25",
                                 "--workdir", str(warm), "--runs-dir", str(tmp / "baselines"), "--run-id", "baseline",
                                 "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    baseline = tmp / "baselines" / "baseline"
    ranked: dict[str, list[str]] = {}
    for line in (baseline / "trec" / "bm25.document.run").read_text("utf-8").splitlines():
        qid, _q0, doc, *_ = line.split()
        ranked.setdefault(qid, []).append(doc)
    gold = {f"SP-{i:03d}": f"ley-{i:03d}" for i in range(N)}
    assert all(ranked[q][0] == gold[q] for q in gold), "BM25 must rank every gold document first here"

    def trec(name: str, move: dict[str, int]) -> Path:
        lines = []
        for q, docs in sorted(ranked.items()):
            docs = list(docs)
            if q in move:
                docs.remove(gold[q])
                docs.insert(move[q] - 1, gold[q])
            lines += [f"{q} Q0 {d} {r} {100 - r} mine" for r, d in enumerate(docs, 1)]
        path = tmp / f"{name}.run"
        path.write_text("\n".join(lines) + "\n", "utf-8")
        return path

    return {
        "tmp": tmp,
        "corpus": corpus,
        "goldset": goldset,
        "warm": warm,
        "baseline": baseline,
        "fail": trec("fail", {q: 2 + i % 5 for i, q in enumerate(sorted(gold))}),
        "inconclusive": trec("inconclusive", {"SP-003": 2, "SP-013": 2, "SP-023": 2}),
    }


# --- a small runner of GitHub Actions steps ----------------------------------------------------------------------

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _resolve(text, env: dict, outputs: dict, clone: Path | None = None) -> str:
    def one(m: re.Match) -> str:
        expr = m.group(1)
        if expr.startswith("env."):
            return env[expr[4:]]
        if expr.startswith("vars."):
            return ""  # repository variables: none set here
        h = re.fullmatch(r"hashFiles\('([^']+)'\)", expr)
        if h and clone is not None:
            return hashlib.sha256((clone / h.group(1)).read_bytes()).hexdigest()
        parts = expr.split(".")
        if len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
            return outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the CI recipe test does not know the expression {m.group()!r}")

    return _EXPR.sub(one, str(text))


def _should_run(cond: str | None, failed: bool, outputs: dict | None = None, outcomes: dict | None = None) -> bool:
    if cond is None:
        return not failed
    cond = _EXPR.sub(lambda m: m.group(1), str(cond))
    terms = [t.strip() for t in cond.split("&&")]
    ok = True if "always()" in terms else not failed
    for t in terms:
        if t in ("always()", "success()"):
            continue
        m = re.fullmatch(r"github\.event_name\s*==\s*'([^']*)'", t)
        if m is not None:
            ok = ok and m.group(1) == EVENT
            continue
        m = re.fullmatch(r"steps\.([\w-]+)\.(outcome|outputs\.([\w-]+))\s*(==|!=)\s*'([^']*)'", t)
        if m is None:
            raise AssertionError(f"the CI recipe test does not know the condition {t!r}")
        sid, what, name, op, value = m.groups()
        got = (outcomes or {}).get(sid, "") if what == "outcome" else (outputs or {}).get(sid, {}).get(name, "")
        ok = ok and ((got == value) if op == "==" else (got != value))
    return ok


def _parse_outputs(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text("utf-8").splitlines() if path.exists() else []:
        key, _, value = line.partition("=")
        out[key] = value
    return out


def _extras(command: str) -> list[str]:
    m = re.search(r"-e '\.\[([^\]]*)\]'", command)
    assert m, command
    return [x for x in m.group(1).split(",") if x]


def run_workflow(clone: Path, env: dict[str, str], io: Path, misses: frozenset = frozenset()) -> tuple[int, list[str]]:
    """Run the workflow's steps in order (module docstring); returns the job's exit code (the first failing step's,
    0 when none failed) and the names of the steps run. ``misses``: the cache paths (``HARNESS_WORKDIR`` ...) whose
    restore is a miss."""
    doc = yaml.safe_load((clone / WORKFLOW).read_text("utf-8"))
    (job,) = doc["jobs"].values()
    outputs: dict[str, dict[str, str]] = {}
    outcomes: dict[str, str] = {}
    failed, code, ran = False, 0, []
    for i, step in enumerate(job["steps"]):
        sid = step.get("id", f"step{i}")
        if not _should_run(step.get("if"), failed, outputs, outcomes):
            outcomes[sid] = "skipped"
            continue
        ran.append(step.get("name", f"step {i}"))
        outcomes[sid] = "success"
        if "uses" in step:
            with_ = {k: _resolve(v, env, outputs, clone) for k, v in step.get("with", {}).items()}
            outputs[sid] = _stand_in(step["uses"], with_, env, clone, io, misses)
            continue
        assert "${{" not in step["run"], f"step {ran[-1]}: pass expressions through env:, not into run:"
        if sid == "install":  # the test environment stands in for it
            declared = tomllib.loads((clone / "pyproject.toml").read_text("utf-8"))["project"]
            assert set(_extras(step["run"])) <= set(declared["optional-dependencies"]), step["run"]
            assert "-c constraints.txt" in step["run"] and (clone / "constraints.txt").is_file()
            continue
        step_env = {**env, **{k: _resolve(v, env, outputs) for k, v in step.get("env", {}).items()}}
        out_file = io / f"output-{sid}"
        step_env["GITHUB_OUTPUT"] = str(out_file)
        script = io / f"step-{i}.sh"
        script.write_text(step["run"], "utf-8")
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=clone,
                           env=step_env, capture_output=True, text=True, timeout=300)  # fmt: skip
        (io / f"log-{i}.txt").write_text(p.stdout + p.stderr, "utf-8")
        outputs[sid] = _parse_outputs(out_file)
        if p.returncode != 0:
            outcomes[sid] = "failure"
            if not failed:
                failed, code = True, p.returncode
    return code, ran


def _stand_in(uses: str, with_: dict, env: dict, clone: Path, io: Path, misses=frozenset()) -> dict[str, str]:
    action = uses.split("@")[0]
    if action == "actions/checkout":
        assert (clone / ".git").exists()
    elif action == "actions/setup-python":
        assert shutil.which("python", path=env["PATH"]) == str(Path(env["PATH"].split(os.pathsep)[0]) / "python")
        assert with_.get("cache") == "pip", "pip's download cache"
    elif action in ("actions/cache/restore", "actions/cache/save"):
        which = {env["HARNESS_CORPUS"]: "HARNESS_CORPUS", env["HARNESS_WORKDIR"]: "HARNESS_WORKDIR"}
        assert with_["path"] in which and Path(with_["path"]).is_dir(), with_
        assert "run_id" not in with_["key"] and "run_number" not in with_["key"], with_["key"]
        if action == "actions/cache/save":
            with (io / "saved.txt").open("a", encoding="utf-8") as f:
                f.write(f"{which[with_['path']]} {with_['key']}\n")
            return {}
        return {"cache-hit": "false" if which[with_["path"]] in misses else "true"}
    elif action == "actions/upload-artifact":
        shutil.copytree(clone / with_["path"], io / "artifacts" / with_["name"])
        return {"artifact-url": "https://ci.example/artifacts/harness-gate"}
    elif action == "marocchino/sticky-pull-request-comment":
        (io / "comments").mkdir(exist_ok=True)
        shutil.copy(clone / with_["path"], io / "comments" / f"{with_['header']}.md")
    elif action == "mikepenz/action-junit-report":
        (io / "junit").mkdir(exist_ok=True)
        shutil.copy(clone / with_["report_paths"], io / "junit" / "report.xml")
    else:
        raise AssertionError(f"the CI recipe test has no stand-in for {uses!r}")
    return {}


def fresh_clone(dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True, capture_output=True, timeout=120)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    got = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    assert got.stdout == head.stdout, "the clone is not this checkout's HEAD"
    assert (dest / WORKFLOW).is_file() and (dest / GITLAB).is_file(), "commit the CI recipe before running this test"
    return dest


def job_env(variables: dict, setup: dict, tmp: Path, **overrides: str) -> dict[str, str]:
    """The workflow's / job's variables with the test's corpus, gold set, baseline and warm work directory, and
    ``python`` resolving to ``sys.executable``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "python"  # exec's the real path, so a venv interpreter keeps its venv
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', "utf-8")
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "GITHUB_", "CI_"))}
    env.update({k: str(v) for k, v in variables.items()})
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        HARNESS_CORPUS=str(setup["corpus"]),
        HARNESS_WORKDIR=str(setup["warm"]),
        HARNESS_GOLDSET=str(setup["goldset"]),
        HARNESS_BASELINE=str(setup["baseline"]),
        GITHUB_EVENT_NAME=EVENT,
        GITHUB_SERVER_URL="https://github.example",
        GITHUB_REPOSITORY="o/r",
        GITHUB_RUN_ID="42",
        GITHUB_STEP_SUMMARY=str(tmp / "summary.md"),
        COLUMNS="150",
    )
    env.update(overrides)
    return env


def _junit(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == 2  # mrr and recall@10
    out = {}
    for c in cases:
        kids = {k.tag: k for k in c}
        out[c.get("name")] = next((t for t in ("failure", "skipped") if t in kids), "pass")
    assert int(suite.get("failures")) == list(out.values()).count("failure")
    assert int(suite.get("skipped")) == list(out.values()).count("skipped")
    return out


DRIVES = {
    # decision, exit code, candidate overrides, JUnit outcome of the mrr check, cache misses
    "PASS": ("PASS", 0, {}, "pass", frozenset()),
    "FAIL": ("FAIL", 1, {"rankings": "fail"}, "failure", frozenset({"HARNESS_WORKDIR"})),
    "INCONCLUSIVE": ("INCONCLUSIVE", 3, {"rankings": "inconclusive"}, "skipped", frozenset()),
}


@pytest.mark.parametrize("drive", list(DRIVES))
def test_github_workflow_steps_from_a_fresh_clone(setup, tmp_path, drive):
    decision, code, cand, junit_mrr, misses = DRIVES[drive]
    clone = fresh_clone(tmp_path / "clone")
    doc = yaml.safe_load((clone / WORKFLOW).read_text("utf-8"))
    trigger = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as True
    assert list(trigger) == ["workflow_dispatch"], "the workflow must stay disabled by default"
    over = {}
    if "rankings" in cand:
        over = {"HARNESS_RANKINGS": str(setup[cand["rankings"]]), "HARNESS_SYSTEM_CANDIDATE": "mine"}
    env = job_env(doc["env"], setup, tmp_path, **over)
    io = tmp_path / "io"
    io.mkdir()
    got, ran = run_workflow(clone, env, io, misses)
    logs = "\n".join(p.read_text("utf-8") for p in sorted(io.glob("log-*.txt")))
    assert got == code, logs
    assert ran[-1] == "verdict" and "comment" in ran and "test report" in ran, ran
    assert "seed corpus" not in ran and "save corpus" not in ran  # the corpus cache was a hit
    saved = (io / "saved.txt").read_text("utf-8").split() if (io / "saved.txt").exists() else []
    constraints = hashlib.sha256((clone / "constraints.txt").read_bytes()).hexdigest()
    if misses:  # a miss is saved even though the gate said FAIL
        assert saved[0] == "HARNESS_WORKDIR" and saved[1].endswith(f"-use-{constraints}"), saved
        assert re.fullmatch(rf"harness-workdir-[0-9a-f]{{16}}-use-{constraints}", saved[1]), saved
    else:
        assert saved == [], saved
    assert "deprecated" not in logs, logs
    out = clone / "gate-out"
    verdict = json.loads((out / "verdict.json").read_text("utf-8"))
    assert verdict["kind"] == "gate" and verdict["data"]["decision"] == decision
    assert verdict["data"]["exit_code"] == code
    assert _junit(out / "gate.junit.xml")["mrr"] == junit_mrr
    assert _junit(io / "junit" / "report.xml") == _junit(out / "gate.junit.xml")
    comment = (io / "comments" / "harness-gate.md").read_text("utf-8")
    assert comment.startswith(f"## Gate: {decision} (exit {code}) on mrr, recall@10")
    assert f"[HTML report]({RUN_URL})" in comment.splitlines()
    assert (tmp_path / "summary.md").read_text("utf-8") == comment
    artifact = io / "artifacts" / "harness-gate"
    assert (artifact / "report.html").stat().st_size > 1000
    for name in ("verdict.json", "gate.junit.xml", "comment.md"):  # uploaded after the gate wrote them
        assert (artifact / name).read_bytes() == (out / name).read_bytes(), name
    assert f"gate exit code: {code}" in logs
    assert not (setup["warm"] / "gate-out").exists() and not list(REPO.glob("gate-verdict.json"))


def test_gitlab_job_script_from_a_fresh_clone(setup, tmp_path):
    clone = fresh_clone(tmp_path / "clone")
    jobs = yaml.safe_load((clone / GITLAB).read_text("utf-8"))
    job = jobs["harness-gate"]
    assert job["rules"] and all(r.get("when") == "manual" for r in job["rules"]), "manual by default"
    assert job["artifacts"]["reports"]["junit"] == "gate-out/gate.junit.xml"
    cached = {p for c in job["cache"] for p in c["paths"]}
    assert cached == {job["variables"]["HARNESS_WORKDIR"], job["variables"]["HARNESS_CORPUS"], ".cache/pip"}
    install = [line for line in job["script"] if "pip install" in line]
    assert len(install) == 1 and set(_extras(install[0])) <= set(
        tomllib.loads((clone / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    )
    script = "\n".join(line for line in job["script"] if line not in install)  # the test environment stands in
    env = job_env(job["variables"], setup, tmp_path, HARNESS_RANKINGS=str(setup["inconclusive"]),
                  HARNESS_SYSTEM_CANDIDATE="mine")  # fmt: skip
    p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=clone, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert p.returncode == 3, p.stdout + p.stderr
    assert "deprecated" not in p.stdout + p.stderr
    out = clone / "gate-out"
    assert json.loads((out / "verdict.json").read_text("utf-8"))["data"]["decision"] == "INCONCLUSIVE"
    assert _junit(out / "gate.junit.xml")["mrr"] == "skipped"
    comment = (out / "comment.md").read_text("utf-8")
    assert comment.startswith("## Gate: INCONCLUSIVE (exit 3)") and "[HTML report]" not in comment
    assert (out / "report.html").is_file() and (out / "exit-code").read_text().strip() == "3"


def _long_corpus(root: Path, docs: int = 24, paragraphs: int = 4, words: int = 120) -> Path:
    """A corpus of multi-chunk documents (known-item needs them): seeded pseudo-words, one vocabulary per document."""
    rng = random.Random(7)
    letters = "bcdfghjklmnprstvz"
    meta = []
    for d in range(docs):
        vocab = ["".join(rng.choice(letters) + rng.choice("aeiou") for _ in range(3)) for _ in range(60)]
        body = "\n\n".join(" ".join(rng.choice(vocab) for _ in range(words)) + "." for _ in range(paragraphs))
        rel = f"docs/doc_{d:03d}.md"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# Documento {d}\n\n{body}\n", "utf-8")
        meta.append({"doc_id": f"doc-{d:03d}", "path": rel, "title": f"Documento {d}", "date": "2024-02-01",
                     "institution": "X", "doc_type": "aviso"})  # fmt: skip
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", "utf-8")
    return root


def test_gitlab_job_runs_the_known_item_guard_and_exits_with_the_more_severe_code(setup, tmp_path):
    """The optional known-item guard in the GitLab job: off by default (above); with its candidate set it runs
    `harness known-item` and `harness gate --known-item`, appends its Markdown to the note, and the job exits with
    the more severe of the gate's and the guard's codes (2 > 1 > 3 > 0). Two cases: a corpus of one-chunk documents
    (no known-item query: the guard is unusable, exit 2 beats the gate's INCONCLUSIVE 3) and a corpus of multi-chunk
    documents (a real known-item verdict)."""
    from harness.evaluation.gate import EXIT_CODES

    clone = fresh_clone(tmp_path / "clone")
    job = yaml.safe_load((clone / GITLAB).read_text("utf-8"))["harness-gate"]
    assert job["variables"]["HARNESS_KNOWN_ITEM_CANDIDATE"] == "", "off by default"
    install = [line for line in job["script"] if "pip install" in line]
    script = "\n".join(line for line in job["script"] if line not in install)
    out = clone / "gate-out"

    def play(corpus: Path) -> subprocess.CompletedProcess:
        shutil.rmtree(out, ignore_errors=True)
        env = job_env(
            job["variables"],
            setup,
            tmp_path,
            HARNESS_RANKINGS=str(setup["inconclusive"]),
            HARNESS_SYSTEM_CANDIDATE="mine",
            HARNESS_KNOWN_ITEM_CANDIDATE="tfidf",
            HARNESS_CORPUS=str(corpus),
            HARNESS_KI_CACHE=str(tmp_path / "ki-cache"),
            NUMBA_DISABLE_JIT="1",
        )  # fmt: skip  (24 documents: compiling the kernels would cost 60 s)
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    p = play(setup["corpus"])  # one-chunk laws: no known-item query
    assert p.returncode == 2, p.stdout + p.stderr
    assert "no known-item query" in p.stderr and (out / "known-item-exit-code").read_text().strip() == "2"
    assert json.loads((out / "verdict.json").read_text("utf-8"))["data"]["decision"] == "INCONCLUSIVE"

    p = play(_long_corpus(tmp_path / "long"))
    assert (out / "known-item-verdict.json").is_file(), p.stdout + p.stderr
    ki = json.loads((out / "known-item-verdict.json").read_text("utf-8"))["data"]
    ki_code = EXIT_CODES[ki["decision"]]
    assert (out / "known-item-exit-code").read_text().strip() == str(ki_code)
    expected = next((c for c in (2, 1, 3) if c in (3, ki_code)), 0)  # the gold-set gate is INCONCLUSIVE (3)
    assert p.returncode == expected, (ki["decision"], p.stdout + p.stderr)
    comment = (out / "comment.md").read_text("utf-8")
    assert comment.startswith("## Gate: INCONCLUSIVE (exit 3)") and comment.count("## ") >= 2, comment
    assert "known-item" in comment.lower() and "tfidf" in comment


def test_docs_state_the_gate_exit_codes_and_are_linked_from_the_readme():
    from harness.evaluation.gate import EXIT_CODES

    text = (REPO / "docs" / "ci.md").read_text("utf-8")
    rows = dict(re.findall(r"^\| (\d) \| ([A-Za-z]+) \|", text, flags=re.M))
    assert rows == {**{str(c): d for d, c in EXIT_CODES.items()}, "2": "unusable"}
    assert "(docs/ci.md)" in (REPO / "README.md").read_text("utf-8")
    for path in (WORKFLOW, GITLAB):
        assert f"../{path}" in text
