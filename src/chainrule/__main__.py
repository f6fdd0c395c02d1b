"""``python -m chainrule``: see :mod:`chainrule.cli`."""

import sys

from .cli import main

sys.exit(main())
