"""Checks for gpt.py: MiniGPT, generate and train."""

# Paid once before any student code, outside every check's CPU seconds (registry.warm_ups):
# the causal check runs MiniGPT on the meta device up to its first block (probe.mask_device).
WARM_UP = ("meta",)

# What the slow check (the training run) needs beyond any WARM_UP, paid the same way when
# it is graded (registry.warm_ups): its optimizer steps.
TRAIN_WARM_UP = ("optim",)
