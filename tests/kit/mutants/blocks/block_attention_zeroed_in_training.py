"""Mutant: Pre-LN, the attention's output multiplied by 0 in training mode (as a dropout of
p = 1 would), kept in eval mode. The block-dropout-train check counts the drop rate only over
runs where the sub-layer reaches the output, and a run that keeps none of it is left out only
when the block loses it in eval mode too: here it does not, so every value of the attention's
output counts as dropped. The solution's source with one edit."""

# expects: block-dropout-misplaced
# loses: block-dropout-train
from inspect import getsource

import solutions.blocks as _solution

_EDIT = (
    "            x = x + self.dropout(h)\n"
    "            x = x + self.dropout(self.ffn(self.norm2(x)))\n",
    "            x = x + (h * 0 if self.training else h)\n"
    "            x = x + self.dropout(self.ffn(self.norm2(x)))\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
