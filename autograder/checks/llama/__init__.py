"""Checks for llama.py."""
