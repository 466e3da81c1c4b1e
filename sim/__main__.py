"""``python -m sim ...`` is the same as the ``llumsim`` command."""

from sim.cli.main import main

raise SystemExit(main())
