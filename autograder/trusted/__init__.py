"""Trusted stand-ins for the exercise modules, used to grade each exercise in isolation.

Each module here has the student-facing API of the exercise module of the same name, built
from PyTorch built-ins where one exists (so it reveals no more than PyTorch's docs do). The
kit's tests prove each one equal to solutions/.

The student copy (make dist) holds only the stand-ins that are PyTorch built-ins under the
exercise's names (IN_STUDENT_COPY). The others are working implementations of exercises
students must write, so they stay on the instructor's side; local grading then uses the
student's own module for that dependency and says so. Official grading (batch, Gradescope,
nbgrader) keeps them all.
"""

from pathlib import Path

from ..core.syllabus import MODULES

# The stand-ins that ship in the student copy (autograder/authoring/student_copy.py's SHIPS):
# PyTorch built-ins under the exercises' names. attention (F.scaled_dot_product_attention), masks
# (Tensor.triu) and multihead (F.multi_head_attention_forward, heads split and merged by a
# reshape). A stand-in joins this list only when it is such a wrapper: the student copy's
# test (tests/kit/test_dist.py) fails when a shipped function or class computes an exercise
# that is not in it.
IN_STUDENT_COPY = ("attention", "masks", "multihead")

# Every other stand-in (a new module's too, from `make new-module`): implementations of their
# own, not calls to PyTorch built-ins. Where the student copy lacks one, the probes use the
# student's own module (probing.dependency) and the judges name fewer mistakes (they replay
# them on these stand-ins where the kit has them).
NOT_IN_STUDENT_COPY = tuple(
    m for m in MODULES if m not in IN_STUDENT_COPY and (Path(__file__).parent / f"{m}.py").is_file()
)
