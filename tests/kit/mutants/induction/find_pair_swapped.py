"""Mutant: each head returned as (head, layer)."""

# expects: induction-find-pair-swapped
# loses: find-heads
from solutions.induction import *  # noqa: F403


def find_heads(previous, induction):
    H = induction.size(1)
    layer, head = divmod(int(induction[1:].argmax()), H)
    p_layer, p_head = divmod(int(previous[: layer + 1].argmax()), H)
    return (head, layer + 1), (p_head, p_layer)
