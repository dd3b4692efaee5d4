"""Alternative: plot_attention's colour bar drawn in an inset Axes beside the map
(fig.colorbar(image, cax=ax.inset_axes(...)), the recipe of matplotlib's "Placing colorbars"
guide). An inset Axes is a child of its Axes, not in fig.axes, where the probe looked for colour
bars: attention-colour was lost (4 / 5)."""

from matplotlib.figure import Figure

from solutions.plots import *  # noqa: F403


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    key_tokens = query_tokens if key_tokens is None else key_tokens
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(weights.detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(key_tokens)), key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)), query_tokens)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)
    fig.colorbar(image, cax=ax.inset_axes([1.04, 0.0, 0.05, 1.0]))
    return fig
