"""Mutant: a log axis, but base 10."""

# expects: plot-log2-axis
# loses: sqrt-dk
from matplotlib.figure import Figure

from solutions.plots import plot_attention, plot_heads, plot_layer_means


def plot_sqrt_dk(results):
    fig = Figure(figsize=(9, 4), layout="constrained")
    d_k = results["d_k"].cpu().numpy()
    for ax, name in zip(fig.subplots(1, 2), ("entropy", "max_weight"), strict=True):
        for tag in ("scaled", "unscaled"):
            ax.plot(d_k, results[f"{name}_{tag}"].cpu().numpy(), marker="o", label=tag)
        ax.set_xscale("log")
        ax.set_xlabel("d_k")
        ax.set_ylabel("mean entropy (nats)" if name == "entropy" else "mean largest weight")
        ax.legend()
    return fig
