"""Mutant: the previous-token head searched up to the induction head's own layer."""

# expects: induction-find-previous-not-before
# loses: find-heads
from solutions.induction import *  # noqa: F403


def find_heads(previous, induction):
    H = induction.size(1)
    layer, head = divmod(int(induction[1:].argmax()), H)
    return (layer + 1, head), divmod(int(previous[: layer + 2].argmax()), H)
