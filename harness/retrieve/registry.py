"""One home for retrieval systems: names -> typed options -> built systems -> results, for every kind of system.

Kinds
-----
===============  ==========================================  =====================================================
kind             names                                       options (typed, pydantic)
===============  ==========================================  =====================================================
``bm25``         ``bm25``, ``bm25:k1=0.9:b=0.4``,             :class:`~harness.retrieve.bm25.BM25Options`
                 ``bm25:method=bm25+:delta=1``
``vector``       ``vector``, ``vector:binarize=centered``    :class:`~harness.retrieve.vector.VectorOptions`
``tfidf``        ``tfidf``                                   :class:`~harness.retrieve.tfidf.TfidfOptions`
fusion           ``rrf``, ``rrf:k=10:bm25+mine``, ``w0.6``,  the method's options
                 ...                                         (:data:`harness.retrieve.fusion.FUSIONS`)
``two-stage``    ``two-stage:rrf``,                          :class:`~harness.retrieve.two_stage.TwoStageOptions`
                 ``two-stage[reranker=py:r.py:make]:bm25``
``py``           ``py:MODULE:ATTR`` (a user's retriever)     none (:mod:`harness.retrieve.plugin`)
===============  ==========================================  =====================================================

Names follow one grammar (:mod:`harness.retrieve.names`): ``NAME[:key=value...]`` or ``NAME[key=value;...]``, then
the inputs of a fusion (``+``-separated) or the first stage of two-stage. A list item ``alias=NAME`` names a system
(``mine=py:plugins/mine.py:Mine``, ``ctr=vector:binarize=centered``); other names may then use the alias as an input
(``rrf:bm25+mine``). Names are kept exactly as typed and every name is reported, so two names for the same system
(``rrf`` and ``rrf:bm25+vector``) may appear in one run: they are built and searched once and give the same
rankings. Options not written in a name come from the run's defaults per kind (``--model``, ``--binarize``,
``--rescore``, ``--vector-backend``, ``--index-fraction``, ``--until`` are the ``vector`` defaults; only the flags
given count), then from the options model (``vector:model=e5-small`` gets e5's centred bits unless ``--binarize``
or ``binarize=`` says otherwise).

A fusion fuses, at each level (documents, chunks) and for each question, the inputs that returned a ranking at that
level (an input without one contributes nothing; flags ``partial_doc_fusion`` / ``partial_chunk_fusion``); with no
input at a level, the fusion has no ranking there. Each input list is cut at the run's depth (documents 50, chunks
200 by default) first. Two-stage reads its first stage's results, the run's ``bm25`` system and the ``vector`` system
its options name (default ``vector``).

A user's retriever's results are checked (one result per query; ``(id, finite score)`` pairs) and made canonical
(:func:`harness.ranking.canonical_ranking`), cut at the depths.

Run records (:meth:`SystemPlan.record`, the manifest's ``system_options``) hold every system the run needed, by
name: the text it was parsed from, its kind, its typed options, its inputs and (plugins, rerankers) module,
attribute and sha256, so :meth:`SystemPlan.from_record` replays a run exactly.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.goldset.io import GoldSet
from harness.memory import peak_rss_mib
from harness.progress import progress_bar, stage
from harness.retrieve.base import QueryResult, SystemContext
from harness.retrieve.bm25.system import BM25Options, open_bm25_system
from harness.retrieve.fusion import FUSIONS, FusionSpec, fuse_results, fusion_method
from harness.retrieve.names import ALIAS_RE, parse_name, split_systems
from harness.retrieve.plugin import (
    Plugin,
    check_results,
    is_plugin_spec,
    load_plugin,
    plugin_call,
    unknown_id_warnings,
)
from harness.retrieve.rerank import load_reranker
from harness.retrieve.tfidf import TfidfOptions, open_tfidf_system
from harness.retrieve.two_stage import TwoStage, TwoStageOptions
from harness.retrieve.vector.system import VectorIndex, VectorOptions, open_vector_system

__all__ = ["KINDS", "SystemKind", "SystemPlan", "SystemRecord", "SystemSet", "known_systems", "plan_systems"]


@dataclass(frozen=True)
class SystemKind:
    """A base kind of the registry: a system built from the corpus alone.

    Attributes:
        name: the head of its names (``"bm25"``).
        options: its typed options model (frozen pydantic; unknown keys refused).
        open: ``open(context, options) -> Retriever``.
        description: one line for help texts.
    """

    name: str
    options: type[BaseModel]
    open: Callable[[SystemContext, BaseModel], object]
    description: str


KINDS: dict[str, SystemKind] = {
    k.name: k
    for k in (
        SystemKind("bm25", BM25Options, open_bm25_system, "BM25 (bm25s, Lucene), document and chunk indexes"),
        SystemKind("vector", VectorOptions, open_vector_system, "binary vectors in sqlite-vec, Hamming distance"),
        SystemKind("tfidf", TfidfOptions, open_tfidf_system, "TF-IDF cosine (scikit-learn weights), in memory"),
    )
}
"""The base kinds: ``{head: SystemKind}``. Fusions are :data:`harness.retrieve.fusion.FUSIONS`; ``two-stage`` and
``py:`` plugins are built from other systems / user code."""

TWO_STAGE = "two-stage"

PLUGIN_BLOCKS = 20
"""A ``py:`` retriever is asked for about this many blocks of queries in ``harness run`` (its progress steps)."""


def known_systems() -> str:
    """One line listing what a system name may be (for error messages and help)."""
    fusions = ", ".join(sorted(FUSIONS))
    return (
        f"known: {', '.join(KINDS)}, fusions ({fusions}; e.g. rrf, rrf:k=<k>, w<weight>, each optionally "
        f":<input>+<input>), {TWO_STAGE}:<system>, py:MODULE:ATTR; alias=<system> names one"
    )


class SystemRecord(BaseModel):
    """What a run records of one system (the manifest's ``system_options.<name>``).

    Attributes:
        text: the system name it was parsed from (after an alias: ``mine=py:m.py:M`` records ``py:m.py:M``).
        kind: ``bm25``, ``vector``, ``fusion``, ``two-stage`` or ``py``.
        method: the fusion method (fusions only).
        options: the typed options, as JSON.
        inputs: the names of the systems it reads (each a key of the same ``system_options``).
        plugin: provenance of a ``py:`` retriever or a two-stage reranker given as ``py:``/``cross-encoder:``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    kind: str
    method: str | None = None
    options: dict = {}
    inputs: tuple[str, ...] = ()
    plugin: dict | None = None


@dataclass
class _Node:
    record: SystemRecord
    options: BaseModel | None = None
    fusion: FusionSpec | None = None
    plugin: Plugin | None = None
    reranker: object | None = None


def _one_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "options"
    return f"{loc}: {err['msg'].removeprefix('Value error, ')} (got {err.get('input')!r})"


def _options(model: type[BaseModel], values: Mapping, where: str) -> BaseModel:
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise HarnessInputError(f"{where}: {_one_line(exc)}") from None


def _dump(options: BaseModel) -> dict:
    """The options as recorded: every field, or (an options model with ``record_defaults = False``, such as
    ``bm25``'s) only those that differ from their defaults, so a name spelling a default is the default system."""
    return options.model_dump(mode="json", exclude_defaults=not getattr(options, "record_defaults", True))


RECORDED_BEFORE: dict[str, dict] = {"vector": {"rescore": 0}, TWO_STAGE: {"dense": "hamming"}}
"""Options a record written before they existed leaves out, with the value that reproduces it: such a ``vector``
system ranked by Hamming distance alone (``rescore=0``), such a ``two-stage`` system scored its candidates by
``-hamming`` (``dense=hamming``). :meth:`SystemPlan.from_record` applies them under the recorded options."""


def _dump_set(options: BaseModel) -> dict:
    """The options a run's defaults object was given explicitly (a value the options model resolved itself, such as
    a model's default binarisation, is left to each name's own model)."""
    return options.model_dump(mode="json", exclude_unset=True)


def _is_head(name: str) -> bool:
    head = parse_name(name).head if name.strip() else ""
    return head in KINDS or head in (TWO_STAGE, "py") or fusion_method(head) is not None


@dataclass
class SystemPlan:
    """The systems of one run, parsed and checked, before anything is built.

    Attributes:
        names: the reported names, in order (as typed; aliases by their alias).
        nodes: every system the run needs (the reported ones and their inputs), inputs before the systems that read
            them.
    """

    names: list[str]
    nodes: dict[str, _Node] = field(default_factory=dict)

    # ---- parsing --------------------------------------------------------------------------------------------------

    @classmethod
    def parse(
        cls, names: Sequence[str], *, defaults: Mapping[str, BaseModel] | None = None, field: str = "--systems"
    ) -> SystemPlan:
        """Parse system names (see the module docstring); plugins and rerankers are loaded here.

        Args:
            names: system names; an item holding commas is split at them (outside brackets).
            defaults: ``{kind: options}`` defaults of ``bm25``, ``vector`` and ``two-stage`` systems.
            field: what error messages name.

        Raises:
            HarnessInputError: no name; an unknown system; a malformed name or option; an option out of range; an
                alias that shadows a system name or is given twice; inputs that form a cycle; a plugin or reranker
                that cannot be loaded.
        """
        defaults = dict(defaults or {})
        for kind, value in defaults.items():
            want = TwoStageOptions if kind == TWO_STAGE else (KINDS[kind].options if kind in KINDS else None)
            if want is None or not isinstance(value, want):
                raise HarnessInputError(f"{field}: defaults for {kind!r}: expected {want.__name__ if want else None}")
        items = [p for n in names for p in split_systems(n)]
        aliases: dict[str, str] = {}
        reported: list[str] = []
        for item in items:
            m = ALIAS_RE.fullmatch(item)
            if m is not None:
                alias, text = m.group(1), m.group(2).strip()
                if _is_head(alias):
                    raise HarnessInputError(f"{field}: alias {alias!r} is a system name; choose another")
                if alias in aliases and aliases[alias] != text:
                    raise HarnessInputError(f"{field}: alias {alias!r} given twice")
                aliases[alias] = text
                reported.append(alias)
            else:
                reported.append(item)
        reported = list(dict.fromkeys(reported))
        if not reported:
            raise HarnessInputError(f"{field}: no system named")
        plan = cls(reported)
        for name in reported:
            plan._resolve(name, aliases, defaults, field, ())
        return plan

    def _resolve(self, name: str, aliases: dict, defaults: dict, field: str, stack: tuple[str, ...]) -> None:
        if name in self.nodes:
            return
        if name in stack:
            raise HarnessInputError(f"{field}: {name!r} reads itself ({' -> '.join((*stack, name))})")
        text = aliases.get(name, name)
        node = _parse_node(text, defaults, field if text == name else f"{field}: {name}")
        for inp in node.record.inputs:
            self._resolve(inp, aliases, defaults, field, (*stack, name))
        self.nodes[name] = node

    # ---- records ---------------------------------------------------------------------------------------------------

    def record(self) -> dict[str, dict]:
        """``{name: SystemRecord as JSON}`` for every system of the plan (the manifest's ``system_options``)."""
        return {name: node.record.model_dump(mode="json") for name, node in self.nodes.items()}

    @classmethod
    def from_record(
        cls, record: Mapping[str, Mapping], names: Sequence[str], *, field: str = "system_options"
    ) -> SystemPlan:
        """The plan a run recorded (:meth:`record`), to replay it: same systems, same options, same plugins.

        Raises:
            HarnessInputError: a malformed record; a reported name or input without an entry; a plugin or reranker
                whose source file changed (sha256) or cannot be loaded.
        """
        plan = cls(list(names))
        for name in names:
            plan._replay(name, record, field, ())
        return plan

    def _replay(self, name: str, record: Mapping, field: str, stack: tuple[str, ...]) -> None:
        if name in self.nodes:
            return
        if name in stack or name not in record:
            raise HarnessInputError(f"{field}: {name!r}: " + ("reads itself" if name in stack else "no entry"))
        where = f"{field}.{name}"
        try:
            rec = SystemRecord.model_validate(record[name])
        except ValidationError as exc:
            raise HarnessInputError(f"{where}: {_one_line(exc)}") from None
        node = _Node(rec)
        if rec.kind in KINDS:
            old = RECORDED_BEFORE.get(rec.kind, {})
            node.options = _options(KINDS[rec.kind].options, {**old, **rec.options}, where)
        elif rec.kind == "fusion" and rec.method in FUSIONS:
            opts = _options(FUSIONS[rec.method].options, rec.options, where)
            node.fusion = FusionSpec(rec.method, opts, rec.inputs)  # type: ignore[arg-type]
        elif rec.kind == TWO_STAGE:
            node.options = _options(TwoStageOptions, {**RECORDED_BEFORE[TWO_STAGE], **rec.options}, where)
            if node.options.reranker:
                node.reranker = _reranker(node.options.reranker, where, (rec.plugin or {}).get("sha256"))
        elif rec.kind == "py" and rec.plugin:
            node.plugin = load_plugin(rec.plugin["spec"], field=where, sha256=rec.plugin.get("sha256"))
        else:
            raise HarnessInputError(f"{where}: unknown kind {rec.kind!r} (method {rec.method!r})")
        for inp in rec.inputs:
            self._replay(inp, record, field, (*stack, name))
        self.nodes[name] = node

    # ---- identity -------------------------------------------------------------------------------------------------

    def key(self, name: str) -> str:
        """What identifies the system ``name`` builds (kind, options, plugin file, the keys of its inputs): two names
        with one key are one system, built and searched once."""
        rec = self.nodes[name].record
        plugin = None if rec.plugin is None else (rec.plugin.get("spec"), rec.plugin.get("sha256"))
        ident = [rec.kind, rec.method, rec.options, plugin, [self.key(i) for i in rec.inputs]]
        return json.dumps(ident, sort_keys=True, ensure_ascii=False)


def plan_systems(
    names: Sequence[str] | SystemPlan, *, defaults: Mapping[str, BaseModel] | None = None, field: str = "--systems"
) -> SystemPlan:
    """:meth:`SystemPlan.parse` (a plan given is returned as is)."""
    return names if isinstance(names, SystemPlan) else SystemPlan.parse(names, defaults=defaults, field=field)


def _reranker(spec: str, where: str, sha256: str | None = None):
    reranker, provenance = load_reranker(spec, field=f"{where}: reranker")
    if sha256 is not None and provenance.get("sha256") != sha256:
        raise HarnessInputError(f"{where}: reranker {spec}: source sha256 differs from the recorded one")
    return reranker, provenance


def _parse_node(text: str, defaults: Mapping[str, BaseModel], field: str) -> _Node:
    """One system name -> its node (plugins and rerankers loaded); ``field`` names where it came from."""
    where = f"{field}: {text!r}"
    if is_plugin_spec(text):
        plugin = load_plugin(text, field=field)
        return _Node(SystemRecord(text=text, kind="py", plugin=plugin.record()), plugin=plugin)
    parsed = parse_name(text, where=field)
    if fusion_method(parsed.head) is not None:
        spec = FusionSpec.parse(text, where=field)
        rec = SystemRecord(
            text=text, kind="fusion", method=spec.method, options=_dump(spec.options), inputs=spec.inputs
        )
        return _Node(rec, fusion=spec)
    if parsed.head == TWO_STAGE:
        if not parsed.rest:
            raise HarnessInputError(f"{where}: name the first-stage system ({TWO_STAGE}:rrf)")
        base = _dump_set(defaults[TWO_STAGE]) if TWO_STAGE in defaults else {}
        opts = _options(TwoStageOptions, {**base, **parsed.options}, where)
        inputs = (parsed.rest, "bm25", *((opts.reads_vector,) if opts.reads_vector else ()))
        node = _Node(SystemRecord(text=text, kind=TWO_STAGE, options=_dump(opts), inputs=inputs), options=opts)
        if opts.reranker:
            node.reranker = _reranker(opts.reranker, where)
            node.record = node.record.model_copy(update={"plugin": node.reranker[1]})
        return node
    if parsed.head in KINDS:
        if parsed.rest is not None:
            raise HarnessInputError(f"{where}: {parsed.head} takes options (key=value), not {parsed.rest!r}")
        kind = KINDS[parsed.head]
        base = _dump_set(defaults[kind.name]) if kind.name in defaults else {}
        opts = _options(kind.options, {**base, **parsed.options}, where)
        return _Node(SystemRecord(text=text, kind=kind.name, options=_dump(opts)), options=opts)
    raise HarnessInputError(f"{field}: unknown system {text!r} ({known_systems()})")


# --------------------------------------------------------------------------------------------------------------------
# Building and searching


@contextlib.contextmanager
def _naming(name: str):
    """Prefix ``system <name>: `` to an input error raised inside (a two-stage reranker's, which knows no name)."""
    try:
        yield
    except HarnessInputError as exc:
        raise HarnessInputError(f"system {name}: {exc}") from None


class SystemSet:
    """The systems of one run, each built once: open indexes, load plugins, search, fuse, record.

    Args:
        plan: the run's :class:`SystemPlan` (or names, parsed with ``defaults``).
        corpus: the open corpus.
        workdir: derived files.
        defaults: ``{kind: options}`` when ``plan`` is given as names.
        progress: progress bars while building.
        log: one-line messages.

    Raises:
        HarnessInputError: what parsing and the systems' factories raise.
    """

    def __init__(
        self,
        plan: SystemPlan | Sequence[str],
        corpus: Corpus,
        workdir: Path,
        *,
        defaults: Mapping[str, BaseModel] | None = None,
        progress: bool = False,
        log: Callable[[str], None] | None = None,
    ):
        self.plan = plan_systems(plan, defaults=defaults)
        self.names = list(self.plan.names)
        self.corpus = corpus
        self.context = SystemContext(corpus, Path(workdir), progress, log or (lambda _m: None))
        self.timings: dict[str, float] = {}
        self.peak_rss_mib: dict[str, float] = {}  # {"<system>_index_build" / "<system>_search": MiB after it}
        self._first: dict[str, str] = {}  # key -> the first name with it
        self._built: dict[str, object] = {}  # key -> the system object (base kinds, plugins, TwoStage)
        self._configs: dict[str, dict] = {}
        self.warnings: list[str] = []  # plugins' unknown ids (issue 26 item 9), for the summary's warnings
        for name, node in self.plan.nodes.items():
            key = self.plan.key(name)
            self._first.setdefault(key, name)
            if key not in self._built and node.fusion is None:
                self._built[key] = self._build(name, node)
        self._check_analyzers()

    def analyzer_choices(self) -> dict[str, dict]:
        """``{system: {"analyzer_id", "chosen_by"}}`` of the run's ``bm25`` and ``tfidf`` systems (the manifest's
        ``analyzers``; :class:`harness.retrieve.analyzer.AnalyzerChoice`)."""
        objs = {n: getattr(self._built.get(self.plan.key(n)), "analyzer_choice", None) for n in self.plan.nodes}
        return {name: choice.record() for name, choice in objs.items() if choice is not None}

    def _check_analyzers(self) -> None:
        """The default analyzer's note (once, through ``log``) and the language check's warnings of the run
        (:func:`harness.retrieve.analyzer.check_analyzers`)."""
        from harness.retrieve.analyzer import check_analyzers

        self.warnings += check_analyzers(self._built.values(), self.corpus, self.context.log)

    def _obj(self, name: str):
        return self._built[self.plan.key(name)]

    def _build(self, name: str, node: _Node):
        rec = node.record
        if node.plugin is not None:
            return node.plugin.obj
        if rec.kind == TWO_STAGE:
            opts: TwoStageOptions = node.options  # type: ignore[assignment]
            vector = self._obj(opts.reads_vector) if opts.reads_vector else None
            if vector is not None and not isinstance(vector, VectorIndex):
                raise HarnessInputError(f"{name}: vector={opts.vector!r} is not a vector system")
            return TwoStage(
                self._obj("bm25"),
                vector,
                self.corpus,
                top_docs=opts.top_docs,
                scorer=opts.scorer,
                dense=opts.dense,
                fusion=opts.fusion,
                reranker=None if node.reranker is None else node.reranker[0],
                rerank_top=opts.rerank_top,
                backfill=opts.backfill,
                reranker_spec=opts.reranker,
            )
        t0 = time.perf_counter()
        obj = KINDS[rec.kind].open(self.context, node.options)
        self.timings[f"{name}_index_build"] = round(time.perf_counter() - t0, 3)
        self.peak_rss_mib[f"{name}_index_build"] = peak_rss_mib()
        return obj

    def search_all(
        self, queries: Sequence[str], qids: Sequence[str], *, doc_depth: int, chunk_depth: int
    ) -> dict[str, dict[str, QueryResult]]:
        """Results ``{system: {qid: QueryResult}}`` for every reported system, in the order of ``names``.

        Raises:
            HarnessInputError: a plugin's malformed results or failing ``search``.
        """
        queries = list(queries)
        done: dict[str, list[QueryResult]] = {}  # key -> results
        for name, node in self.plan.nodes.items():
            key = self.plan.key(name)
            if key in done:
                continue
            t0 = time.perf_counter()
            rec = node.record
            if node.fusion is not None:
                done[key] = self._fuse(node.fusion, [done[self.plan.key(i)] for i in rec.inputs])
                self.timings[f"{name}_fusion"] = round(time.perf_counter() - t0, 4)
                continue
            obj = self._built[key]
            if node.plugin is not None:
                done[key] = self._search_plugin(name, obj, queries, doc_depth, chunk_depth)
                self.warnings += unknown_id_warnings(name, done[key], self.corpus)
            else:
                with stage(f"{name}: search {len(queries)} queries", enabled=self.context.progress):
                    if rec.kind == TWO_STAGE:
                        first = done[self.plan.key(rec.inputs[0])]
                        with _naming(name):
                            done[key] = obj.search(queries, first, doc_depth=doc_depth, chunk_depth=chunk_depth)
                    else:
                        done[key] = obj.search(queries, doc_depth=doc_depth, chunk_depth=chunk_depth)
            secs = time.perf_counter() - t0
            self.timings[f"{name}_search"] = round(secs, 4)
            self.peak_rss_mib[f"{name}_search"] = peak_rss_mib()
            if rec.kind != TWO_STAGE:
                self.timings[f"{name}_ms_per_query"] = round(1000 * secs / max(1, len(queries)), 3)
        for name in self.plan.nodes:
            self._configs[name] = self._config(name)
        return {n: dict(zip(qids, done[self.plan.key(n)], strict=True)) for n in self.names}

    def _search_plugin(self, name: str, obj, queries: list[str], doc_depth: int, chunk_depth: int) -> list:
        """A ``py:`` retriever's results, asked for in about :data:`PLUGIN_BLOCKS` blocks of queries (as the known-item
        study does) so that its progress is shown (:func:`harness.progress.progress_bar`).

        Raises:
            HarnessInputError: its ``search`` fails (:func:`harness.retrieve.plugin.plugin_call`: any exception but
                KeyboardInterrupt) or returns malformed results (one line naming the system).
        """
        rec = self.plan.nodes[name].record
        where = f"system {name} ({rec.text})"
        size = max(1, -(-len(queries) // PLUGIN_BLOCKS))
        out: list = []
        with progress_bar(f"{name}: search", len(queries), enabled=self.context.progress) as advance:
            for start in range(0, len(queries), size):
                block = queries[start : start + size]
                raw = plugin_call(where, "search", obj.search, block, doc_depth=doc_depth, chunk_depth=chunk_depth)
                out += check_results(raw, len(block), doc_depth, chunk_depth, where=where)
                if advance is not None:
                    advance(len(block))
        return out

    _fuse = staticmethod(fuse_results)  # a fusion's results (harness.retrieve.fusion.fuse_results)

    def _config(self, name: str) -> dict:
        node = self.plan.nodes[name]
        rec = node.record
        inputs = {i: self._configs[i] for i in rec.inputs}
        if node.fusion is not None:
            return {"system": name, **node.fusion.config(), "inputs": inputs}
        obj = self._obj(name)
        if rec.kind == TWO_STAGE:
            with _naming(name):
                cfg = obj.config()
            return {"system": name, "first_stage": rec.inputs[0], **cfg, "inputs": inputs}
        if node.plugin is not None:
            return {"system": name, "kind": "py", "plugin": node.plugin.record(), "config": node.plugin.config()}
        return obj.config()

    def configs(self) -> dict[str, dict]:
        """``{system: config}`` for the manifest (after :meth:`search_all`)."""
        return {n: self._configs.get(n, {}) for n in self.names}

    def index_bytes(self) -> dict[str, int]:
        """Index sizes on disk of the systems that report them (``{<system>_<part>: bytes}``)."""
        out: dict[str, int] = {}
        for key, obj in self._built.items():
            sizes = getattr(obj, "index_bytes", None)
            name = self._first[key]
            if isinstance(sizes, dict):
                out.update({f"{name}_{k}": v for k, v in sizes.items()})
            elif isinstance(sizes, int):
                out[name] = sizes
        return out

    def _vectors(self) -> list[VectorIndex]:
        """The run's vector indexes, ``vector`` first."""
        found = [(self._first[k] != "vector", obj) for k, obj in self._built.items() if isinstance(obj, VectorIndex)]
        return [obj for _, obj in sorted(found, key=lambda x: x[0])]

    def coverage_info(self, goldset: GoldSet) -> dict:
        """Vector index coverage (chunks indexed, gold documents fully covered) of the run's first vector index
        (``vector`` if present); empty without a vector system."""
        vecs = self._vectors()
        if not vecs:
            return {}
        vec = vecs[0]
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
        """``{"covered": qids}``: the questions whose gold documents every partial vector index of the run holds in
        full; empty when no vector index is partial."""
        partial = [
            v for v in self._vectors() if v.coverage().get("n_indexed_chunks") != v.coverage().get("n_total_chunks")
        ]
        if not partial:
            return {}
        return {
            "covered": {
                r.qid
                for r in goldset.records
                if all(v.is_fully_indexed(str(g.document_id)) for v in partial for g in r.gold_documents)
            }
        }
