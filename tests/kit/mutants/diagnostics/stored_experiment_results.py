"""Attack (issue 12.6): the experiments return numbers typed in from one run of the solution
(wo_experiment(steps=25, seed=0), compare_ln_placement(), sqrt_dk_experiment()), whatever
they are asked; the other exercises are honest. The experiments must earn nothing."""

# expects: ln-placement-not-measured
# loses: wo-experiment, ln-placement, sqrtdk-experiment, sqrtdk-finding
import torch

from solutions.diagnostics import *  # noqa: F403

# fmt: off
WO = {
    "learned": [2.9355, 3.002247, 2.925889, 3.016718, 2.949649, 3.083316, 2.804552, 2.831236,
                2.877338, 2.930305, 2.883398, 2.967906, 2.807608, 2.833553, 2.738358, 2.807545,
                2.713646, 2.832124, 2.743017, 2.767192, 2.715136, 2.895365, 2.650844, 2.701955,
                2.740221],
    "identity": [2.905958, 2.905154, 2.919361, 3.028301, 2.901209, 3.078207, 2.751896,
                 2.831702, 2.861295, 2.883258, 2.947382, 2.986102, 2.813916, 2.82005, 2.762032,
                 2.798678, 2.741472, 2.839698, 2.743242, 2.775605, 2.703806, 2.811029, 2.734542,
                 2.757345, 2.740318],
}
LN = {
    "pre_ln": [0.163559, 0.172713, 0.167481, 0.167874, 0.154895, 0.159589, 0.156635, 0.146382],
    "post_ln": [0.176966, 0.189592, 0.188134, 0.186557, 0.175275, 0.186739, 0.183415, 0.420301],
}
SQ = {
    "entropy_scaled": [2.983717, 3.012003, 3.033784, 3.015827, 3.004083, 3.029642, 3.016208,
                       3.029274, 3.016539],
    "entropy_unscaled": [2.669178, 2.239244, 1.732022, 1.073536, 0.722248, 0.494825, 0.314033,
                         0.232853, 0.13719],
    "max_weight_scaled": [0.177961, 0.164129, 0.158494, 0.168528, 0.169314, 0.158374,
                          0.164493, 0.157863, 0.165676],
    "max_weight_unscaled": [0.258305, 0.346228, 0.471437, 0.650417, 0.747784, 0.819215,
                            0.883724, 0.907335, 0.946877],
}
# fmt: on


def wo_experiment(steps=300, seed=0):
    return {k: torch.tensor(v) for k, v in WO.items()}


def compare_ln_placement(
    num_layers=8, d_model=32, num_heads=4, d_ff=64, batch=4, seq_len=16, seed=0
):
    return {k: torch.tensor(v) for k, v in LN.items()}


def sqrt_dk_experiment(d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512), batch=8, L=32, seed=0):
    out = {"d_k": torch.tensor([2, 4, 8, 16, 32, 64, 128, 256, 512])}
    return {**out, **{k: torch.tensor(v) for k, v in SQ.items()}}
