"""Alternative: plot_attention's title set flush left (ax.set_title(title, loc="left"), a
common style for panel titles: one of the Axes' three titles) and a labelled colour bar. The
probe read the centre title only: attention was lost (4 / 5)."""

from matplotlib.figure import Figure

from solutions.plots import *  # noqa: F403


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    if key_tokens is None:
        key_tokens = query_tokens
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(weights.detach().cpu().numpy(), vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(key_tokens)), labels=key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)), labels=query_tokens)
    ax.set(xlabel="key", ylabel="query")
    if title is not None:
        ax.set_title(title, loc="left", fontsize="medium")
    fig.colorbar(image, ax=ax, label="weight")
    return fig
