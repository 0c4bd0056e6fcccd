"""``python -m browserq.demo``: the same as ``python -m browserq.demo.site``."""

from browserq.demo.site import main

raise SystemExit(main())
