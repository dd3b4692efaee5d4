"""Checks for efficient.py: local, strided, linear and chunked (online-softmax) attention."""

# Paid once before any student code (registry.warm_ups): the measured checks count the
# resident memory of a run from outside, and code that reaches torch's compiler stack
# (torch.func, torch.utils.checkpoint) would otherwise be charged its ~90 MB import.
WARM_UP = ("compiler",)
