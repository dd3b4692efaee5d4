"""Checks for positional.py: sinusoidal_encoding and PositionalEncoding."""

# Paid once before any student code, outside every check's CPU seconds (registry.warm_ups):
# the trainable-table check takes an optimizer step.
WARM_UP = ("optim",)
