"""Checks for positional.py: sinusoidal_encoding and PositionalEncoding."""
