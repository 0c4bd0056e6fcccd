"""``python -m browserq.cli``: the same as the ``browserq`` console script."""

from browserq.cli import main

main()
