"""Stored script injection (issue 18, item 2): every string that comes from an input is escaped in every renderer.

A gold set, a rankings file, a known-item folder and a coverage study are written whose every string field holds
markup (question ids, categories, questions, quotes, roles, reference answers, document and chunk ids, system names,
the run id, the gold set's name, version and corpus, known-item and coverage names). Both reports are rendered from
them; the HTML is parsed and must hold no element, attribute or script that came from the inputs (only the
report's own three scripts, no ``on*=`` attribute, no ``javascript:`` URL), while the hostile text itself must be
shown, as text. The Markdown must hold no raw ``<`` besides its own ``<details>``/``<summary>`` tags, and no
unescaped ``|`` inside a table cell.
"""

from __future__ import annotations

import html
import io
import json
import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from test_report import write_known_item_outputs

from harness.evaluation.compare import compare_runs
from harness.evaluation.pipeline import RunOptions, evaluate_rankings
from harness.evaluation.runs import load_run
from harness.report import write_report
from harness.report.format import esc, md, rich_text
from harness.report.formats import Result, emit
from harness.terminal_safe import escape_controls


def hostile(tag: str) -> str:
    """Markup for HTML, attributes, SVG, Markdown tables and rich, made unique by ``tag``; no whitespace, which ids
    may not hold (:mod:`harness.ids`): ``<img/src=x/onerror=...>`` is an image with an event handler all the same."""
    return f'{tag}<script>alert("{tag}")</script><img/src=x/onerror=alert(1)>"\'&amp;|**`[red]x[/red]'


#: Tags the report itself writes (anything else in the parsed HTML came from an input).
OWN_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "dl", "dt", "dd", "nav", "a",
    "main", "section", "p", "b", "table", "thead", "tbody", "tr", "th", "td", "span", "br", "details", "summary",
    "div", "pre", "figure", "figcaption", "caption", "code", "blockquote", "ul", "li", "footer", "script",
    # inline SVG written by matplotlib
    "svg", "defs", "g", "path", "use", "clippath", "rect", "line", "polyline", "polygon", "text", "pattern",
}  # fmt: skip


