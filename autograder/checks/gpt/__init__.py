"""Checks for gpt.py: MiniGPT, generate and train."""
