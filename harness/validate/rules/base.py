"""What every rule reads and returns: the :class:`Context`, the finding helpers and the :func:`rule` decorator."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from harness.corpus.chunker import normalize_text
from harness.corpus.view import CorpusView
from harness.goldset.io import GoldSet
from harness.goldset.schema import GoldManifest, GoldRecord
from harness.validate.contract import Contract
from harness.validate.report import Finding, RuleInfo

__all__ = [
    "Context",
    "DatasetRule",
    "RecordRule",
    "fail",
    "line_of",
    "normalize_question",
    "not_applicable",
    "not_checked",
    "ok",
    "rule",
    "rule_info",
]


def normalize_question(q: str) -> str:
    """Question key for duplicate detection: chunker normaliser, casefold, punctuation dropped, spaces collapsed."""
    t = re.sub(r"[^\w\s]", " ", normalize_text(q).casefold())
    return re.sub(r"\s+", " ", t).strip()


@dataclass
class Context:
    """Everything the rules read.

    Attributes:
        goldset: the gold set (possibly corrected in memory).
        lines: JSONL line of each record, by index.
        contract: the contract, or ``None`` when only the rules that need none run (the checks before scoring,
            :mod:`harness.validate.scoring`: the corpus rules and :data:`~harness.validate.scoring.STRUCTURAL_RULES`).
        corpus: the corpus view, or ``None`` when the corpus is unavailable.
        ids_at: ``{record id: [indices of the records with that id]}`` (derived).
        questions_at: ``{normalised question: [indices]}`` (derived, :func:`normalize_question`).
        required_at: ``{document id: [indices of the records that list it as a required (grade 2) gold
            document]}`` (derived).
    """

    goldset: GoldSet
    lines: list[int | None]
    contract: Contract | None
    corpus: CorpusView | None = None
    ids_at: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False)
    questions_at: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False)
    required_at: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False)
    _both: dict[tuple[str, str], list[int]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for i, rec in enumerate(self.records):
            self.ids_at.setdefault(rec.qid, []).append(i)
            self.questions_at.setdefault(normalize_question(rec.question), []).append(i)
            for doc in dict.fromkeys(str(g.document_id) for g in rec.gold_documents if g.effective_grade == 2):
                self.required_at.setdefault(doc, []).append(i)

    def required_by_both(self, a: str, b: str) -> list[int]:
        """Indices (file order) of the records that list both ``a`` and ``b`` as required (grade 2) gold documents;
        computed once per pair (so a pair that many records share costs one intersection, not one per record)."""
        key = (a, b) if a <= b else (b, a)
        got = self._both.get(key)
        if got is None:
            got = sorted(set(self.required_at.get(a, [])) & set(self.required_at.get(b, [])))
            self._both[key] = got
        return got

    @property
    def records(self) -> list[GoldRecord]:
        """The records in file order."""
        return self.goldset.records

    @property
    def manifest(self) -> GoldManifest | None:
        """The manifest, if any."""
        return self.goldset.manifest


def ok() -> Finding:
    """A passed check."""
    return Finding("pass", "")


def fail(msg: str, where: str = "", **details) -> Finding:
    """A failed check: ``msg`` says what is wrong, ``where`` the field path, ``details`` machine-readable extras."""
    return Finding("fail", msg, where, details)


def warn(msg: str, where: str = "", **details) -> Finding:
    """A finding for a person to look at (status ``warn``): shown in every format, never changes the exit code."""
    return Finding("warn", msg, where, details)


def not_checked(msg: str, where: str = "") -> Finding:
    """A check that could not run (a missing corpus document, an unresolvable chunk): never counted as passed."""
    return Finding("not_checked", msg, where)


def not_applicable(msg: str, where: str = "") -> Finding:
    """A check that does not concern this record or contract: never counted as passed."""
    return Finding("not_applicable", msg, where)


def line_of(ctx: Context, i: int) -> str:
    """``"line N"`` of record ``i`` in its JSONL file, or ``"record #i+1"`` when the line is unknown."""
    ln = ctx.lines[i] if i < len(ctx.lines) else None
    return f"line {ln}" if ln is not None else f"record #{i + 1}"


RecordRule = Callable[[Context, int, GoldRecord], list[Finding]]
"""``rule(ctx, index, record) -> findings``: one call per record."""
DatasetRule = Callable[[Context], list[Finding]]
"""``rule(ctx) -> findings``: one call per gold set."""

_F = TypeVar("_F", RecordRule, DatasetRule)
_CODE = re.compile(r"V[0-9]{3}")


def rule(code: str, name: str, *, scope: Literal["record", "dataset"], needs_corpus: bool) -> Callable[[_F], _F]:
    """Declare a validation rule; its :class:`~harness.validate.report.RuleInfo` is kept on the function.

    The description is the first line of the function's docstring; the rest of the docstring says in full what the
    rule checks. :mod:`harness.validate.rules` collects the decorated functions into ``RULES`` in code order.

    Args:
        code: the stable code, ``V`` and three digits; a code never changes meaning.
        name: a short kebab-case name.
        scope: ``"record"`` (called once per record) or ``"dataset"`` (once per gold set).
        needs_corpus: without ``--corpus`` the rule is reported as "not checked: corpus unavailable".

    Raises:
        ValueError: a malformed code or scope, or a function without a docstring.
    """
    if not _CODE.fullmatch(code):
        raise ValueError(f"rule code {code!r}: expected V and three digits")
    if scope not in ("record", "dataset"):
        raise ValueError(f"rule {code}: scope {scope!r} is not 'record' or 'dataset'")

    def register(fn: _F) -> _F:
        doc = (fn.__doc__ or "").strip()
        if not doc:
            raise ValueError(f"rule {code} ({fn.__name__}): the docstring's first line is its description")
        fn.rule_info = RuleInfo(code, name, doc.splitlines()[0].strip(), scope, needs_corpus)  # type: ignore[union-attr]
        return fn

    return register


def rule_info(fn: Callable) -> RuleInfo | None:
    """The :class:`RuleInfo` that :func:`rule` attached to ``fn``, or ``None`` for any other function."""
    info = getattr(fn, "rule_info", None)
    return info if isinstance(info, RuleInfo) else None
