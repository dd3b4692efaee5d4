"""Trusted stand-ins for the exercise modules, used to grade each exercise in isolation.

Each module here has the student-facing API of the exercise module of the same name, built
from PyTorch built-ins where one exists (so it reveals no more than PyTorch's docs do). The
kit's tests prove each one equal to solutions/.

The student copy (make dist) holds only the stand-ins that are PyTorch built-ins under the
exercise's names. The others are working implementations of exercises students must write,
so they stay on the instructor's side; local grading then uses the student's own module for
that dependency and says so. Official grading (batch, Gradescope, nbgrader) keeps them all.
"""

# Stand-ins that are implementations of their own, not calls to PyTorch built-ins, and that no
# check of another module builds on. (positional and gpt stay: the gpt checks build their
# reference model from them, so the student copy still holds them; see CHANGELOG.)
NOT_IN_STUDENT_COPY = ("plots", "rotary", "modern_blocks", "gqa", "kvcache")
