"""Commands of `python -m pytest_skilltransfer`: the CLI, doctor, init, check and merge."""
