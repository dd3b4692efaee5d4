"""The instructor's tools that write the kit's files: stubs, new modules, the student copy,
translation catalogs. Imports core, run and feedback.

Its modules, each with its role: autograder/__init__.py.
"""
