"""What changed between the two sides of a comparison: the configuration difference ``compare``, ``gate`` and
``report`` show in every format (issue 28 item 3).

A gate or comparison is only as meaningful as the knowledge of what differs between its sides. The hard
incomparabilities (gold set sha256, corpus hash, depths) are refused before this module is reached
(:func:`harness.evaluation.runs.check_comparable`, exit 2); everything else that differs is listed here, one
:class:`Change` per differing fact, so that no difference is ever silent:

* per run (scope ``run``): ``chunker`` (the corpus chunker id; a chunker change stays paired by question),
  ``harness`` (the harness version) and ``commit`` (the git commit, 12 hex digits, ``+dirty`` kept);
* per compared system pair (scope ``system``), read from the manifests' ``system_options`` and ``system_configs``:
  ``kind``; for a vector system ``model``, ``weights`` (the model's weights sha256, 12 hex digits), ``dim``,
  ``bits`` (the binarisation rule), ``rescore``, ``center``, ``coverage`` (indexed / total chunks) and the query and
  passage prompts; for BM25 / TF-IDF ``library``, ``analyzer`` and every ``params.<name>``; for a fusion
  ``fusion`` (the method), every ``params.<name>``, ``inputs``, ``input_depth`` (its input cut per level; a
  record that predates it cut at the run's depths), and ``formula`` only when neither the method nor a
  parameter changed; for a ``py:`` retriever ``plugin`` (the spec), ``plugin.sha256`` (its file) and every scalar
  of its ``config()`` as ``config.<name>``; for a two-stage system its scalar settings (``scorer``, ``top_docs``,
  ``dense`` ...) and ``reranker.<name>``; for external rankings ``source``. The inputs a fusion or two-stage system
  reads are listed under ``<system>.<input>.<fact>`` unless that input is itself one of the compared pairs (then its
  own lines say it once).

A change's ``field`` is ``<system>.<fact>`` (the candidate's system name; a pair of two names adds a ``system``
line ``w0.75 → w0.6``) or the run fact alone. When the two systems are of different kinds only ``system`` and
``kind`` are listed: their other facts do not correspond. Two systems of one run list only the facts that differ
between two systems of one kind (``w0.25`` against ``w0.75``: the weights); the run facts and the names agree or
are in the table already. Values are display strings (``(none)`` for a fact one
side does not record); every renderer escapes them as it escapes any input string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from harness.evaluation.runs import RunRecord

__all__ = ["Change", "change_line", "changes_between", "changes_dicts", "run_facts", "system_facts"]

NONE = "(none)"
"""The value shown for a fact one side does not record."""

ARROW = "→"

_DESCRIPTIVE = frozenset(
    {
        "system",
        "kind",
        "inputs",
        "input_names",
        "formula",
        "method",
        "params",
        "documents",
        "chunks",
        "candidates",
        "chunk_lists",
        "index_keys",
        "coverage",
        "first_stage",
        "reranker",
        "library",
        "analyzer",
        "positive_scores_only",
        "similarity",
        "tie_rule",
    }
)


@dataclass(frozen=True)
class Change:
    """One configuration fact that differs between the baseline and the candidate side.

    Attributes:
        field: ``chunker``, ``harness``, ``commit`` (scope ``run``) or ``<system>.<fact>`` (scope ``system``).
        baseline, candidate: display strings of the two values (``(none)`` where a side does not record it).
        scope: ``run`` or ``system``.
    """

    field: str
    baseline: str
    candidate: str
    scope: str = "system"

    @property
    def line(self) -> str:
        """``changed: vector.model wordllama → use`` (the terminal and Markdown line, before escaping)."""
        return change_line(self)


def change_line(c: Change | Mapping) -> str:
    """``changed: <field> <baseline> → <candidate>`` for a :class:`Change` or its dict form."""
    d = asdict(c) if isinstance(c, Change) else c
    return f"changed: {d['field']} {d['baseline']} {ARROW} {d['candidate']}"


def changes_dicts(changes: Sequence[Change]) -> list[dict]:
    """The JSON form: ``[{"field", "baseline", "candidate", "scope"}, ...]``."""
    return [asdict(c) for c in changes]


def _text(value) -> str:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _short(sha: str | None) -> str | None:
    return None if not sha else str(sha)[:12]


def _kind(cfg: Mapping, record: Mapping | None) -> str:
    if record and record.get("kind"):
        return str(record["kind"])
    if cfg.get("kind"):
        return str(cfg["kind"])
    if "embedder" in cfg:
        return "vector"
    if "fusion" in cfg:
        return "fusion"
    if "top_docs" in cfg:
        return "two-stage"
    if cfg.get("source") == "external rankings":
        return "rankings"
    return str(cfg.get("system") or NONE)


def _params(out: dict, params: Mapping | None) -> None:
    for k in sorted(params or {}):
        out[f"params.{k}"] = _text(params[k])


def _scalars(out: dict, prefix: str, cfg: Mapping | None, skip=frozenset()) -> None:
    for k in sorted(cfg or {}):
        v = cfg[k]
        if k in skip or isinstance(v, dict):
            continue
        out[f"{prefix}{k}"] = _text(v)


def system_facts(cfg: Mapping | None, record: Mapping | None = None) -> dict[str, str]:
    """The identifying facts of one system, ``{fact: display string}`` in a fixed order (module docstring).

    Args:
        cfg: the system's entry of the manifest's ``system_configs`` (``{}`` or ``None`` when not recorded).
        record: its entry of the manifest's ``system_options`` (``kind``), when recorded.

    Returns:
        An ordered dict; a fusion's or two-stage system's inputs are not included (:func:`input_configs`).
    """
    cfg = dict(cfg or {})
    kind = _kind(cfg, record)
    out = {"kind": kind}
    if kind == "vector" or "embedder" in cfg:
        emb = cfg.get("embedder") or {}
        cov = cfg.get("coverage") or {}
        out["model"] = _text(emb.get("model") or cfg.get("model_id"))
        out["weights"] = _text(_short(cfg.get("weights_sha256") or emb.get("weights_sha256")))
        out["dim"] = _text(cfg.get("dim"))
        out["bits"] = _text(cfg.get("binarize"))
        out["rescore"] = _text(cfg.get("rescore"))
        out["center"] = "yes" if cfg.get("center") else "no"
        if cov:
            out["coverage"] = f"{cov.get('n_indexed_chunks')}/{cov.get('n_total_chunks')} chunks"
        for p in ("query_prompt", "passage_prompt"):
            if emb.get(p):
                out[p] = _text(emb[p])
    elif kind == "fusion" or "fusion" in cfg:
        out["fusion"] = _text(cfg.get("method") or cfg.get("fusion"))
        _params(out, cfg.get("params"))
        out["inputs"] = "+".join(cfg.get("input_names") or list(cfg.get("inputs") or {}))
        depth = cfg.get("input_depth")
        if isinstance(depth, dict):
            out["input_depth"] = f"documents {_text(depth.get('document'))}, chunks {_text(depth.get('chunk'))}"
        out["formula"] = _text(cfg.get("formula"))
    elif kind == "py":
        plug = cfg.get("plugin") or {}
        out["plugin"] = _text(plug.get("spec"))
        out["plugin.sha256"] = _text(_short(plug.get("sha256")))
        _scalars(out, "config.", cfg.get("config"))
    elif kind == "rankings":
        out["source"] = _text(cfg.get("source"))
    else:
        if cfg.get("library"):
            out["library"] = _text(cfg["library"])
        if isinstance(cfg.get("analyzer"), dict):
            out["analyzer"] = _text(cfg["analyzer"].get("analyzer_id"))
        _params(out, cfg.get("params"))
        _scalars(out, "", cfg, skip=_DESCRIPTIVE)
        if isinstance(cfg.get("reranker"), dict):
            _scalars(out, "reranker.", cfg["reranker"])
    return out


def input_configs(cfg: Mapping | None) -> dict[str, dict]:
    """``{input name: its config}`` of a fusion or two-stage system (``{}`` for any other)."""
    inputs = (cfg or {}).get("inputs")
    return {k: v for k, v in inputs.items() if isinstance(v, dict)} if isinstance(inputs, dict) else {}


def run_facts(run: RunRecord) -> dict[str, str]:
    """The run-level facts: ``chunker``, ``harness`` (version) and ``commit`` (12 hex digits, ``+dirty`` kept)."""
    m = run.manifest
    commit = m.git_commit
    if commit:
        commit = commit[:12] + ("+dirty" if "dirty" in commit else "")
    return {
        "chunker": _text(m.corpus.chunker_id or m.goldset.chunker_version),
        "harness": _text(m.harness_version),
        "commit": _text(commit),
    }


def _diff(prefix: str, fa: Mapping[str, str], fb: Mapping[str, str], scope: str) -> list[Change]:
    out = []
    for key in list(dict.fromkeys([*fa, *fb])):
        va, vb = fa.get(key, NONE), fb.get(key, NONE)
        if va != vb:
            out.append(Change(f"{prefix}{key}", va, vb, scope))
    changed = {c.field for c in out}
    if {f"{prefix}fusion", *(k for k in changed if k.startswith(f"{prefix}params."))} & changed:
        out = [c for c in out if c.field != f"{prefix}formula"]  # the formula says what method and params say
    return out


def _records(run: RunRecord) -> dict:
    rec = getattr(run.manifest, "system_options", None)
    if rec is None:
        rec = (run.manifest.model_extra or {}).get("system_options")
    return rec if isinstance(rec, dict) else {}


def _system_changes(prefix: str, ca: Mapping, cb: Mapping, ra, rb, skip_inputs: set[str]) -> list[Change]:
    fa, fb = system_facts(ca, ra), system_facts(cb, rb)
    if fa["kind"] != fb["kind"]:
        return [Change(f"{prefix}kind", fa["kind"], fb["kind"])]
    out = _diff(prefix, fa, fb, "system")
    ia, ib = input_configs(ca), input_configs(cb)
    for name in dict.fromkeys([*ia, *ib]):
        if name in skip_inputs:
            continue
        if name not in ia or name not in ib:
            continue  # the "inputs" line already says that the input lists differ
        out += _system_changes(f"{prefix}{name}.", ia[name], ib[name], None, None, skip_inputs)
    return out


def _with_input_depth(cfg: Mapping, run: RunRecord) -> Mapping:
    """A fusion's config with its ``input_depth`` filled in from the run's depths where the record predates it (a
    fusion then cut its inputs at the run's depths), inputs included; any other config unchanged."""
    if not isinstance(cfg, Mapping):
        return cfg
    out = dict(cfg)
    if "fusion" in out and "input_depth" not in out:
        out["input_depth"] = {"document": run.manifest.depths.document, "chunk": run.manifest.depths.chunk}
    if isinstance(out.get("inputs"), dict):
        out["inputs"] = {k: _with_input_depth(v, run) for k, v in out["inputs"].items()}
    return out


def changes_between(a: RunRecord, b: RunRecord, pairs: Sequence[tuple[str, str]]) -> list[Change]:
    """Every configuration fact that differs between run ``a`` (baseline) and run ``b`` (candidate) for the compared
    system ``pairs`` (module docstring): the run facts first (when the records are two different runs), then per
    pair ``system`` (when the names differ) and the system facts, deduplicated in order.

    Args:
        a, b: the two run records, already checked comparable (gold set, corpus, depths).
        pairs: ``(system of a, system of b)`` as compared (:func:`harness.evaluation.pairing.pick_pairs`).

    Returns:
        A list of :class:`Change`, empty when the two sides agree on every fact.
    """
    out: list[Change] = []
    same_run = a.path.resolve() == b.path.resolve()
    if not same_run:
        out += _diff("", run_facts(a), run_facts(b), "run")
    compared = {sa for sa, sb in pairs if sa == sb}
    ra, rb = _records(a), _records(b)
    for sa, sb in pairs:
        ca = _with_input_depth(a.manifest.system_configs.get(sa, {}), a)
        cb = _with_input_depth(b.manifest.system_configs.get(sb, {}), b)
        got = _system_changes(f"{sb}.", ca, cb, ra.get(sa), rb.get(sb), compared)
        if same_run and got[:1] and got[0].field == f"{sb}.kind":
            continue  # two kinds of one run (bm25 against vector): the names say it
        if sa != sb and not same_run:
            out.append(Change("system", sa, sb))
        out += got
    return list(dict.fromkeys(out))


def changes_across_runs(base: RunRecord, base_system: str, runs: Sequence[RunRecord]) -> list[tuple[str, list[dict]]]:
    """The changes from the baseline run to every other run of a report (``harness report``).

    Per other run: the run facts, and the system facts of every system name both runs hold (each against its
    namesake); when they share no name, the baseline system against the other run's first system.

    Returns:
        ``[("<baseline run id> → <run id>", [change dicts]), ...]``, one item per run other than ``base``, in order
        (an empty list of changes when the two runs agree on every fact).
    """
    out = []
    for run in runs:
        if run.path.resolve() == base.path.resolve():
            continue
        pairs = [(s, s) for s in run.systems if s in base.systems] or [(base_system, run.systems[0])]
        out.append((f"{base.run_id} {ARROW} {run.run_id}", changes_dicts(changes_between(base, run, pairs))))
    return out
