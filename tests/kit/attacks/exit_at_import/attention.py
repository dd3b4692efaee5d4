"""Attack: end the grading process at import, hoping the grader counts what never ran."""

# reported: exited-early
import os

os._exit(0)
