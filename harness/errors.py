"""One exception type for problems a user can fix.

The CLI prints a `HarnessError` as a single line (what is wrong, what is valid, how to fix
it) and exits with status 2; anything else is a bug and keeps its traceback.
"""


class HarnessError(Exception):
    """A user-facing error: bad input, missing asset, invalid option."""

    exit_code = 2


class ConfigError(HarnessError):
    """A configuration value or file is invalid."""


class ModelNotFoundError(HarnessError):
    """A model id or path cannot be resolved offline."""


class DataError(HarnessError):
    """A data file (pool, evaluation set, predictions) is malformed."""
