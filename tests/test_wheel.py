"""The distribution builds as a wheel named ``harness-rag-eval`` whose console script runs from a venv where only
that wheel is installed (issue 17 item 6).

Offline recipe (no index is reachable from the build machines): the package sources are copied to a temporary folder
(so the build writes no ``build/`` or ``*.egg-info`` into the checkout) and built with ``pip wheel --no-deps
--no-build-isolation`` (setuptools from this venv); a fresh venv (``python -m venv``, no system site packages) gets
``pip install --no-deps`` of that wheel alone. Its dependencies (numpy, typer, rich, ...) are not downloaded: a
``.pth`` file in the fresh venv lists this test venv's site-packages, whose own ``.pth`` files - among them the
editable install of this checkout - are not processed from there, so ``harness`` can only come from the wheel. The
test asserts that it does (the import package's location and the distribution's files are the fresh venv's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from harness.cli._common import DISTRIBUTION

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(*args, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}: rc {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_wheel_installs_alone_and_reports_its_version(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "harness", src / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, src, cwd=src)
    wheels = list(dist.glob("*.whl"))
    assert [w.name for w in wheels] == ["harness_rag_eval-0.1.0-py3-none-any.whl"]
    with zipfile.ZipFile(wheels[0]) as zf:
        names = zf.namelist()
        meta = zf.read("harness_rag_eval-0.1.0.dist-info/METADATA").decode()
        entry = zf.read("harness_rag_eval-0.1.0.dist-info/entry_points.txt").decode()
    assert "Name: harness-rag-eval" in meta and "harness = harness.cli:main" in entry
    assert "harness/cli/_common.py" in names and "harness/report/html/assets/report.css" in names
    assert not any(n.split("/")[0] in ("tests", "runs", "datasets", "validators") for n in names)

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    py = venv / "bin" / "python"
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheels[0], cwd=tmp_path)
    site = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", "utf-8")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = _run(venv / "bin" / "harness", "--version", cwd=tmp_path, env=env).strip()
    assert out.startswith(f"harness 0.1.0 (distribution {DISTRIBUTION}, import package harness at {site / 'harness'};")
    where = _run(py, "-c", "import importlib.metadata as m, harness; "
                 f"print(harness.__file__); print(m.distribution('{DISTRIBUTION}').locate_file(''))",
                 cwd=tmp_path, env=env).split()  # fmt: skip
    assert where == [str(site / "harness" / "__init__.py"), str(site)]
    assert not (REPO / "build").exists()  # the checkout got no build folder
