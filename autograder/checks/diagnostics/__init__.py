"""The checks of diagnostics.py: head entropy, the W_O experiment, LN placement, √d_k."""
