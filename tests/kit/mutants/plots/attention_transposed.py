"""Mutant: imshow(weights.T): keys down the rows, queries across."""

# expects: plot-transposed
from matplotlib.figure import Figure

from solutions.plots import plot_heads, plot_layer_means, plot_sqrt_dk


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    key_tokens = query_tokens if key_tokens is None else key_tokens
    fig = Figure()
    ax = fig.add_subplot()
    ax.imshow(weights.detach().T.numpy(), vmin=0, vmax=1)
    ax.set_xticks(range(len(query_tokens)), query_tokens)
    ax.set_yticks(range(len(key_tokens)), key_tokens)
    return fig
