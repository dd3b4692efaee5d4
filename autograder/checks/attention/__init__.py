"""Checks for attention.py: scaled_dot_product_attention and attention_with_bias."""
