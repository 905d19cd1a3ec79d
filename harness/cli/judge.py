"""Verbs that judge run records: compare, gate, power and sweep."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import typer

from harness.cli._checks import at_least, number, refuse_unused
from harness.cli._common import FORMAT, JSON_ALIAS, OUT, app, check_paths, emit, err_console, output_format, renamed
from harness.errors import HarnessError, HarnessInputError

ALLOW_UNHASHED = typer.Option(
    False, "--allow-unhashed", help="Accept, unverified, a run record written before records were hashed."
)
SPLIT = typer.Option("all", "--split", help="Questions judged: all, dev or test (the gold set's split field).")
QIDS = typer.Option(
    None, "--qids", help="Judge only these question ids, on both sides (comma-separated, repeatable; unknown: exit 2)."
)
CATEGORY = typer.Option(None, "--category", help="Judge only these categories, on both sides (comma-separated).")


def _metrics(values: list[str] | None, default: str) -> list[str]:
    """``--metric`` values, repeatable and comma-separated (``--metric mrr,recall@10 --metric all_hop@10``), as
    canonical ids (:meth:`harness.metrics.MetricSpec.parse`: ``ndcg_cut_10`` -> ``nDCG@10``, ``MRR`` -> ``mrr``).

    Raises:
        MetricError: an unknown, ambiguous or malformed id (exit 2).
    """
    from harness.metrics import MetricSpec

    out = [m.strip() for v in (values or [default]) for m in v.split(",") if m.strip()]
    return list(dict.fromkeys(MetricSpec.parse(m).id for m in out))  # trec_eval spellings, case: one note each


@app.command()
def compare(
    run_a: Path = typer.Argument(..., metavar="RUN_A", help="Baseline run record (RUN)."),
    run_b: Path = typer.Argument(
        ..., metavar="RUN_B", help="Candidate run record (RUN); may be the same folder as RUN_A."
    ),
    metric: list[str] = typer.Option(
        None,
        "--metric",
        help="Metric id(s), repeatable or comma-separated (default: the compare set, "
        "harness.metrics.METRIC_SETS['compare']; ids: mrr, hit@k, recall@k, ndcg@k, evidence_recall@k, ...).",
    ),
    metrics_old: str = typer.Option(None, "--metrics", hidden=True, help="Deprecated: --metric."),
    system_a: str = typer.Option(None, "--baseline-system", help="System of RUN_A compared (when it holds several)."),
    system_b: str = typer.Option(None, "--candidate-system", help="System of RUN_B compared (when it holds several)."),
    system_a_old: str = typer.Option(None, "--system-a", hidden=True, help="Deprecated: --baseline-system."),
    system_b_old: str = typer.Option(None, "--system-b", hidden=True, help="Deprecated: --candidate-system."),
    reps: int = typer.Option(10000, help="Randomisation-test sign flips.", callback=at_least(1)),
    seed: int = typer.Option(
        0, help="Seed of the randomisation test (and any bootstrap interval).", callback=at_least(0)
    ),
    split: str = SPLIT,
    qids: list[str] = QIDS,
    category: list[str] = CATEGORY,
    allow_unhashed: bool = ALLOW_UNHASHED,
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Paired differences B - A with clustered intervals, randomisation tests and win/tie/loss counts."""
    from harness.evaluation.compare import compare_runs
    from harness.evaluation.runs import check_hashed
    from harness.evaluation.subset import Subset, load_restricted

    fmt = output_format(fmt, as_json, out=out, kind="comparison")
    check_paths([("--out", out)], [("RUN_A", run_a), ("RUN_B", run_b)])
    metric = renamed(metric, [metrics_old] if metrics_old else [], new="--metric", old="--metrics")
    system_a = renamed(system_a, system_a_old, new="--baseline-system", old="--system-a")
    system_b = renamed(system_b, system_b_old, new="--candidate-system", old="--system-b")
    ids = tuple(_metrics(metric, "")) or None  # None: the default list (across chunkers, its budget form)
    for field, path in (("RUN_A", run_a), ("RUN_B", run_b)):
        check_hashed(path, allow_unhashed=allow_unhashed, field=field)
    subset = Subset.of(qids, category)
    rep = compare_runs(
        load_restricted(run_a, subset),
        load_restricted(run_b, subset),
        metrics=ids,
        system_a=system_a,
        system_b=system_b,
        reps=reps,
        seed=seed,
        split=split,
    )
    emit("comparison", rep, fmt, out)


GATE_FORMAT = typer.Option(
    "table",
    "--format",
    help="Output format: table (terminal), json (one envelope), markdown (a pull-request comment), junit (JUnit "
    "XML for CI test reporters), or csv/tsv (one row per check, for a dashboard).",
)


