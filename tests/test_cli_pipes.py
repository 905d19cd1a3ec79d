"""Issue 42 item 12: a reader that closes the pipe early (``harness gate ... | head -2`` under ``set -o pipefail``)
leaves the verdict's exit code (0/1/3) as the command's status, with no traceback or ``BrokenPipeError`` on stderr
(rich's own handling exited 1, click's too)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def _piped(args: list[str], reader: str, tmp_path: Path) -> tuple[int, str, str]:
    """``(harness's own status via ${PIPESTATUS[0]}, what the reader printed, harness's stderr)``."""
    cmd = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "harness", *args])
    script = f'set -o pipefail\n{cmd} 2>{tmp_path / "err.txt"} | {reader}\necho "status=${{PIPESTATUS[0]}}"\n'
    env = {**os.environ, "PYTHONPATH": str(REPO), "HARNESS_WORKDIR": str(tmp_path / "wd")}
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    *shown, status = proc.stdout.splitlines()
    return int(status.removeprefix("status=")), "\n".join(shown), (tmp_path / "err.txt").read_text("utf-8")


@pytest.mark.parametrize(
    ("baseline", "candidate", "margin", "fmt", "code", "first"),
    [
        ("bm25", "w0.75", "0", "table", 0, "PASS: mrr w0.75 - bm25"),
        ("w0.75", "bm25", "0", "table", 1, "FAIL: mrr bm25 - w0.75"),
        ("bm25", "vector", "0.02", "table", 3, "INCONCLUSIVE: mrr vector - bm25"),
        ("w0.75", "bm25", "0", "junit", 1, '<?xml version="1.0" encoding="UTF-8"?>'),
    ],
)
def test_gate_piped_into_head_exits_with_the_verdicts_code(tmp_path, baseline, candidate, margin, fmt, code, first):
    args = ["gate", "--baseline", str(BASELINE), "--candidate", str(BASELINE), "--baseline-system", baseline]
    args += ["--candidate-system", candidate, "--margin", margin, "--format", fmt]
    status, shown, err = _piped(args, "head -2", tmp_path)
    assert status == code, err
    assert len(shown.splitlines()) == 2 and shown.startswith(first)
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err
    if code == 0:  # 0 is what rich's and click's own handling lost (they exit 1)
        status, _, err = _piped(args, "true", tmp_path)  # the reader is gone before the first write
        assert status == code and err.strip() == "", err


def test_csv_written_straight_to_a_closed_pipe_keeps_the_exit_code(tmp_path):
    """A format written to the file directly (not through rich: ``run``'s records as CSV via ``report``) too."""
    args = ["report", str(BASELINE), "--format", "csv", "--out", "-"]
    status, shown, err = _piped(args, "head -1", tmp_path)
    assert status == 0 and shown.startswith("table,run_id,subset,"), err
    status, _, err = _piped(args, "true", tmp_path)
    assert status == 0 and err.strip() == "", err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err
