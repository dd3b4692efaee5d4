"""Mutant: imshow(weights.T): keys down the rows, queries across."""

# expects: plot-transposed
# loses: attention
from matplotlib.figure import Figure

from solutions.plots import plot_heads, plot_layer_means, plot_sqrt_dk


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    key_tokens = query_tokens if key_tokens is None else key_tokens
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(weights.detach().cpu().T.numpy(), vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(key_tokens)), key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)), query_tokens)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)
    fig.colorbar(image, ax=ax)
    return fig
