"""Checks for multihead.py: split_heads, merge_heads, MultiHeadAttention and the W_O diagnostic."""
