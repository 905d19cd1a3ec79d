"""``python -m harness.schemas [--check]``: write the JSON Schema files of the ``--format json`` envelopes
(:func:`harness.schemas.generate`) into the package; with ``--check``, write nothing and exit 1 naming the files
that differ from the models."""

from __future__ import annotations

import sys

from harness import schemas
from harness.io import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    """Write (or, with ``--check``, compare) the schema files; the exit code (0, or 1 when stale under ``--check``)."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: python -m harness.schemas [--check]", file=sys.stderr)
        return 2
    if args == ["--check"]:
        bad = schemas.stale()
        for name in bad:
            print(f"{schemas.HERE / name}: differs from the models; run python -m harness.schemas", file=sys.stderr)
        return 1 if bad else 0
    for name, text in schemas.generate().items():
        atomic_write_text(schemas.HERE / name, text)
        print(f"wrote {schemas.HERE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
