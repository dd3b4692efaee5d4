"""Checks for masks.py: causal_mask, padding_mask, sliding_window_mask."""

# Paid once before any student code, outside every check's CPU seconds (registry.warm_ups):
# the device checks call the masks with device='meta'.
WARM_UP = ("meta",)
