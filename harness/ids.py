"""The one rule for ids that enter from outside (issue 26, items 10 and 11): what a TREC file can hold.

A run record exports its rankings and judgements as TREC files (``qid Q0 id rank score tag``, whitespace
separated) that ``evaluate`` and trec_eval read back. So an id that comes in from a plugin's results, a rankings
file or a gold-set import must be non-empty and hold no whitespace and no control character; and a **document** id
must hold no ``#``, the separator of chunk ids ``<doc_id>#<index>`` (a BEIR document ``a#1`` would be read back as
chunk 1 of document ``a``: its run scored MRR 1.0 and its own export 0.0). Such ids are refused where they enter,
naming the record, rather than escaped: every file the harness writes keeps the ids as the user gave them. A
document id enters through a corpus (``metadata.jsonl``'s ``doc_id``, or a walked file's name:
:mod:`harness.corpus.source`), a BEIR ``corpus.jsonl``, qrels (TREC or BEIR), a rankings file's ``docs`` (or a TREC
file read with ``--level document``) and a plugin's ``docs`` ranking; each is checked with ``document=True``.
"""

from __future__ import annotations

from harness.errors import HarnessInputError

__all__ = ["check_item_id", "id_problem"]


def id_problem(text: str, *, document: bool = False) -> str | None:
    """Why ``text`` cannot be an id (module docstring), or ``None``. ``document``: also refuse ``#``."""
    if not text:
        return "is empty"
    if any(c.isspace() for c in text):
        return "holds whitespace (TREC files separate their fields by whitespace)"
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return "holds a control character"
    if document and "#" in text:
        return "holds '#', the separator of chunk ids '<doc_id>#<index>' (a document id must not)"
    return None


def check_item_id(item: object, where: str, *, what: str = "id", document: bool = False) -> str:
    """``str(item)`` when it is a valid id, else one-line :class:`HarnessInputError` ``<where>: <what> 'x' ...``.

    Raises:
        HarnessInputError: see :func:`id_problem`.
    """
    text = str(item)
    problem = id_problem(text, document=document)
    if problem is not None:
        raise HarnessInputError(f"{where}: {what} {text!r} {problem}")
    return text
