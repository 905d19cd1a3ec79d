"""The HTML report in headless Chromium: the first screen is not blank, and every figure is present and rendered.

Chromium comes from the Debian package ``chromium`` (``.ci/run`` installs it). Without it the tests skip on a
developer machine but FAIL in CI (environment variable ``CI`` set), so a missing browser never passes silently.

Rendering is checked by element id and size: the report's inline script writes, after layout, every figure's
``getBoundingClientRect`` and its number of drawn SVG elements into ``<script id="figure-layout">``; ``--dump-dom``
returns the DOM after the page has loaded and run that script.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from test_report import add_perturbed_systems, make_base_run, write_known_item_outputs

from harness.report import write_report
from harness.report.html import FIGURE_IDS

REPO = Path(__file__).resolve().parents[1]
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium() -> str:
    """Path of the Chromium binary; skip (developer machine) or fail (CI) when it is missing."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    msg = "chromium not found (Debian package 'chromium'; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(msg + ": the report screenshot test cannot run in CI")
    pytest.skip(msg)


def run_chromium(args: list[str], profile: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run headless Chromium with a throw-away profile (no network services, no GPU)."""
    cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


class _Layout(HTMLParser):
    def __init__(self):
        super().__init__()
        self._in = False
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self._in = tag == "script" and dict(attrs).get("id") == "figure-layout"

    def handle_endtag(self, tag):
        self._in = False

    def handle_data(self, data):
        if self._in:
            self.text += data


def figure_layout(report: Path, profile: Path) -> dict:
    """``{figure id: {"width", "height", "marks", "bbox"}}`` measured by the page itself in Chromium."""
    res = run_chromium(["--virtual-time-budget=5000", "--dump-dom", report.resolve().as_uri()], profile)
    assert res.returncode == 0, res.stderr[-2000:]
    p = _Layout()
    p.feed(res.stdout)
    assert p.text.strip(), "the page's measuring script did not run (figure-layout empty)"
    return json.loads(p.text)


def screenshot(report: Path, png: Path, profile: Path) -> np.ndarray:
    """The first screen (1280 x 900) as an (H, W, channels) float array in [0, 1]."""
    import matplotlib.image as mpimg

    res = run_chromium(
        [f"--screenshot={png}", "--window-size=1280,900", "--virtual-time-budget=5000", report.resolve().as_uri()],
        profile,
    )
    assert res.returncode == 0 and png.exists(), res.stderr[-2000:]
    return mpimg.imread(png)


def check_first_screen(img: np.ndarray) -> None:
    """Not blank: enough dark (text) pixels, several grey levels, content in the top and bottom halves."""
    assert img.shape[0] == 900 and img.shape[1] == 1280, img.shape
    gray = img[..., :3].mean(axis=2)
    dark = gray < 0.5
    assert dark.mean() > 0.01, f"first screen nearly blank ({100 * dark.mean():.2f} % dark pixels)"
    assert len(np.unique(np.round(gray * 32))) >= 8, "first screen has almost no tonal variety"
    assert dark[:450].mean() > 0.005 and dark[450:].mean() > 0.005, "content only in one half of the first screen"


def check_figures(layout: dict, expected) -> None:
    for fid in expected:
        got = layout.get(fid)
        assert got is not None, f"{fid}: not in the page"
        assert got["width"] > 100 and got["height"] > 100, f"{fid}: rendered at {got['width']} x {got['height']}"
        assert got["marks"] > 20, f"{fid}: only {got['marks']} drawn SVG elements"
        assert got["bbox"] and got["bbox"][0] > 50 and got["bbox"][1] > 50, f"{fid}: empty drawing {got['bbox']}"


def test_report_renders_in_headless_chromium(tmp_path: Path):
    chromium()
    base, _gs, _corpus = make_base_run(tmp_path)
    six = add_perturbed_systems(base, tmp_path / "runs", "six", covered={"SP-001", "SP-002"}, keep_base=False)
    ki = write_known_item_outputs(tmp_path / "known-item")
    report = write_report([base, six], tmp_path / "report.html", known_item=ki)
    img = screenshot(report, tmp_path / "first.png", tmp_path / "profile")
    check_first_screen(img)
    layout = figure_layout(report, tmp_path / "profile")
    assert set(layout) == set(FIGURE_IDS.values())
    check_figures(layout, FIGURE_IDS.values())


def test_a_thirteen_system_three_run_report_renders_readably_in_headless_chromium(tmp_path: Path):
    """The trial's unreadable case (14 systems, 3 runs): the category chart becomes a heat table that keeps a
    readable size, and each system's interval plot is drawn; screenshot kept beside the report."""
    chromium()
    base, _gs, _corpus = make_base_run(tmp_path)
    six = add_perturbed_systems(base, tmp_path / "runs", "six", keep_base=True, seed=1)
    cand = add_perturbed_systems(
        base, tmp_path / "runs", "cand1", {"vector": 0.7, "rrf": 0.4, "w0.5": 0.5, "w0.6": 0.45, "mine": 0.2}, seed=2
    )
    report = write_report([base, six, cand], tmp_path / "report.html")
    check_first_screen(screenshot(report, tmp_path / "first.png", tmp_path / "profile"))
    layout = figure_layout(report, tmp_path / "profile")
    check_figures(layout, [FIGURE_IDS["systems"], FIGURE_IDS["category"], FIGURE_IDS["forest"]])
    # 13+ rows: each system row of the heat table and of the interval plot at least 18 px high
    n = len(set(load_labels(report)))
    assert layout[FIGURE_IDS["category"]]["height"] >= 18 * n and layout[FIGURE_IDS["systems"]]["height"] >= 18 * n


def load_labels(report: Path) -> list[str]:
    """The system labels of the report's systems table (the first cell of each body row)."""
    import re

    table = report.read_text("utf-8").split("id='table-systems-all'", 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr(?: class='base')?><td>([^<]+)(?:<br>|</td>)", table)


def _six_system_runs() -> list[Path]:
    """Run records under ``runs/`` (``runs/baselines/`` included) holding six or more systems, newest first."""
    env = os.environ.get("HARNESS_REPORT_RUN")
    if env:
        return [Path(env)]
    found = []
    for man in (REPO / "runs").glob("**/manifest.json"):  # runs/baselines/ holds a committed one
        try:
            systems = json.loads(man.read_text("utf-8")).get("systems", [])
        except (OSError, ValueError):
            continue
        if len(systems) >= 6:
            found.append(man.parent)
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


@pytest.mark.realcorpus
def test_real_six_system_run_renders_in_headless_chromium(tmp_path: Path, monkeypatch):
    runs = _six_system_runs()
    if not runs:
        pytest.skip("no six-system run record under runs/ (run the README's main command first)")
    chromium()
    monkeypatch.chdir(REPO)  # the run records its gold-set path relative to the repository
    report = write_report([runs[0]], tmp_path / "report.html")
    check_first_screen(screenshot(report, tmp_path / "first.png", tmp_path / "profile"))
    layout = figure_layout(report, tmp_path / "profile")
    expected = [FIGURE_IDS[k] for k in ("category", "forest", "depth", "ranks")]
    if FIGURE_IDS["covered"] in layout:
        expected.append(FIGURE_IDS["covered"])
    check_figures(layout, expected)
    md = write_report([runs[0]], tmp_path / "report.md", fmt="markdown").read_text("utf-8")
    assert len(md) < 60_000
