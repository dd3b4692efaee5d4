"""Where grading is asked for: the command line, batch, Gradescope, PrairieLearn, the nbgrader
course, watch, the class report. May import every layer.

Its modules, each with its role: autograder/__init__.py.
"""
