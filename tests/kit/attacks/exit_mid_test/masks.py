"""Attack: os._exit(0) in the middle of a check."""

# reported: exited-early
import os


def causal_mask(L, device=None):
    os._exit(0)


def padding_mask(lengths, S):
    os._exit(0)


def sliding_window_mask(L, window, device=None):
    os._exit(0)
