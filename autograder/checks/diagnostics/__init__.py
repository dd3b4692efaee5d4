"""The checks of diagnostics.py: head entropy, the W_O experiment, LN placement, √d_k."""

# Paid once before any student code, outside every check's CPU seconds (registry.warm_ups):
# the W_O checks and the student's own training loops take optimizer steps.
WARM_UP = ("optim",)
