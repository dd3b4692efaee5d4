"""Mutant: plot_attention never sets the title it is given. No call passed a title, so it
kept its points. The solution's source with one line changed."""

# expects: plot-title-ignored
# loses: attention
from inspect import getsource

import solutions.plots as _solution

_EDIT = ("        ax.set_title(title)\n", "        pass\n")
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
