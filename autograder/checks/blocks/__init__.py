"""Checks for blocks.py: layer_norm, FeedForward, TransformerBlock (Pre-LN and Post-LN)."""
