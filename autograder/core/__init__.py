"""What every layer shares: checks and misconceptions, verdict helpers, reference outputs,
tolerances, the syllabus, seeds, paths, translations. Imports no other subpackage.

Its modules, each with its role: autograder/__init__.py.
"""
