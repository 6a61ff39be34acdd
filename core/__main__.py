"""``python -m chaincassette``: the same as the ``chaincassette`` command."""

import sys

from chaincassette.cli import main

sys.exit(main())
