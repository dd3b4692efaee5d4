"""Errors the CLI reports in one line (exit status 2): what was expected, and what was given."""


class UsageError(Exception):
    """A verb was given something it cannot use."""
