"""Known-item evaluation: every chunk's opening words as a query, scored by whether its own document comes first.

A label-free evaluation that scales to a whole corpus (the "chunk-as-query" design of the published study of
1,300 regulatory documents; see :data:`PUBLISHED`).

Definition (exact)
------------------
1. **Chunks.** Every document of the corpus folder is decoded (:func:`~harness.corpus.chunker.decode_source`) and
   chunked in memory with ``md-words-v1`` rules at ``max_words = chunk_words`` and ``min_tail_words`` (20): for
   ``chunk_words = 100`` these are exactly the chunks ``harness ingest`` stores; other sizes use the chunker id
   ``md-words-v1:max_words=<n>`` (the same frozen rules, another window).
2. **Index.** Every chunk of every document (single-chunk documents included) is indexed.
3. **Queries.** The query of a chunk is its source text up to the end of its ``query_words``-th word (words are
   ``\\S+`` runs, as in the chunker). A chunk with fewer than ``query_words`` words is skipped and counted
   (``skipped_short``). Chunks of documents with a single chunk are not queries (``excluded_single_chunk``): no other
   chunk of theirs could be found.
4. **Search.** The query chunk itself is excluded from its own search (its score is set to minus infinity); every
   other chunk is scored. Only positive scores are retrieved (an item sharing no term with the query is not).
   The ranking follows the project's tie rule: score descending, then chunk id ascending (string order).
5. **Outcome.** ``hit`` = 1 when the top item exists and belongs to the query's document. ``rank`` = 1-based
   position of the first same-document chunk in that ranking (``None`` when no same-document chunk has a positive
   score). ``tie`` = two or more chunks share the top score; ``tie_decided_hit`` = the chunks sharing the top score
   include both same-document and other-document chunks, so the id tie rule decided ``hit``. ``empty_query`` = the
   query has no index term (all stop words).

Systems
-------
Any name of the system registry (:mod:`harness.retrieve.registry`), parsed as ``harness run`` parses it: the base
kinds below through a batched face, fusions (``rrf``, ``w0.75``, ``rrf:bm25+tfidf``) and ``py:MODULE:ATTR``
retrievers through the per-query face (:mod:`.systems`); ``two-stage`` is refused. The base kinds:

* ``bm25``: bm25s ``lucene`` (k1 1.5, b 0.75) over the study's analyzer (``--analyzer``, else the language the
  corpus's ``metadata.jsonl`` declares, else ``es-snowball-fold-v1``; :mod:`harness.retrieve.analyzer`; one analysis
  serves every system, so a per-system ``analyzer=`` is refused) (:mod:`harness.retrieve.bm25`); query terms are
  counted with multiplicity as bm25s does.
* ``tfidf``: scikit-learn ``TfidfVectorizer`` (l2 norm, smooth idf, raw tf) with the same analyzer's tokens
  (``analyzer=`` callable), cosine similarity.
* ``vector``: binary embeddings (:mod:`harness.retrieve.embed`, default model ``use``; the model's bits, sign or
  centred), score = number of agreeing bits (``D - hamming``), by default re-scored by cosine on the float vectors
  (``vector:rescore=M``); see :func:`.scorers.vector_scorer`. Raises "vector system unavailable" when the
  embedding stack is missing.

The base kinds are scored the same way: for a block of queries, each query's term weights times the index's posting
lists are accumulated into a dense float32 block of scores (``Q @ W.T`` for the block), term by term in the query
row's order, so two chunks with identical term weights get bit-identical scores and ties are detected exactly; the
outcomes are then a few vectorised passes over the block. Blocks run on ``workers`` forked processes.

Files written (atomically, into ``out_dir``): ``outcomes.jsonl.gz`` (one record per system and query),
``per_document.jsonl`` (per system and document: ``n``, ``s``, ``rate``), ``summary.json``.

Modules (one job each): :mod:`.corpus` (rules 1-3: chunks and queries), :mod:`.scorers` (the systems: scorer
factories), :mod:`.systems` (registry names -> faces: batched or per-query), :mod:`.search` (rules 4-5: the block
kernel and the fork pool),
:mod:`.study` (runs, summaries, paired comparison, output files). Terminal rendering is
:mod:`harness.report.studies`.
"""

import importlib

#: ``{name: the module of this package that defines it}``: the re-exported names, imported on first use
#: (:func:`__getattr__`), so importing the package, or one of its modules, loads nothing else.
_EXPORTS = {
    **dict.fromkeys(("ChunkedCorpus", "chunk_corpus"), "corpus"),
    **dict.fromkeys(("HammingScorer", "ScorerFactory", "ScorerInputs", "SparseScorer"), "scorers"),
    **dict.fromkeys(("KnownItemOutcomes", "Scorer", "known_item_search"), "search"),
    **dict.fromkeys(("PUBLISHED", "KnownItemResult", "SensitivityResult", "StudyResult", "paired_comparison",
                     "read_outcomes", "run_chunk_size_sensitivity", "run_known_item", "run_study"), "study"),
    **dict.fromkeys(("FACES", "RankingScorer", "StudySystems", "plan_study_systems"), "systems"),
}  # fmt: skip

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """A re-exported name (:data:`_EXPORTS`), imported from its module on first use (PEP 562). Raises
    AttributeError for any other name."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
