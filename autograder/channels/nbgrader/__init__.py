"""The nbgrader course: notebooks from solutions/, nbgrader's verbs, collecting, autograding
outside the kernel, exporting grades.

Its modules, each with its role: autograder/__init__.py.
"""
