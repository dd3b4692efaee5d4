"""Probe side of diagnostics.py's √d_k checks: softmax_saturation and sqrt_dk_experiment.

Imported by the process that runs student code: nothing here judges or computes an answer.
Sizes, widths and the experiment's seed and d_k values are drawn from the check's generator:
a table typed in from one run of the experiment answers none of them.
"""

from __future__ import annotations

import torch

from ...run.probing import pair, randn

# The experiment's d_k values: SIZES times a factor drawn from FACTORS (rounded), so that the
# eighth entry (256, 320 or 384) is where the finding looks for saturation.
SIZES = (2, 4, 8, 16, 32, 64, 128, 256, 512)
FACTORS = (1.0, 1.25, 1.5)
QUANTITIES = ("entropy_scaled", "entropy_unscaled", "max_weight_scaled", "max_weight_unscaled")
BATCH, LENGTH = 8, 32  # the experiment's batch and L


def _int(gen, low, high):
    """An int drawn uniformly from [low, high]."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def inputs_saturation(gen):
    # L < S < d_k: a divisor of d_k instead of √d_k is named, never mistaken for a size.
    L, d_k = _int(gen, 4, 7), _int(gen, 12, 24)
    S = _int(gen, L + 1, 10)
    return {"q": randn(gen, 2, L, d_k), "k": randn(gen, 2, S, d_k)}


def inputs_saturated(gen):
    # d_k in 200..300 without the scale: scores with standard deviation 28 and more, so
    # most weights underflow to exactly 0 in float32.
    L, S, d_k = _int(gen, 6, 9), _int(gen, 6, 9), _int(gen, 200, 300)
    return {"q": randn(gen, 2, L, d_k, scale=2.0), "k": randn(gen, 2, S, d_k, scale=2.0)}


def inputs_experiment(gen):
    factor = FACTORS[_int(gen, 0, len(FACTORS) - 1)]
    return {
        "seed": int(torch.randint(0, 2**31 - 1, (1,), generator=gen)),
        "d_ks": tuple(int(s * factor + 0.5) for s in SIZES),
    }


def probe_saturation(mod, x):
    got = {}
    for scaled, tag in ((True, "scaled"), (False, "unscaled")):
        result = mod.softmax_saturation(x["q"], x["k"], scaled=scaled)
        entropy, largest = pair(result, "softmax_saturation's result", "(entropy, max_weight)")
        got[f"entropy_{tag}"], got[f"max_weight_{tag}"] = entropy, largest
    return got


def k_first(mod, x, *, order="kq", prefix="k_first/"):
    """The experiment's curves with k drawn before q (the other draw order the judge accepts),
    measured with the submission's softmax_saturation: the reference's are what a run in that
    order gives, for the student copy, which cannot replay it. Empty if it fails. With
    order="qk" (prefix "own/"): the run asked for, on the student's own softmax_saturation,
    so that the experiment is judged apart from a mistake there (charged in its own checks)."""
    curves = {key: [] for key in QUANTITIES}
    try:
        for d_k in x["d_ks"]:
            gen = torch.Generator().manual_seed(x["seed"])
            first = torch.randn(BATCH, LENGTH, d_k, generator=gen)
            second = torch.randn(BATCH, LENGTH, d_k, generator=gen)
            k, q = (first, second) if order == "kq" else (second, first)
            for scaled, tag in ((True, "scaled"), (False, "unscaled")):
                entropy, largest = mod.softmax_saturation(q, k, scaled=scaled)
                curves[f"entropy_{tag}"].append(entropy)
                curves[f"max_weight_{tag}"].append(largest)
        return {f"{prefix}{key}": torch.stack(v).detach().float() for key, v in curves.items()}
    except Exception:  # noqa: BLE001 (only the reference's are read: the judge's fallback)
        return {}


def probe_experiment(mod, x):
    result = mod.sqrt_dk_experiment(d_ks=x["d_ks"], batch=BATCH, L=LENGTH, seed=x["seed"])
    if not isinstance(result, dict):
        return {"type": type(result).__name__}
    return {
        **{
            k: v.detach().cpu() if isinstance(v, torch.Tensor) else v
            for k, v in result.items()
            if k in ("d_k", *QUANTITIES)
        },
        **k_first(mod, x),
        **k_first(mod, x, order="qk", prefix="own/"),
    }
