"""The checks, one package per exercise module: autograder/checks/<module>/.

This package's own namespace stays empty: a process that runs student code imports
autograder.checks.<module>.probe and must not pull in any judge-side code by doing so. The
registry of checks (judge side) is autograder.core.registry.
"""
