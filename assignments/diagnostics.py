"""Exercise group: diagnostics and experiments on attention.

Shape legend: B batch, H heads, L query length, S key length, T sequence length, D = d_model,
d_k = D // H. Mask convention: a bool tensor, True = blocked.
"""

# ----------------------------------------------------------------------------- head entropy

# ----------------------------------------------------------------------------- the W_O experiment

# ----------------------------------------------------------------------------- LN placement

# ----------------------------------------------------------------------------- the √d_k experiment
