"""Checks for masks.py: causal_mask, padding_mask, sliding_window_mask."""
