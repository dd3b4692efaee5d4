"""Mutant: the flat argmax split with divmod by L (the table's rows), not H (its heads). With
L == H, or an induction head in layer 1 among the first min(L, H) heads, it gives the right
answer: the check's tables have L != H and the head in a layer >= 2."""

# expects: induction-find-divmod-by-layers
# loses: find-heads
from solutions.induction import *  # noqa: F403


def find_heads(previous, induction):
    L = induction.size(0)
    layer, head = divmod(int(induction[1:].argmax()), L)
    layer += 1
    return (layer, head), divmod(int(previous[:layer].argmax()), L)
