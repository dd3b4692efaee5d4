"""TRANSITION: the probe helpers moved to autograder.probing; flat checks files still import
them from here until every module's checks are a package."""

from ..probing import pair, randn  # noqa: F401
