"""The checks, one package per exercise module: autograder/checks/<module>/.

This package's own namespace stays empty: a process that runs student code imports
autograder.checks.<module>.probe and must not pull in any judge-side code by doing so. The
registry of checks (judge side) is autograder.registry.
"""

# TRANSITION: the old names, until every caller uses autograder.registry (no judge is
# imported by this line; registry imports a judge only when asked for a module's checks).
from ..registry import all_checks, checks_of, files_of, find, modules  # noqa: E402,F401
