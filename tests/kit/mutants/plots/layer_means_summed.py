"""Mutant: the heads are summed, not averaged."""

# expects: plot-layer-mean
# loses: layer-means
from matplotlib.figure import Figure

from solutions.plots import plot_attention, plot_heads, plot_sqrt_dk


def plot_layer_means(attn, tokens):
    fig = Figure(figsize=(4 * len(attn), 4), layout="constrained")
    axes = fig.subplots(1, len(attn), squeeze=False)[0]
    for n, (ax, weights) in enumerate(zip(axes, attn, strict=True)):
        mean = weights[0].detach().cpu().sum(dim=0)  # (H, T, T) -> (T, T)
        ax.imshow(mean.numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.set_title(f"layer {n}")
    return fig
