"""``harness goldset plan``: draw the documents on which to write a gold set's questions, by PPS (docs/goldsets.md).

With ``design="pps"`` the plan draws ``documents`` times with replacement, document d with probability
``p_d = q_d / sum(q)``, ``q_d`` its number of chunk-queries (the known-item chunking of the corpus:
``md-words-v1`` windows of ``chunk_words`` words, queries as in ``harness known-item``; a document with one chunk has
none and is never drawn). Questions written on the draws (the first gold document of each question is its draw's
document) make a gold set whose question mean, read as the Hansen-Hurwitz mean over draws, estimates the corpus's
chunk-weighted mean; on this corpus that interval covers 95.7-97.2 % (logit) where a gold set on documents chosen at
will has no interval for that target (docs/measurements.md). ``design="srs"`` draws without replacement, equal
probabilities (the document-level mean).

Written (a new dataset folder, atomically): ``<name>.meta.json`` (a :class:`harness.goldset.schema.GoldManifest` with
the corpus's version and hash and a ``design`` section: ``sampling``, ``seed``, ``size_measure``, ``documents`` and
``draws`` ``[{"draw": j, "doc_id", "p"}]``), an empty ``<name>.jsonl`` to write the records into, and ``PLAN.md``
listing the draws. A document drawn twice gets questions for each draw;
:func:`harness.evaluation.design.design_clusters` deals a document's questions to its draws in question-id order.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessInputError
from harness.io import atomic_directory
from harness.studies.known_item.corpus import chunk_corpus
from harness.studies.known_item.sample import bound_draws, draw_documents

#: The longest gold-set name a plan takes, in UTF-8 bytes (it names ``<name>.meta.json``: a file name has at most
#: 255 bytes, and the folder's temporary sibling adds up to 22: :func:`harness.io.temporary_path`).
NAME_MAX_BYTES = 200


def check_plan_name(name: str, *, field: str = "--name") -> None:
    """Refuse a gold-set name that cannot name the plan's files: the name is the stem of ``<name>.meta.json`` and
    ``<name>.jsonl`` inside ``--out``, so it must be a plain file name (no ``/`` or ``\\``, no control character,
    not starting with ``.``, no white space at either end, at most :data:`NAME_MAX_BYTES` bytes), and it must give
    a contract name under the gold sets' slug rule (:func:`harness.validate.contract.contract_slug`: at least one
    letter or digit). Nothing can then be written outside ``--out``.

    Raises:
        HarnessInputError: one line naming ``field`` and what is wrong (the name shown escaped), exit 2.
    """
    from harness.validate.contract import contract_slug

    shown = ascii(name if len(name) <= 60 else name[:60] + "...")
    size = len(name.encode("utf-8", "surrogatepass"))
    bad = next((ch for ch in name if unicodedata.category(ch) in ("Cc", "Cs")), None)
    why = (
        "is empty or blank" if not name.strip()
        else f"is {size} bytes long in UTF-8, over the {NAME_MAX_BYTES} a gold-set name may have"
        if size > NAME_MAX_BYTES
        else f"contains the control character U+{ord(bad):04X}" if bad is not None
        else "contains a path separator ('/' or '\\')" if "/" in name or "\\" in name
        else "starts with '.'" if name.startswith(".")
        else "starts or ends with white space" if name != name.strip()
        else None
    )  # fmt: skip
    if why is not None:
        raise HarnessInputError(
            f"{field} {shown}: {why}; a gold-set name names the files inside --out: give a plain name"
        )
    contract_slug(name, "0.1.0", where=f"{field} {shown}")


@dataclass
class GoldsetPlan:
    """What :func:`plan_goldset` wrote: ``out_dir``, ``manifest`` (the dict written) and ``draws``."""

    out_dir: Path
    manifest: dict
    draws: list[dict]

    def to_dict(self) -> dict:
        """JSON form."""
        return {"out_dir": str(self.out_dir), "manifest": self.manifest, "draws": self.draws}

    def __rich__(self):
        from rich.table import Table
        from rich.text import Text

        d = self.manifest["design"]
        t = Table(title=Text(f"Gold-set plan: {len(self.draws)} draws ({d['sampling']}, seed {d['seed']})"))
        for col in ("draw", "document", "probability"):
            t.add_column(col, justify="left" if col == "document" else "right")
        for r in self.draws:
            t.add_row(str(r["draw"]), Text(r["doc_id"]), f"{r['p']:.5f}")
        t.caption = Text(f"wrote {self.out_dir}: write each draw's questions (first gold document = its document)")
        return t


def plan_goldset(
    corpus_dir: str | Path,
    out_dir: str | Path,
    *,
    documents: int = 27,
    design: str = "pps",
    seed: int = 0,
    name: str | None = None,
    chunk_words: int = 100,
    query_words: int = 20,
) -> GoldsetPlan:
    """Draw the plan (module docstring) and write the new dataset folder ``out_dir``.

    Raises:
        HarnessInputError: ``out_dir`` exists; ``name`` (default: the folder's name) is no plain gold-set name
            (:func:`check_plan_name`); an unreadable corpus; an unknown design; too few documents, or more than the
            corpus holds (:func:`harness.studies.known_item.sample.bound_draws`).
    """
    out = Path(out_dir)
    if out.exists():
        raise HarnessInputError(f"--out {out}: already exists; refusing to overwrite")
    check_plan_name(name if name is not None else out.name, field="--name" if name is not None else "--out")
    cc = chunk_corpus(corpus_dir, chunk_words=chunk_words, query_words=query_words)
    bound_draws(cc, documents, design, field="--documents", per_document=False)
    sample = draw_documents(cc, documents, design, seed)
    draws = [
        {"draw": j, "doc_id": cc.doc_ids[d], "p": float(p)}
        for j, (d, p) in enumerate(zip(sample.docs, sample.p, strict=True))
    ]
    stem = name if name is not None else out.name
    manifest = {
        "name": stem,
        "version": "0.1.0",
        "corpus_version": f"{cc.corpus_id}@{cc.corpus_hash[:12]}" if cc.corpus_hash else cc.corpus_id,
        "corpus_hash": cc.corpus_hash,
        "corpus_documents": len(cc.doc_ids),
        "chunker_version": "md-words-v1",
        "schema_version": 1,
        "records_file": f"{stem}.jsonl",
        "design": {
            "sampling": design,
            "seed": seed,
            "documents": documents,
            "size_measure": f"chunk-queries per document ({cc.chunker_id}, first {query_words} words)",
            "draws": draws,
        },
    }
    lines = [f"# Plan of {stem}", "", f"{documents} draws by {design} (seed {seed}); write questions on each draw,",
             "with the draw's document as the first gold document.", "", "| draw | document | probability |",
             "| ---: | :--- | ---: |"] + [f"| {r['draw']} | {r['doc_id']} | {r['p']:.5f} |" for r in draws]  # fmt: skip
    with atomic_directory(out, inputs=(corpus_dir,), kind="goldset-plan", marker=False) as tmp:
        (tmp / f"{stem}.meta.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
        (tmp / f"{stem}.jsonl").write_text("", encoding="utf-8")
        (tmp / "PLAN.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return GoldsetPlan(out, manifest, draws)
