"""Entry point for `python -m pytest_skilltransfer`."""

import sys

from .cli import main

sys.exit(main())
