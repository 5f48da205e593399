"""``python -m clustersim``: see :mod:`clustersim.cli`."""

from clustersim.cli import main

raise SystemExit(main())
