"""Mutant: the base given to the constructor is dropped: the rotary parts are rotated with
apply_rotary's default base, 10000, in forward and forward_absorbed."""

# expects: wrong-values
# loses: reference, absorbed-reference
import solutions.mla as _s
from solutions.mla import *  # noqa: F403


class MultiHeadLatentAttention(_s.MultiHeadLatentAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.base = 10000.0  # what apply_rotary uses when no base is passed
