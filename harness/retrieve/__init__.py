"""Retrieval: every system the harness evaluates, behind one seam (:mod:`harness.retrieve.base`).

* :mod:`~harness.retrieve.registry`: system names -> typed options -> built systems -> results (the one home of
  systems; grammar in :mod:`~harness.retrieve.names`, user retrievers in :mod:`~harness.retrieve.plugin`);
* :mod:`~harness.retrieve.bm25`, :mod:`~harness.retrieve.vector`: the base systems; :mod:`~harness.retrieve.embed`
  and :mod:`~harness.retrieve.binary` their embedder and bits; :mod:`~harness.retrieve.ray_embed` a Ray build;
* :mod:`~harness.retrieve.fusion`: the fusion registry (RRF, weighted CombSUM, CombMNZ);
* :mod:`~harness.retrieve.two_stage`: documents first, then the passage, with an optional reranker.

The tie rule every ranking follows is :mod:`harness.ranking`'s.
"""
