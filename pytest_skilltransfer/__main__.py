"""Entry point for `python -m pytest_skilltransfer`."""

import sys

from .commands.cli import main

sys.exit(main())
