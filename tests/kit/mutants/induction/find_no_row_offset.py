"""Mutant: the argmax of induction[1:] split into (layer, head) without adding back the row
it dropped: the induction head one layer too low (and the previous-token head looked for in
the rows before that lower layer)."""

# expects: induction-find-row-offset
# loses: find-heads
from solutions.induction import *  # noqa: F403


def find_heads(previous, induction):
    H = induction.size(1)
    layer, head = divmod(int(induction[1:].argmax()), H)
    previous_head = divmod(int(previous[: max(layer, 1)].argmax()), H)
    return (layer, head), previous_head
