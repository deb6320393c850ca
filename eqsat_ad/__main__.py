"""``python -m eqsat_ad``: the command line (see :mod:`eqsat_ad.cli`)."""

import sys

from .cli import main

sys.exit(main())
