"""Checks for blocks.py: layer_norm, FeedForward, TransformerBlock (Pre-LN and Post-LN)."""

# TRANSITION: checks/diagnostics_ln.py imports the old private names from here; remove these
# aliases once it imports probe.block_shapes and probe.random_weights.
from .probe import block_shapes as _block_shapes  # noqa: F401
from .probe import random_weights as _weights  # noqa: F401
