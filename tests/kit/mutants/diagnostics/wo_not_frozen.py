"""Mutant: W_O set to the identity but left trainable."""

# expects: wo-not-frozen
# ruff: noqa: F405
import torch

from solutions.diagnostics import *  # noqa: F403


def fix_wo_to_identity(attn):
    with torch.no_grad():
        attn.w_o.weight.copy_(torch.eye(attn.w_o.weight.size(0)))


def wo_experiment(steps=300, seed=0):
    curves = {}
    for variant in ("learned", "identity"):
        torch.manual_seed(seed)
        model = RecallModel()
        if variant == "identity":
            fix_wo_to_identity(model.attn)
        curves[variant] = train_recall(model, steps, seed=seed)
    return curves
