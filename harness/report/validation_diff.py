"""How a correction's diff reads: plain text lines (the terminal, :mod:`harness.report.validation`) and Markdown lines
(a pull-request comment, :mod:`harness.report.validation_markdown`).

Every change is shown (:mod:`harness.goldset.diff` keeps whole values): a short value in full, old ``->`` new; a
long string as its word-level diff, deletions ``[-like this-]`` and insertions ``{+like this+}`` in text (as ``git
diff --word-diff`` writes them), ``<del>`` / ``<ins>`` in Markdown, with unchanged runs longer than ``2 x
CONTEXT_WORDS`` words shortened to their ends (``… 41 words …``); an added or removed value in full, as JSON. Only
unchanged words are ever elided. In Markdown the full old and new text of a long string follows in a
``<details>`` block, and every input string is escaped (:func:`harness.report.format.md`).
"""

from __future__ import annotations

import json
from typing import Any

from harness.report.format import md

__all__ = ["CONTEXT_WORDS", "change_text", "diff_markdown_lines", "diff_text_lines", "source_text"]

CONTEXT_WORDS = 8
"""Unchanged words kept on each side of a change in a word-level diff."""


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _elide(words: list[str], *, keep_start: bool, keep_end: bool) -> tuple[str, str | None, str]:
    """An unchanged run cut to :data:`CONTEXT_WORDS` words at the ends it shares with a change: ``(start, "… N
    words …" or None, end)`` (the run before the first change keeps only its end, after the last only its start)."""
    a = CONTEXT_WORDS if keep_start else 0
    b = CONTEXT_WORDS if keep_end else 0
    if len(words) <= a + b + 2:  # eliding would save at most two words
        return " ".join(words), None, ""
    return " ".join(words[:a]), f"… {len(words) - a - b} words …", " ".join(words[len(words) - b :])


def _segments(words: list[list[str]]) -> list[tuple[str, str]]:
    """``[(op, text)]`` with long unchanged runs shortened (``op`` ``=``, ``-``, ``+`` or ``…`` for an elision)."""
    out: list[tuple[str, str]] = []
    for k, (op, text) in enumerate(words):
        if op != "=":
            out.append((op, text))
            continue
        start, cut, end = _elide(text.split(" "), keep_start=k > 0, keep_end=k < len(words) - 1)
        for piece_op, piece in (("=", start), ("…", cut), ("=", end)):
            if piece:
                out.append((piece_op, piece))
    return out


def change_text(ch: dict) -> str:
    """One change as plain text: ``<path>: <what>`` (see the module docstring)."""
    path = ch["path"] + (f" (was {ch['old_path']})" if ch.get("old_path") else "")
    if ch["op"] == "added":
        return f"{path}: added {_json(ch['new'])}"
    if ch["op"] == "removed":
        return f"{path}: removed {_json(ch['old'])}"
    if ch.get("words"):
        parts = []
        for op, text in _segments(ch["words"]):
            parts.append({"=": text, "-": f"[-{text}-]", "+": f"{{+{text}+}}", "…": text}[op])
        return f"{path}: " + " ".join(parts)
    return f"{path}: {_json(ch['old'])} -> {_json(ch['new'])}"


def source_text(src: dict) -> str:
    """A correction line that touched a record: ``<file> line <n> (author <a>): <rationale>``."""
    who = f" (author {src['author']})" if src.get("author") else ""
    why = f": {src['rationale']}" if src.get("rationale") else ": no rationale given"
    return f"{src['file']} line {src['line']}{who}{why}"


def diff_text_lines(records: list[dict]) -> list[str]:
    """The diff of every corrected record as plain text lines (a record, its sources, then one line per change)."""
    out = []
    for rec in records:
        rid = rec["id"] if rec["id"] == rec["new_id"] else f"{rec['id']} -> {rec['new_id']}"
        n = len(rec["changes"])
        out.append(f"record {rid}: {n} change(s)" if n else f"record {rid}: no change")
        out += [f"  from {source_text(s)}" for s in rec["sources"]]
        out += [f"    {change_text(ch)}" for ch in rec["changes"]]
    return out


def _md_words(words: list[list[str]]) -> str:
    parts = []
    for op, text in _segments(words):
        t = md(text)
        parts.append({"=": t, "-": f"<del>{t}</del>", "+": f"<ins>{t}</ins>", "…": f"*{t}*"}[op])
    return " ".join(parts)


def _md_change(ch: dict) -> list[str]:
    path = md(ch["path"]) + (f" (was {md(ch['old_path'])})" if ch.get("old_path") else "")
    if ch["op"] == "added":
        return [f"- {path} **added**: {md(_json(ch['new']))}"]
    if ch["op"] == "removed":
        return [f"- {path} **removed**: {md(_json(ch['old']))}"]
    if not ch.get("words"):
        return [f"- {path} **changed**: {md(_json(ch['old']))} → {md(_json(ch['new']))}"]
    return [
        f"- {path} **changed**: {_md_words(ch['words'])}",
        "",
        "  <details><summary>old and new text in full</summary>",
        "",
        f"  old: {md(ch['old'])}",
        "",
        f"  new: {md(ch['new'])}",
        "",
        "  </details>",
    ]


def diff_markdown_lines(records: list[dict]) -> list[str]:
    """The diff of every corrected record as Markdown lines: a heading per record, its sources with their
    rationales, and a bullet per change (long strings as word diffs, then in full under ``<details>``)."""
    out: list[str] = []
    for rec in records:
        rid = rec["id"] if rec["id"] == rec["new_id"] else f"{rec['id']} → {rec['new_id']}"
        out += ["", f"#### {md(rid)} ({len(rec['changes'])} change(s))", ""]
        out += [f"> {md(source_text(s))}" for s in rec["sources"]]
        out.append("")
        for ch in rec["changes"]:
            out += _md_change(ch)
    return out
