"""The HTML report's provenance header, per-question drill-down and footer (every input string escaped)."""

from __future__ import annotations

import datetime as dt
import json
import re

from harness import __version__
from harness.evaluation.record import QuestionRow
from harness.relpath import shown_path
from harness.report.format import MISSING, esc, fmt3, spaced
from harness.report.model import ReportData, provenance, record_checksums, report_provenance


def section_provenance(data: ReportData) -> str:
    """Gold set, corpus, chunker, models, code version and date of the runs; their configurations on demand."""
    first = report_provenance(data.runs)
    keys = ("gold set", "corpus", "chunker", "model", "code", "date")
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(first[k])}</dd>" for k in keys)
    more = ""
    if len(data.runs) > 1:
        rows = []
        for run in data.runs:
            p = provenance(run)
            cells = "".join(
                f"<td class='l wrap'>{esc(p[k])}</td>" for k in ("run", "systems", "model", "code", "date", "settings")
            )
            rows.append(f"<tr>{cells}</tr>")
        more = (
            "<table id='table-runs'><thead><tr><th class='l'>run</th><th class='l'>systems</th><th class='l'>model"
            "</th><th class='l'>code</th><th class='l'>date</th><th class='l'>settings</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
        )
    else:
        dl += f"<dt>run</dt><dd>{esc(first['run'])}</dd><dt>settings</dt><dd>{esc(first['settings'])}</dd>"
    cfg = {
        run.run_id: {
            "system_configs": run.manifest.system_configs,
            "libraries": run.manifest.libraries,
            "timings_s": run.manifest.timings_s,
            "coverage": None if run.manifest.coverage is None else run.manifest.coverage.model_dump(),
        }
        for run in data.runs
    }
    details = (
        "<details><summary>system configurations, library versions, timings</summary>"
        "<div class='body'><pre class='mono'>"
        + esc(json.dumps(cfg, indent=1, ensure_ascii=False))
        + "</pre></div></details>"
    )
    notes = "".join(f"<div class='warn'>{esc(n)}</div>" for n in data.notes)
    return f"<section id='provenance'><dl class='prov'>{dl}</dl>{more}{_changes(data)}{details}{notes}</section>"


def _changes(data: ReportData) -> str:
    """The table of configuration changes from the baseline's run to each other run (``table-changes``): one row
    per change, or one row saying there is none; nothing for a report of one run."""
    if not data.changes:
        return ""
    rows = []
    for runs, changes in data.changes:
        if not changes:
            none = "<td class='l' colspan='3'>no configuration change</td>"
            rows.append(f"<tr><td class='l'>{esc(runs)}</td>{none}</tr>")
        for c in changes:
            cells = (runs, c["field"], c["baseline"], c["candidate"])
            rows.append("<tr>" + "".join(f"<td class='l wrap'>{esc(x)}</td>" for x in cells) + "</tr>")
    return (
        "<table id='table-changes'><caption>changed between the runs</caption><thead><tr><th class='l'>runs</th>"
        "<th class='l'>changed</th><th class='l'>baseline</th><th class='l'>candidate</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _slug(qid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", qid)


def _gold_docs(rec: dict | None, rows: list[QuestionRow]) -> list[dict]:
    """Gold documents of a question: ``{"id", "role", "grade", "where", "evidence": [{"chunk_id", "quote"}]}``,
    from the gold record, else from the gold ranks recorded in the rows."""
    if rec and rec.get("gold_documents"):
        out = []
        for g in rec["gold_documents"]:
            out.append(
                {
                    "id": str(g.get("document_id")),
                    "role": g.get("role", ""),
                    "grade": g.get("grade", ""),
                    "where": " > ".join(map(str, g.get("heading_path") or [])) or g.get("relpath", ""),
                    "evidence": [
                        {"chunk_id": str(ev.get("chunk_id")), "quote": ev.get("quote", "")}
                        for ev in g.get("evidence", [])
                    ],
                }
            )
        return out
    ids: dict[str, dict] = {}
    for r in rows:
        for d in r.gold_doc_ranks:
            ids.setdefault(d, {"id": d, "role": "", "grade": "", "where": "", "evidence": []})
        for c in r.gold_chunk_ranks:
            d = c.split("#", 1)[0]
            ent = ids.setdefault(d, {"id": d, "role": "", "grade": "", "where": "", "evidence": []})
            if all(ev["chunk_id"] != c for ev in ent["evidence"]):
                ent["evidence"].append({"chunk_id": c, "quote": ""})
    return list(ids.values())


def _rank_cell(rank) -> str:
    return f"<td>{MISSING}</td>" if rank is None else f"<td>{int(rank)}</td>"


