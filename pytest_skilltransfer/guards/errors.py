"""The two errors every layer raises to the user: a configuration problem, and a failed model call."""


class ModelError(Exception):
    """A model name or configuration problem, reported to the user as is."""


class ModelCallError(Exception):
    """A call failed (provider error, missing key, cassette miss). The message says what to do."""
