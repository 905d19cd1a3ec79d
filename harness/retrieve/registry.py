"""Systems by name: base retrievers (``bm25``, ``vector``), fusions (``rrf``, ``rrf:k=30``, ``w0.25`` ...) and
two-stage evidence search (``two-stage:<system>``).

Fusion systems combine the ``bm25`` and ``vector`` lists of each question, separately at document level and at
chunk level, each input list cut at the run's depth first (documents 50, chunks 200 by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.goldset.io import GoldSet
from harness.retrieve.base import QueryResult

BASE_SYSTEMS = ("bm25", "vector")


def _is_fusion(name: str) -> bool:
    return name == "rrf" or name.startswith("rrf:") or (name.startswith("w") and name[1:2].isdigit())


class SystemSet:
    """The systems of one run, with what they need built once.

    Args:
        names: system names in the order to report them.
        corpus: open corpus.
        workdir: derived files.
        options: a :class:`harness.evaluation.pipeline.RunOptions`.
        progress: progress bars while building.
        log: one-line messages.

    Raises:
        HarnessInputError: unknown system name.
    """

    def __init__(self, names: Sequence[str], corpus: Corpus, workdir: Path, *, options, progress=False, log=None):
        self.names = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        if not self.names:
            raise HarnessInputError("--systems: no system named")
        self.corpus = corpus
        self.workdir = workdir
        self.options = options
        self.progress = progress
        self.say: Callable[[str], None] = log or (lambda _m: None)
        self.timings: dict[str, float] = {}
        self._configs: dict[str, dict] = {}
        self._base: dict[str, object] = {}
        self._fusions: dict[str, object] = {}
        self._two_stage: dict[str, object] = {}
        needed: set[str] = set()
        for n in self.names:
            if n in BASE_SYSTEMS:
                needed.add(n)
            elif _is_fusion(n):
                from harness.retrieve.fusion import FusionSpec

                try:
                    self._fusions[n] = FusionSpec.parse(n)
                except ValueError as exc:
                    raise HarnessInputError(f"--systems: {n}: {exc}") from None
                needed |= {"bm25", "vector"}
            elif n.startswith("two-stage:"):
                inner = n.split(":", 1)[1]
                if not inner:
                    raise HarnessInputError(f"--systems: {n}: name the first-stage system (two-stage:rrf)")
                self._two_stage[n] = inner
                needed |= {"bm25", "vector"}
                if inner in BASE_SYSTEMS:
                    needed.add(inner)
                elif _is_fusion(inner):
                    from harness.retrieve.fusion import FusionSpec

                    self._fusions.setdefault(inner, FusionSpec.parse(inner))
                else:
                    raise HarnessInputError(f"--systems: {n}: unknown first-stage system {inner!r}")
            else:
                raise HarnessInputError(
                    f"--systems: unknown system {n!r} "
                    "(known: bm25, vector, rrf, rrf:k=<k>, w<weight>, two-stage:<system>)"
                )
        for base in BASE_SYSTEMS:
            if base in needed:
                self._build_base(base)

    def _build_base(self, name: str) -> None:
        t0 = time.perf_counter()
        if name == "bm25":
            from harness.retrieve.bm25 import BM25System

            sys_ = BM25System(self.corpus, self.workdir)
            self.timings["bm25_index_build"] = sum(sys_.build_seconds.values())
            self.say(
                "bm25: indexes "
                + ("built" if any(sys_.build_seconds.values()) else "loaded")
                + f" in {time.perf_counter() - t0:.1f} s"
            )
        else:
            from harness.retrieve.vector import open_vector_system

            sys_ = open_vector_system(self.corpus, self.workdir, options=self.options, progress=self.progress)
            self.timings["vector_index_build"] = round(time.perf_counter() - t0, 3)
            self.say(f"vector: index ready in {time.perf_counter() - t0:.1f} s")
        self._base[name] = sys_
        self._configs[name] = sys_.config()

    def search_all(self, queries: Sequence[str], qids: Sequence[str]) -> dict[str, dict[str, QueryResult]]:
        """Results ``{system: {qid: QueryResult}}`` for every named system, in the order of ``names``."""
        o = self.options
        base_res: dict[str, list[QueryResult]] = {}
        for name, sys_ in self._base.items():
            t0 = time.perf_counter()
            base_res[name] = sys_.search(queries, doc_depth=o.doc_depth, chunk_depth=o.chunk_depth)
            self.timings[f"{name}_search"] = round(time.perf_counter() - t0, 4)
            self.timings[f"{name}_ms_per_query"] = round(1000 * (time.perf_counter() - t0) / max(1, len(queries)), 3)
        derived: dict[str, list[QueryResult]] = dict(base_res)
        for name, spec in self._fusions.items():
            t0 = time.perf_counter()
            derived[name] = [
                QueryResult(
                    docs=spec.fuse(
                        [base_res["bm25"][i].docs or [], base_res["vector"][i].docs or []], depth=o.doc_depth
                    ),
                    chunks=spec.fuse(
                        [base_res["bm25"][i].chunks or [], base_res["vector"][i].chunks or []], depth=o.chunk_depth
                    ),
                    flags={},
                )
                for i in range(len(queries))
            ]
            self.timings[f"{name}_fusion"] = round(time.perf_counter() - t0, 4)
            self._configs[name] = {"system": name, **spec.config(), "inputs": self._component_configs()}
        for name, inner in self._two_stage.items():
            from harness.retrieve.two_stage import TwoStage

            ts = TwoStage(self._base["bm25"], self._base["vector"], self.corpus)
            t0 = time.perf_counter()
            derived[name] = ts.search(queries, derived[inner], doc_depth=o.doc_depth, chunk_depth=o.chunk_depth)
            self.timings[f"{name}_search"] = round(time.perf_counter() - t0, 4)
            self._configs[name] = {
                "system": name,
                "first_stage": inner,
                **ts.config(),
                "inputs": self._component_configs(),
            }
        return {n: dict(zip(qids, derived[n], strict=True)) for n in self.names}

    def _component_configs(self) -> dict[str, dict]:
        """Configs of the base systems a derived system reads (so a hybrid-only run still records the model)."""
        return {b: self._configs[b] for b in BASE_SYSTEMS if b in self._configs}

    def configs(self) -> dict[str, dict]:
        """``{system: config}`` for the manifest."""
        return {n: self._configs.get(n, {}) for n in self.names}

    def index_bytes(self) -> dict[str, int]:
        """Index sizes on disk."""
        out: dict[str, int] = {}
        for name, sys_ in self._base.items():
            sizes = getattr(sys_, "index_bytes", None)
            if isinstance(sizes, dict):
                out.update({f"{name}_{k}": v for k, v in sizes.items()})
            elif isinstance(sizes, int):
                out[name] = sizes
        return out

    def coverage_info(self, goldset: GoldSet) -> dict:
        """Vector index coverage (chunks indexed, gold documents fully covered); empty without a vector system."""
        vec = self._base.get("vector")
        if vec is None:
            return {}
        cov = vec.coverage()
        gold_docs = sorted({str(g.document_id) for r in goldset.records for g in r.gold_documents})
        covered = [d for d in gold_docs if vec.is_fully_indexed(d)]
        return {
            **{k: v for k, v in cov.items() if k != "indexed_doc_ids"},
            "gold_documents": len(gold_docs),
            "gold_documents_fully_indexed": len(covered),
            "gold_documents_not_indexed": [d for d in gold_docs if d not in set(covered)],
        }

    def slices(self, goldset: GoldSet) -> dict[str, set[str]]:
        """``{"covered": qids}`` (questions whose gold documents are all fully indexed) when the vector index is
        partial; empty otherwise."""
        vec = self._base.get("vector")
        if vec is None:
            return {}
        cov = vec.coverage()
        if cov.get("n_indexed_chunks") == cov.get("n_total_chunks"):
            return {}
        return {
            "covered": {
                r.qid
                for r in goldset.records
                if all(vec.is_fully_indexed(str(g.document_id)) for g in r.gold_documents)
            }
        }
