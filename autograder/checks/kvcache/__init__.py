"""Checks for kvcache.py."""
