"""pytest-skilltransfer: does a skill optimized on one model still help another?"""

__version__ = "0.1.0"
