"""Mutant: find_heads takes the induction head from any layer, layer 0 included, and then the
previous-token head from the layers before it: none when layer 0 wins, and argmax of an
empty table raises."""

# expects: induction-find-any-layer
# loses: find-heads
from solutions.induction import *  # noqa: F403


def find_heads(previous, induction):
    H = induction.size(1)
    layer, head = divmod(int(induction.argmax()), H)
    previous_head = divmod(int(previous[:layer].argmax()), H)
    return (layer, head), previous_head
