"""The W_O experiment in full: learned W_O against W_O fixed to the identity, several seeds.

    PYTHONPATH=. .venv/bin/python tools/wo_experiment.py [--steps 300] [--seeds 5]

Runs solutions.diagnostics.wo_experiment (associative recall, RecallModel, Adam 3e-3,
batches of 32) for each seed and prints, per variant, the mean loss over steps 1-100 and
101-200, the mean of the last 50 steps, and the first step whose loss is below 0.5.
The numbers in docs/multihead.md come from this script.
"""

import argparse
import statistics

import torch

from solutions.diagnostics import wo_experiment


def summary(curve):
    below = (curve < 0.5).nonzero()
    return {
        "mean 1-100": curve[:100].mean().item(),
        "mean 101-200": curve[100:200].mean().item(),
        "last 50": curve[-50:].mean().item(),
        "first < 0.5": int(below[0]) + 1 if len(below) else float("nan"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = {"learned": [], "identity": []}
    for seed in range(args.seeds):
        for variant, curve in wo_experiment(steps=args.steps, seed=seed).items():
            rows[variant].append(summary(curve))
            print(
                f"seed {seed} {variant:8s}", {k: round(v, 4) for k, v in rows[variant][-1].items()}
            )
    print(f"\nmean over {args.seeds} seeds, {args.steps} steps:")
    for variant, runs in rows.items():
        means = {k: round(statistics.mean(r[k] for r in runs), 3) for k in runs[0]}
        print(f"  {variant:8s}", means)


if __name__ == "__main__":
    main()
