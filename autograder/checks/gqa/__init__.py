"""Checks for gqa.py."""
