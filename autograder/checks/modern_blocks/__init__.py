"""Checks for modern_blocks.py."""
