"""Mutant: a head with no row to judge gets score 0, so "collapsed" (the docstring says
"fine"). No input had such a head, so it kept its points. The solution's source with
one edit."""

# expects: classify-wrong-labels
# loses: classify-heads
from inspect import getsource

import solutions.diagnostics as _solution

_EDIT = (
    "        if not judged[:, h].any():\n"
    '            labels.append("fine")\n'
    "        elif score[h] < collapsed:\n",
    "        if score[h] < collapsed:  # a head with nothing judged scores 0\n",
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
