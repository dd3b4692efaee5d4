"""Checks for rotary.py."""
