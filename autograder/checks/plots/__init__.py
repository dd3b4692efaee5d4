"""Checks for plots.py: the attention heatmaps and the √d_k curves, read back from the figures."""
