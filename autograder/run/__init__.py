"""Running a check: the probe side, the forked worker, the confined sandbox, the pre-fork servers.
Imports core (and checks/, trusted/).

Its modules, each with its role: autograder/__init__.py.
"""
