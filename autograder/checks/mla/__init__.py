"""Checks for mla.py."""
