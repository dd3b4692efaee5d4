"""Mutant: the induction head taken from every layer, layer 0 included."""

# expects: induction-find-any-layer
# loses: find-heads
from solutions.induction import *  # noqa: F403


def find_heads(previous, induction):
    H = induction.size(1)
    layer, head = divmod(int(induction.argmax()), H)
    rows = previous[:layer] if layer > 0 else previous
    return (layer, head), divmod(int(rows.argmax()), H)
