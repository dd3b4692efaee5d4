"""Mutant: head h goes to axes[h % rows, h // rows]: the grid is filled column by column."""

# expects: plot-heads-column-major
# loses: heads
import math

from matplotlib.figure import Figure

from solutions.plots import plot_attention, plot_layer_means, plot_sqrt_dk


def plot_heads(weights, tokens, cols=4):
    H = weights.size(0)
    cols = min(cols, H)
    rows = math.ceil(H / cols)
    fig = Figure(figsize=(3 * cols, 3 * rows), layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False)
    axes = [grid[h % rows, h // rows] for h in range(rows * cols)]
    for h, ax in enumerate(axes):
        if h >= H:
            ax.axis("off")
            continue
        ax.imshow(weights[h].detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.set_title(f"head {h}")
    return fig
