"""Gold-set authoring: workflows that read a corpus, validate and write a dataset folder.

* :mod:`harness.curation.build` - a dataset folder from records (manifest, starter contract, atomic write);
* :mod:`harness.curation.importers` - ``harness goldset import`` (BEIR, TREC qrels);
* :mod:`harness.curation.resolve` - ``harness goldset resolve`` (documents and exact quotes to chunk ids).

These sit above :mod:`harness.validate` (they validate what they write) and :mod:`harness.goldset` (the in-memory
model they build); nothing below imports them.
"""
