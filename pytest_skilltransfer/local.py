"""`python -m pytest_skilltransfer.local build|serve|status|where`: the documented command for the local model
server; the code lives in `pytest_skilltransfer.models.local`."""

from .models.local import main

if __name__ == "__main__":
    raise SystemExit(main())