def _question(data: ReportData, qid: str, sys_head: str) -> str:
    labels = data.labels
    rec = (data.gold or {}).get(qid)
    rows = [data.row(lab, qid) for lab in labels]
    present = [r for r in rows if r]
    cat = present[0].category if present else (rec or {}).get("category", "")
    question = str((rec or {}).get("question", ""))
    short = question if len(question) <= 110 else question[:107].rstrip() + "..."
    mrrs = " &middot; ".join(
        f"{esc(lab)} {fmt3(r.metrics.get('mrr')) if r else MISSING}" for lab, r in zip(labels, rows, strict=True)
    )
    body = []
    if question:
        body.append(f"<p><b>{esc(question)}</b></p>")
    if rec and rec.get("reference_answer"):
        body.append(f"<p class='note'>Reference answer: {esc(rec['reference_answer'])}</p>")
    gdocs = _gold_docs(rec, present)
    gold_ids = {g["id"] for g in gdocs}
    if gdocs:
        trs = []
        for g in gdocs:
            ranks = "".join(_rank_cell(r.gold_doc_ranks.get(g["id"]) if r else None) for r in rows)
            trs.append(
                f"<tr><td class='l'><code>{esc(g['id'])}</code><span class='iv'>{esc(g['where'])}</span></td>"
                f"<td class='l'>{esc(g['role'])}</td><td>{esc(g['grade'])}</td>{ranks}</tr>"
            )
        body.append(
            f"<table><thead><tr><th class='l'>gold document</th><th class='l'>role</th><th>grade</th>{sys_head}"
            f"</tr></thead><tbody>{''.join(trs)}</tbody></table>"
        )
        quotes: dict[str, list[str]] = {}
        for g in gdocs:
            for ev in g["evidence"]:
                quotes.setdefault(ev["chunk_id"], [])
                if ev["quote"]:
                    quotes[ev["chunk_id"]].append(str(ev["quote"]))
        trs = []
        for cid, qs in quotes.items():
            ranks = "".join(_rank_cell(r.gold_chunk_ranks.get(cid) if r else None) for r in rows)
            quote = "".join(f"<blockquote>{esc(q)}</blockquote>" for q in qs)
            trs.append(f"<tr><td class='l wrap'><code>{esc(cid)}</code>{quote}</td>{ranks}</tr>")
        if trs:
            body.append(
                f"<table><thead><tr><th class='l'>evidence chunk and quote</th>{sys_head}</tr></thead>"
                f"<tbody>{''.join(trs)}</tbody></table>"
            )
    tops = []
    for lab, r in zip(labels, rows, strict=True):
        if not r:
            continue
        items = [f"<b>{esc(d)}</b>" if d in gold_ids else esc(d) for d, _score in r.rankings.document[:3]]
        flags = [k for k, v in r.flags.items() if v is True and not k.startswith("evaluated")]
        fl = f" <span class='note'>({esc(', '.join(flags))})</span>" if flags else ""
        tops.append(f"<li>{esc(lab)}: <code>{', '.join(items) or '(nothing retrieved)'}</code>{fl}</li>")
    if tops:
        body.append(f"<p class='note'>Top 3 documents:</p><ul>{''.join(tops)}</ul>")
    return (
        f"<details id='q-{_slug(qid)}'><summary><code>{esc(qid)}</code> <span class='note'>"
        f"{esc(spaced(cat))}</span> {esc(short)} <span class='note'>[{mrrs}]</span></summary>"
        f"<div class='body'>{''.join(body)}</div></details>"
    )


def section_questions(data: ReportData) -> str:
    """A collapsible drill-down per question: gold documents and evidence with each system's ranks, quotes, top 3."""
    parts = [
        "<section id='questions'><h2>Questions</h2>",
        f"<p class='note'>One line per question (click to open): MRR of each system. Inside: the question, the gold "
        f"documents and evidence chunks with the rank each system gave them ({MISSING} = not in the recorded depth), "
        f"the quotes, and each system's top 3 documents (gold in bold). {esc(data.gold_note)}.</p>",
    ]
    sys_head = "".join(f"<th>{esc(lab)}</th>" for lab in data.labels)
    parts += [_question(data, qid, sys_head) for qid in data.qids()]
    parts.append("</section>")
    return "".join(parts)


def footer(data: ReportData) -> str:
    """The files the report was made from, with sha256 prefixes, and the harness version and time."""
    items = [
        f"<li><code>{esc(shown_path(r.path))}</code>: {esc('; '.join(record_checksums(r)))}</li>" for r in data.runs
    ]
    for extra in (data.known_item, data.coverage):
        if extra:
            items.append(f"<li><code>{esc(shown_path(extra['path']))}</code></li>")
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return (
        f"<footer><p>Generated by harness {esc(__version__)} at {esc(now)} from these files only (sha256 prefixes):"
        f"</p><ul>{''.join(items)}</ul></footer>"
    )
