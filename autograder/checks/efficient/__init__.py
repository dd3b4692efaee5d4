"""Checks for efficient.py: local, strided, linear and chunked (online-softmax) attention."""
