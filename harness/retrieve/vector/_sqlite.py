"""SQLite helpers shared by the embedding cache and the vector store: one write transaction, UTC timestamps."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator

import apsw

IN_CHUNK = 500
"""Parameters per ``IN (...)`` list (well below SQLite's limit)."""


def now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def immediate(conn: apsw.Connection) -> Iterator[None]:
    """One write transaction taken with ``BEGIN IMMEDIATE`` (the write lock up front), committed or rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
