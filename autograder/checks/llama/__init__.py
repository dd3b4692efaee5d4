"""Checks for llama.py."""

# What the slow check (the training run) needs beyond any WARM_UP, paid the same way when
# it is graded (registry.warm_ups): its optimizer steps.
TRAIN_WARM_UP = ("optim",)
