"""Mutant: the two curves under each other's names."""

# expects: wo-curves-swapped
# ruff: noqa: F405
import torch

from solutions.diagnostics import *  # noqa: F403


def wo_experiment(steps=300, seed=0):
    curves = {}
    for variant in ("identity", "learned"):
        torch.manual_seed(seed)
        model = RecallModel()
        if variant == "learned":
            fix_wo_to_identity(model.attn)
        curves[variant] = train_recall(model, steps, seed=seed)
    return curves