def check_report_url(url: str | None) -> str | None:
    """``url`` when it is an absolute http(s) URL (or ``None``).

    Raises:
        HarnessInputError: another scheme, no host, or white space (naming ``--report-url``).
    """
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(ch.isspace() for ch in url):
        raise HarnessInputError(f"--report-url {url!r}: expected an absolute http:// or https:// URL")
    return url


def _verdict_target(verdict: str | None, fmt: str, out: str) -> tuple[str, str | None]:
    """``(format, file for the JSON verdict)`` under the deprecated ``--verdict``: ``-`` is ``--format json`` on
    stdout; a FILE gets the verdict's JSON data beside the ``--format`` output (checked like ``--out``)."""
    if verdict is None:
        return fmt, None
    if verdict == "-":
        if out != "-" or fmt not in ("table", "json"):
            raise HarnessInputError(f"--verdict -: stdout already carries --format {fmt} (use --format json)")
        return "json", None
    from harness.report.formats import check_output

    check_output(verdict, field="--verdict")
    if out != "-" and os.path.realpath(out) == os.path.realpath(verdict):
        raise HarnessInputError(f"--verdict {verdict}: the same file as --out; give one of them")
    return fmt, verdict


@app.command()
def gate(
    ctx: typer.Context,
    baseline: Path = typer.Option(None, "--baseline", help="Baseline run record (optional with --known-item)."),
    candidate: Path = typer.Option(None, "--candidate", help="Candidate run record (optional with --known-item)."),
    metric: list[str] = typer.Option(
        None, "--metric", help="Metric id(s) judged, repeatable or comma-separated (default mrr); each is one check."
    ),
    margin: float = typer.Option(0.02, help="Non-inferiority margin: a finite number >= 0 (absolute, metric units)."),
    alpha: float = typer.Option(0.05, help="One-sided level (the check intervals are two-sided at 1 - 2 alpha)."),
    system_baseline: str = typer.Option(
        None, "--baseline-system", help="Baseline system (when BASELINE holds several)."
    ),
    system_candidate: str = typer.Option(
        None, "--candidate-system", help="Candidate system (when CANDIDATE holds several)."
    ),
    system_baseline_old: str = typer.Option(
        None, "--system-baseline", hidden=True, help="Deprecated: --baseline-system."
    ),
    system_candidate_old: str = typer.Option(
        None, "--system-candidate", hidden=True, help="Deprecated: --candidate-system."
    ),
    guard: list[str] = typer.Option(
        None,
        "--guard",
        help="Per-category guard CATEGORY:MARGIN (first metric) or CATEGORY:METRIC:MARGIN, repeatable; three-way too.",
    ),
    split: str = SPLIT,
    qids: list[str] = QIDS,
    category: list[str] = CATEGORY,
    on_inconclusive: str = typer.Option(
        None, "--on-inconclusive", help="Map an INCONCLUSIVE verdict (exit 3) to fail (exit 1) or pass (exit 0)."
    ),
    allow_unhashed: bool = ALLOW_UNHASHED,
    report_url: str = typer.Option(
        None, "--report-url", help="Link to the HTML report (http or https URL), shown by markdown and junit."
    ),
    verdict: str = typer.Option(None, "--verdict", hidden=True, help="Deprecated: --out FILE --format json."),
    known_item: Path = typer.Option(
        None,
        "--known-item",
        help="Known-item check (a label-free proxy for source attribution): the output folder of harness known-item "
        "--systems A,B; alone it is the whole gate, with --baseline/--candidate one more check.",
    ),
    known_item_margin: float = typer.Option(
        None,
        "--known-item-margin",
        help="Margin of the known-item check (metric units, >= 0; required with --known-item).",
        callback=number(0),
    ),
    known_item_metric: str = typer.Option(
        "hit@1", "--known-item-metric", help="Known-item outcome judged: hit@1 or rr (reciprocal rank)."
    ),
    fmt: str = GATE_FORMAT,
    out: str = OUT,
) -> None:
    """Non-inferiority gate: exit 0 PASS (lower bound > -margin), 1 FAIL (upper bound < -margin), 2 unusable or
    incomparable input, 3 INCONCLUSIVE (neither; --on-inconclusive maps it). PASS needs every metric and guard to
    pass, FAIL any one to fail (intersection-union, no multiplicity adjustment). --known-item KI_DIR adds (or, alone,
    is) the known-item check: the census difference on this corpus and a document-clustered interval with its
    measured coverage (docs/ci.md). Nothing is written to a file unless --out is given; questions missing on either
    side are always warned about on stderr."""
    from harness.evaluation.gate import gate as do_gate
    from harness.evaluation.runs import check_hashed
    from harness.evaluation.subset import Subset, load_restricted
    from harness.report.formats import write_output

    fmt = output_format(fmt, out=out, kind="gate")
    fmt, verdict_file = _verdict_target(verdict, fmt, out)
    check_paths(
        [("--out", out), ("--verdict", verdict)],
        [("--baseline", baseline), ("--candidate", candidate), ("--known-item", known_item)],
    )
    system_baseline = renamed(system_baseline, system_baseline_old, new="--baseline-system", old="--system-baseline")
    system_candidate = renamed(
        system_candidate, system_candidate_old, new="--candidate-system", old="--system-candidate"
    )
    if known_item is None:
        why = "without --known-item (they set its check); give --known-item KI_DIR or leave them out"
        refuse_unused(ctx, ("known_item_margin", "known_item_metric"), why)
    elif baseline is None and candidate is None:
        refuse_unused(
            ctx,
            ("qids", "category", "split", "metric", "margin", "guard", "allow_unhashed"),
            "with --known-item alone (they judge the --baseline/--candidate run records); give both runs or leave "
            "them out (the known-item check has --known-item-margin and --known-item-metric)",
        )
    subset = Subset.of(qids, category)
    v = None
    if baseline is not None or candidate is not None or known_item is None:
        if baseline is None or candidate is None:
            raise HarnessInputError("--baseline and --candidate: give both run records (or --known-item alone)")
        for field, path in (("--baseline", baseline), ("--candidate", candidate)):
            check_hashed(path, allow_unhashed=allow_unhashed, field=field)
        v = do_gate(
            load_restricted(baseline, subset),
            load_restricted(candidate, subset),
            metric=_metrics(metric, "mrr"),
            margin=margin,
            alpha=alpha,
            system_baseline=system_baseline,
            system_candidate=system_candidate,
            guards=list(guard or []),
            split=split,
            on_inconclusive=on_inconclusive,
        )
        if not subset.is_all:  # every header that names the split names the subset
            v.split = f"{v.split}, subset {subset.label}"
    if known_item is not None:
        from harness.evaluation.known_item_gate import apply_known_item

        v = apply_known_item(
            v,
            known_item,
            baseline_system=system_baseline,
            candidate_system=system_candidate,
            margin=known_item_margin,
            metric=known_item_metric,
            alpha=alpha,
            on_inconclusive=on_inconclusive,
        )
    v.report_url = check_report_url(report_url)
    if verdict_file is not None:
        text = json.dumps(v.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
        write_output(text, verdict_file, field="--verdict")
    emit("gate", v, fmt, out)
    raise typer.Exit(v.exit_code)


@app.command()
def power(
    run: Path = typer.Option(None, "--candidate", help="Candidate run record planned for (required)."),
    run_old: Path = typer.Option(None, "--run", hidden=True, help="Deprecated: --candidate."),
    metric: str = typer.Option("mrr", help="Metric id planned for (any of harness.metrics: mrr, recall@10, ...)."),
    delta: float = typer.Option(0.02, help="Difference to detect (> 0).", callback=number(0, open_lower=True)),
    system: str = typer.Option(None, "--candidate-system", help="Candidate system (when CANDIDATE holds several)."),
    system_old: str = typer.Option(None, "--system", hidden=True, help="Deprecated: --candidate-system."),
    alpha: float = typer.Option(
        0.05,
        help="Significance level of the planned test (one-sided unless --sided two), in (0, 0.5).",
        callback=number(0, 0.5, open_lower=True, open_upper=True),
    ),
    target_power: float = typer.Option(
        0.8, "--power", help="Power wanted, in (0, 1).", callback=number(0, 1, open_lower=True, open_upper=True)
    ),
    baseline: Path = typer.Option(
        None, "--baseline", help="Baseline run record: plan for the paired difference CANDIDATE - BASELINE."
    ),
    system_baseline: str = typer.Option(
        None, "--baseline-system", help="Baseline system (when BASELINE holds several)."
    ),
    system_baseline_old: str = typer.Option(
        None, "--system-baseline", hidden=True, help="Deprecated: --baseline-system."
    ),
    sided: str = typer.Option("one", "--sided", help="one (the gate's test, default) or two-sided test."),
    split: str = SPLIT,
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Clusters and questions needed to detect DELTA with the given power, from the run's ICC (truncated at 0),
    cluster sizes and their CV (DEFF of Eldridge, Ashby & Kerry 2006)."""
    from harness.evaluation.power import power_plan

    fmt = output_format(fmt, as_json, out=out, kind="power")
    metric = _metrics([metric], "mrr")[0]
    run = renamed(run, run_old, new="--candidate", old="--run")
    system = renamed(system, system_old, new="--candidate-system", old="--system")
    system_baseline = renamed(system_baseline, system_baseline_old, new="--baseline-system", old="--system-baseline")
    if run is None:
        raise HarnessInputError("--candidate: give the run record to plan for (--candidate RUN)")
    if system_baseline is not None and baseline is None:
        raise HarnessInputError(
            "--baseline-system: names a system of --baseline; give --baseline RUN too (without it the plan is "
            "unpaired and the baseline system is not used)"
        )
    check_paths([("--out", out)], [("--candidate", run), ("--baseline", baseline)])
    if sided not in ("one", "two"):
        raise HarnessError(f"--sided: {sided!r} is not one of one, two")
    plan = power_plan(
        run,
        metric=metric,
        delta=delta,
        system=system,
        alpha=alpha,
        power=target_power,
        baseline=baseline,
        system_baseline=system_baseline,
        one_sided=sided == "one",
        split=split,
    )
    emit("power", plan, fmt, out)


@app.command()
def sweep(
    run: Path = typer.Option(..., "--run", help="Run record holding the systems to fuse."),
    fusion: str = typer.Option(
        "wsum", "--fusion", help="Fusion method(s) of the registry: wsum, rrf, mnz, or several: wsum,rrf,mnz."
    ),
    inputs: str = typer.Option("bm25,vector", "--inputs", help="The systems of the run to fuse, A,B (wsum: W on A)."),
    w: str = typer.Option(None, "--w", help="wsum weight grid start:stop:step or a comma list (default 0:1:0.05)."),
    k: str = typer.Option(  # not "5:100:5" in the help: rich reads ":100:" as an emoji code
        None, "--k", help="rrf k grid start:stop:step or a comma list (default: from 5 to 100 in steps of 5)."
    ),
    metric: str = typer.Option("mrr", help="Metric id chosen on (any of harness.metrics)."),
    constraint: list[str] = typer.Option(
        None,
        "--constraint",
        help="METRIC:MARGIN (repeatable): exclude settings that lose more than MARGIN on METRIC against the best "
        "input on dev (e.g. evidence_recall@10:0.02).",
    ),
    level: str = typer.Option(
        None, help="document or chunk: the single-metric sweep at one level (default: every metric, both levels)."
    ),
    goldset: Path = typer.Option(None, "--goldset", help="Gold set (default: the path recorded in the run)."),
    plot: Path = typer.Option(
        None, "--plot", help="Also write the dev curves with their interval bands as an SVG file (atomically)."
    ),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Choose a fusion setting on the dev split; report it on the test split on every metric of the compare set,
    beside each of its inputs alone, with the settings the constraints excluded and the trade-offs in words.

    With --level, the single-metric sweep of one method at that level (the dev curve in full)."""
    from harness.evaluation.sweep import sweep as do_sweep
    from harness.evaluation.sweep_multi import multi_sweep

    fmt = output_format(fmt, as_json, out=out, kind="sweep" if level is not None else "sweep-multi")
    metric = _metrics([metric], "mrr")[0]
    check_paths([("--out", out), ("--plot", plot)], [("--run", run), ("--goldset", goldset)])
    methods = [x.strip() for x in fusion.split(",") if x.strip()]
    for flag, value, method in (("--w", w, "wsum"), ("--k", k, "rrf")):
        if value is not None and method not in methods:
            raise HarnessError(f"{flag}: applies to --fusion {method} only (got --fusion {fusion})")
    names = [x for x in inputs.split(",") if x.strip()]
    if plot is not None:
        from harness.report.formats import check_output

        check_output(plot, field="--plot")
    if level is not None:
        if len(methods) != 1 or constraint or plot is not None:
            raise HarnessError(
                "--level: the single-metric sweep takes one --fusion method and no --constraint or --plot"
            )
        grid = w if methods[0] == "wsum" else k
        res = do_sweep(run, grid, metric, level, goldset_path=goldset, fusion=methods[0], inputs=names)
        emit("sweep", res, fmt, out)
        return
    res = multi_sweep(
        run,
        fusions=methods,
        metric=metric,
        constraints=constraint or (),
        grids={"wsum": w, "rrf": k},
        goldset_path=goldset,
        inputs=names,
    )
    if plot is not None:
        from harness.report.sweep_plot import write_dev_curve

        write_dev_curve(res, plot)
    emit("sweep-multi", res, fmt, out)
    if plot is not None:
        err_console.print(f"wrote {plot}", highlight=False, markup=False)