class _Audit(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[dict] = []
        self.bad_attrs: list[tuple[str, str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "script":
            self.scripts.append(a)
        for k, v in attrs:
            if k.startswith("on") or "javascript:" in (v or "").lower():
                self.bad_attrs.append((tag, k, v or ""))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def _records() -> list[dict]:
    base = {"persona": hostile("persona"), "difficulty": "easy", "as_of": "2024-12-31", "unanswerable_reason": None,
            "answerability": "answerable", "required_hops": 1}  # fmt: skip
    out = []
    for i in range(5):  # categories cat0, cat1, cat0, cat1, cat2 (one question, one cluster: no interval)
        doc = hostile(f"doc{i}")
        out.append(
            {
                **base,
                "id": hostile(f"q{i}"),
                "category": hostile(f"cat{i % 2 if i < 4 else 2}"),
                "question": hostile(f"question{i}"),
                "reference_answer": hostile(f"answer{i}"),
                "gold_documents": [
                    {
                        "document_id": doc,
                        "relpath": hostile(f"rel{i}"),
                        "publication_date": "2024-01-01",
                        "section": None,
                        "role": hostile(f"role{i}"),
                        "heading_path": [hostile(f"heading{i}")],
                        "evidence": [{"chunk_id": f"{doc}#0", "chunk_index": 0, "quote": hostile(f"quote{i}")}],
                    }
                ],
            }
        )
    return out


@pytest.fixture(scope="module")
def hostile_inputs(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("hostile")
    gs = tmp / "gs"
    gs.mkdir()
    recs = _records()
    (gs / "g.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n", "utf-8")
    manifest = {"name": hostile("gsname"), "version": hostile("gsversion"), "corpus_version": hostile("corpus"),
                "corpus_documents": 5, "corpus_date_min": "2024-01-01", "corpus_date_max": "2024-01-01",
                "chunker_version": "md-words-v1", "schema_version": 1}  # fmt: skip
    (gs / "g.meta.json").write_text(json.dumps(manifest), "utf-8")
    lines = []
    for s, system in enumerate((hostile("sysA"), hostile("sysB"))):
        for i, r in enumerate(recs):
            doc = r["gold_documents"][0]["document_id"]
            other = recs[(i + 1) % len(recs)]["gold_documents"][0]["document_id"]
            docs = [[doc, 2.0], [other, 1.0]] if (i + s) % 2 == 0 else [[other, 2.0], [doc, 1.0]]
            chunks = [[f"{d}#0", sc] for d, sc in docs]
            lines.append(json.dumps({"qid": r["id"], "system": system, "docs": docs, "chunks": chunks}))
    rankings = tmp / "rankings.jsonl"
    rankings.write_text("\n".join(lines) + "\n", "utf-8")
    run_id = 'run<img src=x onerror=alert("run")>'
    run = evaluate_rankings(gs, rankings, runs_dir=tmp / "runs", run_id=run_id, options=RunOptions(bootstrap_reps=200))
    ki = write_known_item_outputs(tmp / "ki", systems=(hostile("kiA"), hostile("kiB")))
    summary = json.loads((ki / "summary.json").read_text("utf-8"))
    summary["corpus_id"], summary["corpus_hash"] = hostile("kicorpus"), "0" * 64  # another corpus: a report note
    (ki / "summary.json").write_text(json.dumps(summary), "utf-8")
    cov = json.loads((ki / "coverage.json").read_text("utf-8"))
    cov["population"]["system"] = hostile("covsys")
    for d in cov["designs"]:
        d["rows"] = {hostile(k): {**r, "method": hostile(r["method"])} for k, r in d["rows"].items()}
        d["note"] = {k: hostile(str(v)) for k, v in d["note"].items()}
    (ki / "coverage.json").write_text(json.dumps(cov), "utf-8")
    return {"tmp": tmp, "run": run, "known_item": ki}


def test_html_report_holds_no_markup_from_inputs(hostile_inputs):
    out = write_report(
        [hostile_inputs["run"]], hostile_inputs["tmp"] / "r.html", known_item=hostile_inputs["known_item"]
    )
    text = out.read_text("utf-8")
    audit = _Audit()
    audit.feed(text)
    audit.close()
    assert set(audit.tags) <= OWN_TAGS, sorted(set(audit.tags) - OWN_TAGS)
    assert audit.bad_attrs == []
    # the report's own scripts only: the figure list, the layout slot and the measuring script
    assert [s.get("type") for s in audit.scripts] == ["application/json", "application/json", None]
    assert "img" not in audit.tags
    shown = "".join(audit.text)
    for tag in ("q0", "cat0", "question0", "quote0", "role0", "doc0", "sysA", "sysB", "gsname", "kiA", "covsys"):
        assert hostile(tag) in shown or hostile(tag).replace("_", " ") in shown, f"{tag} is not shown as text"
    assert 'run<img src=x onerror=alert("run")>' in shown


def test_markdown_report_holds_no_raw_markup(hostile_inputs):
    out = write_report(
        [hostile_inputs["run"]], hostile_inputs["tmp"] / "r.md", fmt="markdown", known_item=hostile_inputs["known_item"]
    )
    text = out.read_text("utf-8")
    stripped = re.sub(r"</?(details|summary)>", "", text)
    assert "<" not in stripped, stripped[max(0, stripped.index("<") - 80) : stripped.index("<") + 80]
    # block quotes are the report's own warnings only (an input cannot start a line)
    assert all(x.startswith(("> **Warning:**", "> **Note:**")) for x in text.splitlines() if x.startswith(">"))
    # every row of a table has as many cells as its header: no input pipe splits a cell
    widths: list[int] = []
    for line in text.splitlines():
        n = len(re.findall(r"(?<!\\)\|", line))
        if not line.startswith("|"):
            widths = []
        elif not widths:
            widths = [n]
        else:
            assert n == widths[0], line
    # the hostile strings are there, escaped
    assert "&lt;script&gt;" in text and "sysA" in text and "cat0" in text


# --------------------------------------------------------------------------------------------------------------
# The escapers themselves: whatever the input, it renders as exactly that text and nothing else
# --------------------------------------------------------------------------------------------------------------

_HOSTILE_ALPHABET = st.sampled_from(list("ab1 <>&\"'|*_`[]()#+-!~\\/=:;.\n\t{}") + ["<script>", "&lt;", "**", "~~"])
_texts = st.lists(_HOSTILE_ALPHABET, max_size=30).map("".join)


def _cell_text(rendered: str) -> str:
    cell = re.search(r"<td>(.*?)</td>", rendered, flags=re.S)
    assert cell is not None, rendered
    inner = cell.group(1)
    assert "<" not in inner, inner  # no element of any kind inside the cell
    return html.unescape(inner)


@settings(max_examples=150, deadline=None)
@given(_texts)
def test_md_renders_any_text_literally_in_a_table_cell(text):
    """A GitHub-flavoured renderer (markdown-it-py, CommonMark + tables + strike-through) shows ``md(text)`` in a
    table cell as the text itself: no element, link, emphasis or code, no extra cell."""
    renderer = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    rendered = renderer.render("| h |\n| --- |\n| " + md(text) + " |\n")
    assert rendered.count("<td>") == 1
    # control characters other than tab show as escapes (issue 26 item 12: nothing a terminal obeys)
    expected = " ".join(escape_controls(text.replace("\r", " ").replace("\n", " "), keep="\t").split())
    assert " ".join(_cell_text(rendered).split()) == expected


@settings(max_examples=100, deadline=None)
@given(_texts)
def test_md_renders_any_text_literally_in_running_text(text):
    rendered = MarkdownIt("commonmark").enable(["strikethrough"]).render("x " + md(text) + "\n")
    inner = rendered.removeprefix("<p>").removesuffix("</p>\n")
    assert "<" not in inner.replace("<br />", ""), inner
    shown = escape_controls(text.replace("\r", " ").replace("\n", " "), keep="\t")  # issue 26 item 12
    assert " ".join(html.unescape(inner).split()) == " ".join(("x " + shown).split())


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=40))
def test_esc_and_rich_text_keep_any_text_literal(text):
    """HTML text and attribute values, and rich markup (control characters aside, which both normalise)."""
    parsed = _Audit()
    parsed.feed(f"<p title='{esc(text)}'>{esc(text)}</p>")
    parsed.close()
    assert parsed.tags == ["p"] and "".join(parsed.text) == text
    # rich drops zero-width code points (e.g. a lone skin-tone modifier) from table cells: that is rendering, not
    # markup, so the markup check runs on the characters that occupy cells
    line = " ".join("".join(ch for ch in text if cell_len(ch) > 0).split())
    if line:
        console = Console(file=io.StringIO(), width=400, color_system=None)
        table = Table(title=rich_text(line))
        table.add_column(rich_text(line))
        table.add_row(rich_text(line))
        console.print(table)
        assert console.file.getvalue().count(line) == 3


def test_terminal_tables_print_markup_from_inputs_literally(hostile_inputs, tmp_path):
    """The ``table`` format of a run and of a comparison: rich would turn ``[red]x[/red]`` into colour and drop it."""
    rec = load_run(hostile_inputs["run"])
    emit(Result("run", rec, rec.path), "table", tmp_path / "run.txt")
    rep = compare_runs(rec, rec, metrics=("mrr",), reps=200)
    emit(Result("comparison", rep), "table", tmp_path / "cmp.txt")
    for name in ("run.txt", "cmp.txt"):
        text = (tmp_path / name).read_text("utf-8")
        assert "[red]" in text and "[/red]" in text and "<script>" in text, name
