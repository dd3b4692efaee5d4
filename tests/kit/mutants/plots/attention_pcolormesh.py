"""Mutant: plot_attention draws the map with pcolormesh (a QuadMesh, row 0 at the bottom),
not imshow; it was told it "drew 0 heatmaps". The solution's source with one line
changed (the colour bar then describes the mesh)."""

# expects: plot-not-imshow
# loses: attention, attention-colour
from inspect import getsource

import solutions.plots as _solution

_EDIT = (
    '    image = ax.imshow(weights.detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")\n',
    '    image = ax.pcolormesh(weights.detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")\n',
)
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
