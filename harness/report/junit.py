"""The ``junit`` output format of ``harness gate`` (``--format junit``): JUnit XML for CI test reporters (GitLab
``artifacts:reports:junit``, GitHub test-report actions, Jenkins).

Shape (the common JUnit XML schema, as Jenkins' ``junit-10.xsd`` and GitLab read it)::

    <testsuites name="harness gate" tests="N" failures="F" errors="0" skipped="S" time="0">
      <testsuite name="harness gate: CANDIDATE - BASELINE" tests="N" failures="F" errors="0" skipped="S" time="0">
        <properties>  decision, exit_code, baseline, candidate, systems, split, gold set, method, harness version,
                      report_url (when given), changes (the configuration changes between the two sides,
                      ``vector.model wordllama → use; ...``, or ``none``)  </properties>
        <testcase classname="harness.gate.metric" name="mrr" time="0"> ... </testcase>       one per metric check
        <testcase classname="harness.gate.guard" name="guard monitoring: mrr" time="0"/>      one per guard
      </testsuite>
    </testsuites>

A check that PASSES is a plain test case; one that FAILS holds a ``<failure type="FAIL" message=REASON>``; an
INCONCLUSIVE one holds a ``<failure type="INCONCLUSIVE">`` under ``--on-inconclusive fail`` and a
``<skipped message=REASON>`` otherwise (the gate neither passed nor failed it). Every test case carries the check's
full line (:func:`harness.report.terminal.gate_check_line`) and its regressed questions (at most
:data:`harness.report.regressions.CAP`) in ``<system-out>``.

The document is built with :mod:`xml.etree.ElementTree`, which escapes ``& < > "`` in text and attributes; characters
XML 1.0 cannot hold at all (control characters other than tab, newline and carriage return, lone surrogates) are
written as ``\\xNN`` / ``\\uNNNN`` escapes (:func:`xml_safe`), so any input string gives well-formed XML.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from harness.evaluation.changes import change_line
from harness.evaluation.gate import GateCheck, GateVerdict
from harness.evaluation.known_item_gate import known_item_only, known_item_properties
from harness.relpath import shown_path
from harness.report.regressions import CAP, regression_rows
from harness.report.terminal import gate_check_line
from harness.report.wording import gate_evidence_lines

_NOT_XML = re.compile(
    "[\x00-\x08\x0b\x0c\r\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)
"""Characters an XML 1.0 document cannot carry as they are: the control characters, lone surrogates, U+FFFE/U+FFFF,
and carriage return, which a parser turns into a line feed (XML 1.0 section 2.11, end-of-line handling); and those
it may carry but a terminal obeys (DEL, the C1 controls, the bidirectional controls;
:data:`harness.terminal_safe.CONTROL`), so the XML printed on a terminal shows them as escapes."""


def xml_safe(value) -> str:
    """``str(value)`` with every character of :data:`_NOT_XML` replaced by a visible escape (``\\x01``,
    ``\\r``, ``\\ud800``), so what a JUnit parser reads is what was written; the rest (escaped by ElementTree on
    output) is kept."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


def _outcome(v: GateVerdict, c: GateCheck) -> str:
    """``pass``, ``failure`` or ``skipped`` for a check, under the verdict's ``--on-inconclusive`` policy."""
    if c.decision == "FAIL" or (c.decision == "INCONCLUSIVE" and v.on_inconclusive == "fail"):
        return "failure"
    return "skipped" if c.decision == "INCONCLUSIVE" else "pass"


def _details(v: GateVerdict, c: GateCheck) -> str:
    lines = [gate_check_line(v, c)]
    rows, rest = regression_rows(c.regressions, CAP)
    if rows:
        lines.append(f"regressed questions ({len(c.regressions)}; first gold rank baseline -> candidate):")
        lines += [f"  {r[0]} ({r[1]}): {r[2]} -> {r[3]} ({r[4]}), rank {r[5]}" for r in rows]
        if rest:
            lines.append(f"  ... and {rest} more (every one in --format json)")
    return "\n".join(lines)


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs) -> ET.Element:
    e = ET.SubElement(parent, tag, {k: xml_safe(x) for k, x in attrs.items()})
    if text is not None:
        e.text = xml_safe(text)
    return e


def junit_xml(v: GateVerdict) -> str:
    """The JUnit XML document of a gate verdict (module docstring), with an XML declaration, UTF-8 text."""
    outcomes = [_outcome(v, c) for c in v.checks]
    counts = {
        "tests": str(len(v.checks)),
        "failures": str(outcomes.count("failure")),
        "errors": "0",
        "skipped": str(outcomes.count("skipped")),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "harness gate", **counts})
    suite = _el(root, "testsuite", name=f"harness gate: {v.system_candidate} - {v.system_baseline}", **counts)
    props = _el(suite, "properties")
    gs = v.goldset
    info = {
        "decision": v.decision,
        "exit_code": v.exit_code,
        "on_inconclusive": v.on_inconclusive or "",
        "baseline": f"{shown_path(v.baseline)} ({v.system_baseline})",
        "candidate": f"{shown_path(v.candidate)} ({v.system_candidate})",
        "split": v.split,
        "goldset": f"{gs.get('name')} v{gs.get('version')} sha256 {gs.get('sha256')}",
        "method": f"{v.method_label} ({v.method}), one-sided alpha {v.alpha:g}",
        "harness_version": v.harness_version,
        "reason": v.reason,
    }
    if v.report_url:
        info["report_url"] = v.report_url
    info["changes"] = "; ".join(change_line(c).removeprefix("changed: ") for c in v.changes) or "none"
    info.update(known_item_properties(v))
    if known_item_only(v):  # its own estimand and evidence, nothing about a gold set (issue 42 item 3)
        del info["goldset"], info["split"]
    info["estimand"], info["coverage_evidence"] = gate_evidence_lines(v)
    for name, value in info.items():
        _el(props, "property", name=name, value=str(value))
    for c, outcome in zip(v.checks, outcomes, strict=True):
        case = _el(suite, "testcase", classname=f"harness.gate.{c.kind}", name=c.name, time="0")
        if outcome == "failure":
            _el(case, "failure", _details(v, c), type=c.decision, message=f"{c.decision}: {c.reason}")
        elif outcome == "skipped":
            _el(case, "skipped", message=f"{c.decision}: {c.reason}")
        _el(case, "system-out", _details(v, c))
    if v.warnings:
        _el(suite, "system-err", "\n".join(f"warning: {w}" for w in v.warnings))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
