"""Mutant: the Axes left over after the last head stay on (empty frames)."""

# expects: plot-spare-axes-on
# loses: heads
import math

from matplotlib.figure import Figure

from solutions.plots import plot_attention, plot_layer_means, plot_sqrt_dk


def plot_heads(weights, tokens, cols=4):
    H = weights.size(0)
    cols = min(cols, H)
    rows = math.ceil(H / cols)
    fig = Figure(figsize=(3 * cols, 3 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).flatten()
    for h, ax in enumerate(axes):
        if h >= H:
            continue
        ax.imshow(weights[h].detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.set_title(f"head {h}")
    return fig
