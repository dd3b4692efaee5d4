"""Checks for plots.py: the attention heatmaps and the √d_k curves, read back from the figures."""

# Paid once before any student code, outside every check's CPU seconds (registry.warm_ups):
# every check draws a figure (matplotlib's import, fonts).
WARM_UP = ("matplotlib",)
