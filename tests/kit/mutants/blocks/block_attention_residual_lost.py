"""Mutant: Pre-LN, the first residual kept in a new name and the second taken from the
block's input, x + drop(ffn(norm2(y))) with y = x + drop(attn(...)): the attention's output
never reaches the block's. The pre-ln check charges it; the dropout check counted the lost
sub-layer as every value dropped ("42% of 768 values were dropped, but p = 0.25"). The
solution's source with one edit."""

# expects: wrong-values
# loses: pre-ln
from inspect import getsource

import solutions.blocks as _solution

_EDIT = (
    "            x = x + self.dropout(h)\n"
    "            x = x + self.dropout(self.ffn(self.norm2(x)))\n",
    "            y = x + self.dropout(h)\n"
    "            x = x + self.dropout(self.ffn(self.norm2(y)))\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
