"""Alternative: fix_wo_to_identity replaces W_O by nn.Identity, the identity map itself, with
no parameter to train (the trusted attention applies any module in W_O's place). The
solution's source with fix_wo_to_identity's body changed, so that wo_experiment calls it."""

from inspect import getsource

import solutions.diagnostics as _solution

_BODY = """    with torch.no_grad():
        attn.w_o.weight.copy_(torch.eye(attn.w_o.weight.size(0)))
        if attn.w_o.bias is not None:
            attn.w_o.bias.zero_()
    for p in attn.w_o.parameters():
        p.requires_grad_(False)
"""
assert getsource(_solution).count(_BODY) == 1
exec(
    compile(getsource(_solution).replace(_BODY, "    attn.w_o = nn.Identity()\n"), __file__, "exec")
)
