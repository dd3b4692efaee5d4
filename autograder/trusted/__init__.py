"""Trusted stand-ins for the exercise modules, used to grade each exercise in isolation.

Each module here has the student-facing API of the exercise module of the same name, built
from PyTorch built-ins where one exists (so it reveals no more than PyTorch's docs do). The
kit's tests prove each one equal to solutions/.

The student copy (make dist) holds only the stand-ins that are PyTorch built-ins under the
exercise's names. The others are working implementations of exercises students must write,
so they stay on the instructor's side; local grading then uses the student's own module for
that dependency and says so. Official grading (batch, Gradescope, nbgrader) keeps them all.
"""

# Stand-ins that are implementations of their own, not calls to PyTorch built-ins. Where the
# student copy lacks one, the probes use the student's own module (probing.dependency) and
# the judges name fewer mistakes (they replay them on these stand-ins where the kit has them).
# attention (F.scaled_dot_product_attention), masks (Tensor.triu) and multihead
# (F.multi_head_attention_forward, heads split and merged by a reshape) are PyTorch built-ins.
NOT_IN_STUDENT_COPY = (
    "positional",
    "blocks",
    "gpt",
    "plots",
    "rotary",
    "modern_blocks",
    "gqa",
    "kvcache",
)
