"""The validation rules: one function per rule, each declared with :func:`~harness.validate.rules.base.rule` and a
stable code.

Codes never change meaning; a new rule gets a new code. Rules marked *corpus* need ``--corpus``; without it they
are reported as "not checked: corpus unavailable", never as passed. A rule the contract does not ask for (V016
without ``per_split``, V017 without ``split_grouping``), or that does not concern a record (V030 outside
multi_document, V015 without a manifest), is reported as "not applicable", never as passed.

The rules live in :mod:`~harness.validate.rules.corpus` (V001–V005), :mod:`~harness.validate.rules.contract`
(V010–V017) and :mod:`~harness.validate.rules.records` (V020–V033); each function's docstring says what it checks.
The table below is generated from those docstrings (:func:`rules_table`).

"""

from __future__ import annotations

import textwrap

from harness.validate.report import RuleInfo
from harness.validate.rules import contract, corpus, records
from harness.validate.rules.base import Context, DatasetRule, RecordRule, normalize_question, rule_info

__all__ = ["RULES", "RULE_INFO", "Context", "normalize_question", "rules_table"]


def _collect() -> dict[str, tuple[RuleInfo, RecordRule | DatasetRule]]:
    found: dict[str, tuple[RuleInfo, RecordRule | DatasetRule]] = {}
    for module in (corpus, contract, records):
        for fn in vars(module).values():
            info = rule_info(fn) if callable(fn) else None
            if info is None or getattr(fn, "__module__", None) != module.__name__:
                continue
            if info.code in found:
                first = found[info.code][1].__name__
                raise ValueError(f"rule code {info.code} is declared twice ({first}, {fn.__name__})")
            found[info.code] = (info, fn)
    return dict(sorted(found.items()))


RULES: dict[str, tuple[RuleInfo, RecordRule | DatasetRule]] = _collect()
"""``{code: (RuleInfo, function)}`` in code order."""

RULE_INFO: list[RuleInfo] = [info for info, _ in RULES.values()]
"""The rules' descriptions in code order."""


def rules_table() -> str:
    """The rules as a reStructuredText table: code, name, scope, corpus need, and what it checks (the docstring)."""
    widths = (5, 23, 7, 6, 73)
    rule_line = " ".join("=" * w for w in widths)
    out = [rule_line, "code  name                    scope   corpus checks", rule_line]
    for info, fn in RULES.values():
        body = " ".join((fn.__doc__ or "").strip().split("\n\n", 1)[-1].split())
        body = body.removeprefix("Checks: ")
        wrapped = textwrap.wrap(body, widths[4], break_on_hyphens=False) or [""]
        head = f"{info.code:<5} {info.name:<23} {info.scope:<7} {'yes' if info.needs_corpus else 'no':<6} "
        out.append(head + wrapped[0])
        out += [" " * len(head) + w for w in wrapped[1:]]
    out.append(rule_line)
    return "\n".join(out) + "\n"


__doc__ = (__doc__ or "") + rules_table()
