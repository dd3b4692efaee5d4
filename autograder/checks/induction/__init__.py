"""Checks for induction.py."""
