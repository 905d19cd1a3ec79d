"""``python -m harness``: the same command line as the ``harness`` entry point (the CI recipe calls it this way, so
it runs the checkout's code with whichever interpreter is on ``PATH``)."""

from harness.cli import main

main()
