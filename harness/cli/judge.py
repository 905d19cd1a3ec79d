"""Verbs that judge run records: compare, gate, power and sweep."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._common import FORMAT, JSON_ALIAS, OUT, _fail, app, emit, output_format
from harness.errors import HarnessError

ALLOW_UNHASHED = typer.Option(
    False, "--allow-unhashed", help="Accept, unverified, a run record written before records were hashed."
)


def _parse_guards(guards: list[str]) -> dict[str, float]:
    out = {}
    for g in guards or []:
        cat, _, m = g.partition(":")
        try:
            out[cat] = float(m)
        except ValueError:
            raise HarnessError(f"--guard {g!r}: expected CATEGORY:MARGIN") from None
    return out


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="Baseline run record (RUN)."),
    run_b: Path = typer.Argument(..., help="Candidate run record (RUN); may be the same folder as RUN_A."),
    metrics: str = typer.Option(",".join(("mrr", "recall@5", "recall@10", "all_hop@10", "evidence_recall@10"))),
    system_a: str = typer.Option(None, "--system-a"),
    system_b: str = typer.Option(None, "--system-b"),
    reps: int = typer.Option(10000, help="Randomisation-test sign flips."),
    seed: int = typer.Option(0),
    allow_unhashed: bool = ALLOW_UNHASHED,
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Paired differences B - A with clustered intervals, randomisation tests and win/tie/loss counts."""
    from harness.evaluation.compare import compare_runs
    from harness.evaluation.runs import check_hashed

    fmt = output_format(fmt, as_json, out=out)
    try:
        for field, path in (("RUN_A", run_a), ("RUN_B", run_b)):
            check_hashed(path, allow_unhashed=allow_unhashed, field=field)
        rep = compare_runs(
            run_a,
            run_b,
            metrics=tuple(m.strip() for m in metrics.split(",") if m.strip()),
            system_a=system_a,
            system_b=system_b,
            reps=reps,
            seed=seed,
        )
    except HarnessError as exc:
        _fail(exc)
    emit("comparison", rep, fmt, out)


@app.command()
def gate(
    baseline: Path = typer.Option(..., "--baseline", help="Baseline run record."),
    candidate: Path = typer.Option(..., "--candidate", help="Candidate run record."),
    metric: str = typer.Option("mrr"),
    margin: float = typer.Option(0.02, help="Non-inferiority margin (absolute, metric units)."),
    alpha: float = typer.Option(0.05, help="One-sided level."),
    system_baseline: str = typer.Option(None, "--system-baseline"),
    system_candidate: str = typer.Option(None, "--system-candidate"),
    guard: list[str] = typer.Option(None, "--guard", help="Per-category guard CATEGORY:MARGIN (repeatable)."),
    verdict: Path = typer.Option(Path("gate-verdict.json"), "--verdict", help="Where the JSON verdict goes."),
    allow_unhashed: bool = ALLOW_UNHASHED,
    fmt: str = FORMAT,
    out: str = OUT,
) -> None:
    """Non-inferiority gate: exit 0 pass, 1 fail, 2 unusable or incomparable input."""
    from harness.evaluation.compare import gate as do_gate
    from harness.evaluation.runs import check_hashed

    fmt = output_format(fmt, out=out)
    try:
        for field, path in (("--baseline", baseline), ("--candidate", candidate)):
            check_hashed(path, allow_unhashed=allow_unhashed, field=field)
        v = do_gate(
            baseline,
            candidate,
            metric=metric,
            margin=margin,
            alpha=alpha,
            system_baseline=system_baseline,
            system_candidate=system_candidate,
            category_guards=_parse_guards(guard),
            verdict_path=verdict,
        )
    except HarnessError as exc:
        _fail(exc)
    emit("gate", v, fmt, out)
    raise typer.Exit(v.exit_code)


@app.command()
def power(
    run: Path = typer.Option(..., "--run", help="Run record."),
    metric: str = typer.Option("mrr"),
    delta: float = typer.Option(0.02, help="Difference to detect."),
    system: str = typer.Option(None),
    alpha: float = typer.Option(0.05),
    target_power: float = typer.Option(0.8, "--power"),
    baseline: Path = typer.Option(None, "--baseline", help="Plan for the paired difference RUN - BASELINE."),
    system_baseline: str = typer.Option(
        None, "--system-baseline", help="Baseline system (when BASELINE holds several)."
    ),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Clusters and questions needed to detect DELTA with the given power, from the run's ICC and cluster sizes."""
    from harness.evaluation.power import power_plan

    fmt = output_format(fmt, as_json, out=out)
    try:
        plan = power_plan(
            run,
            metric=metric,
            delta=delta,
            system=system,
            alpha=alpha,
            power=target_power,
            baseline=baseline,
            system_baseline=system_baseline,
        )
    except HarnessError as exc:
        _fail(exc)
    emit("power", plan, fmt, out)


@app.command()
def sweep(
    run: Path = typer.Option(..., "--run", help="Run record holding the bm25 and vector systems."),
    w: str = typer.Option(
        "0:1:0.05", "--w", help="Weight grid start:stop:step or a comma list (W x BM25 + (1-W) x vector)."
    ),
    metric: str = typer.Option("mrr"),
    level: str = typer.Option(None, help="document or chunk (default: the metric's level)."),
    goldset: Path = typer.Option(None, "--goldset", help="Gold set (default: the path recorded in the run)."),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Choose the fusion weight on the dev split; report it on the test split only."""
    from harness.evaluation.sweep import parse_weight_grid
    from harness.evaluation.sweep import sweep as do_sweep

    fmt = output_format(fmt, as_json, out=out)
    try:
        res = do_sweep(run, parse_weight_grid(w), metric, level, goldset_path=goldset)
    except HarnessError as exc:
        _fail(exc)
    emit("sweep", res, fmt, out)
