"""Mutant: W_O filled with ones, not the identity."""

# expects: wo-not-identity
# ruff: noqa: F405
import torch

from solutions.diagnostics import *  # noqa: F403


def fix_wo_to_identity(attn):
    with torch.no_grad():
        attn.w_o.weight.fill_(1.0)
    attn.w_o.weight.requires_grad_(False)


def wo_experiment(steps=300, seed=0):
    curves = {}
    for variant in ("learned", "identity"):
        torch.manual_seed(seed)
        model = RecallModel()
        if variant == "identity":
            fix_wo_to_identity(model.attn)
        curves[variant] = train_recall(model, steps, seed=seed)
    return curves
