"""What a student reads after grading: the table, results.json, report.html, the hint ladder.
Imports core and run.

Its modules, each with its role: autograder/__init__.py.
"""
