"""kvcache: the solution against PyTorch's own attention (F.scaled_dot_product_attention with
is_causal and enable_gqa, on keys rotated by the trusted rotary), cached decoding against full
recomputation, and trusted == solution."""

import pytest
import torch
import torch.nn.functional as F

from autograder.trusted import kvcache as trusted
from autograder.trusted.rotary import apply_rotary
from solutions import kvcache

SIZES = [(24, 4, 2), (36, 6, 3), (40, 4, 1), (32, 4, 4)]
TOL = {"atol": 1e-5, "rtol": 1e-5}  # cached steps against one full pass: other sum orders


def _layer(module, D, H, H_kv, seed, base=10000.0):
    torch.manual_seed(seed)
    return module.CachedAttention(D, H, H_kv, base=base).eval()


@pytest.mark.parametrize(("D", "H", "H_kv"), SIZES)
def test_no_cache_equals_sdpa_is_causal(D, H, H_kv):
    layer = _layer(kvcache, D, H, H_kv, seed=D + H)
    x = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(H_kv))
    B, T, _ = x.shape
    d_k, positions = D // H, torch.arange(T)
    q = layer.w_q(x).view(B, T, H, d_k).transpose(1, 2)
    k = layer.w_k(x).view(B, T, H_kv, d_k).transpose(1, 2)
    v = layer.w_v(x).view(B, T, H_kv, d_k).transpose(1, 2)
    q, k = apply_rotary(q, positions), apply_rotary(k, positions)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    with torch.no_grad():
        want = layer.w_o(heads.transpose(1, 2).reshape(B, T, D))
        torch.testing.assert_close(layer(x), want, **TOL)


@pytest.mark.parametrize("module", [kvcache, trusted], ids=["solution", "trusted"])
@pytest.mark.parametrize(("D", "H", "H_kv"), SIZES)
def test_cached_calls_equal_one_pass(module, D, H, H_kv):
    """A prefill, single steps and a chunk through a cache give the rows of one pass."""
    layer = _layer(module, D, H, H_kv, seed=D * H, base=500.0)
    x = torch.randn(2, 11, D, generator=torch.Generator().manual_seed(D))
    cache = module.KVCache(3)
    with torch.no_grad():
        parts = [layer(c, cache, 2) for c in x.split([5, 1, 1, 3, 1], dim=1)]
        torch.testing.assert_close(torch.cat(parts, dim=1), layer(x), **TOL)
    assert cache.length(2) == 11 and cache.length(0) == 0
    assert cache.keys[2].shape == (2, H_kv, 11, D // H)


def test_trusted_equals_solution():
    torch.manual_seed(3)
    model = kvcache.TinyDecoder(30, 24, 4, 2, 2, base=300.0).eval()
    twin = trusted.TinyDecoder(30, 24, 4, 2, 2, base=300.0).eval()
    twin.load_state_dict(model.state_dict())
    prompt = torch.randint(0, 30, (2, 5))
    for use_cache in (True, False):
        tokens, logits = kvcache.greedy_decode(model, prompt, 7, use_cache=use_cache)
        tokens2, logits2 = trusted.greedy_decode(twin, prompt, 7, use_cache=use_cache)
        assert torch.equal(tokens, tokens2)
        torch.testing.assert_close(logits, logits2, **TOL)
    cached, full = (kvcache.greedy_decode(model, prompt, 7, use_cache=u)[1] for u in (True, False))
    torch.testing.assert_close(cached, full, **TOL)


@pytest.mark.parametrize("module", [kvcache, trusted], ids=["solution", "trusted"])
def test_append_rejects_shapes_that_do_not_fit(module):
    cache = module.KVCache(1)
    with pytest.raises(ValueError, match="shape|\\(2, 2, 3, 4\\)"):
        cache.append(0, torch.zeros(2, 2, 3, 4), torch.zeros(2, 2, 2, 4))
    cache.append(0, torch.zeros(2, 2, 3, 4), torch.zeros(2, 2, 3, 4))
    with pytest.raises(ValueError):
        cache.append(0, torch.zeros(2, 3, 1, 4), torch.zeros(2, 3, 1, 4))


def _mutant(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent / "mutants" / "kvcache" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"kvcache_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cache_mistake_excuses_the_layer_only_when_right_given_what_the_cache_did():
    """CachedAttention and greedy_decode are judged given what the student's own cache did
    when it made a named mistake (charged in the cache's checks); the judge computes the
    layer over the recorded returns, so outputs not that computation, a k the layer did not
    compute, or a cache that did its part are not excused."""
    from autograder.checks.kvcache import judge, probe
    from autograder.core.check import Failure

    new_only = _mutant("append_new_only")
    x = probe.inputs_layer(torch.Generator().manual_seed(4))
    want = probe.probe_layer(kvcache, x)
    got = probe.probe_layer(new_only, x)
    judge.verdict_layer(got, want, x)  # excused: the cache returned the new tokens only
    forged = [
        {**got, "out1": got["out1"] * 1.01},  # another output
        {
            **got,
            "given/1/k": torch.zeros_like(got["given/1/k"]),
            "given/1/keys": torch.zeros_like(got["given/1/keys"]),
        },
        {**got, **{k: v for k, v in want.items() if k.startswith("given/")}},  # the cache was right
    ]
    for case in forged:
        with pytest.raises(Failure):
            judge.verdict_layer(case, want, x)
    # greedy_decode: excused in incremental and generate, but not with other logits.
    x = probe.inputs_generate(torch.Generator().manual_seed(4))
    want = probe.probe_generate(kvcache, x)
    got = probe.probe_incremental(new_only, x) | probe.probe_generate(new_only, x)
    judge.verdict_incremental(got, want, x)
    judge.verdict_generate(got, want, x)
    with pytest.raises(Failure):
        judge.verdict_generate({**got, "cache/logits": got["cache/logits"] + 0.01}, want, x)


class _LayersIgnoreTheCache(kvcache.TinyDecoder):
    """A model whose layers never use the cache they are given (a layer's mistake, charged in
    CachedAttention's checks): a cached step attends to its own token only."""

    def forward(self, tokens, cache=None):
        return super().forward(tokens, None)


def _forge_zero_run(got, run, prompt, n):
    """got with a consistent record of a right loop over a model returning zeros: tokens
    argmax of the logits, each call fed the token chosen before, one cache."""
    B, T0 = prompt.shape
    V = got[f"{run}/logits"].size(-1)
    tokens = torch.cat([prompt, torch.zeros(B, n, dtype=torch.int64)], dim=1)
    forged = {k: v for k, v in got.items() if not k.startswith(f"{run}/")}
    forged |= {f"{run}/tokens": tokens, f"{run}/logits": torch.zeros(B, n, V), f"{run}/calls": n}
    for i in range(n):
        fed = prompt if i == 0 else tokens[:, T0 + i - 1 : T0 + i]
        forged |= {f"{run}/call/{i}/tokens": fed, f"{run}/call/{i}/cache": 7}
        forged[f"{run}/call/{i}/last"] = torch.zeros(B, V)
    return forged


def test_greedy_decode_is_judged_given_what_the_students_own_model_returned():
    """A right greedy_decode over a wrong model (layers that ignore the cache) keeps
    greedy_decode's points: the probe records each call of the student's own model (tokens,
    cache, last logits) and the judge checks the loop against that record. A record showing
    no run, logits other than the ones a recorded call returned, or a model returning zeros
    earns nothing."""
    from types import SimpleNamespace

    from autograder.checks.kvcache import judge, probe
    from autograder.core.check import Failure

    mod = SimpleNamespace(
        KVCache=kvcache.KVCache,
        TinyDecoder=_LayersIgnoreTheCache,
        greedy_decode=kvcache.greedy_decode,
    )
    x = probe.inputs_generate(torch.Generator().manual_seed(5))
    want = probe.probe_generate(kvcache, x)
    got = probe.probe_incremental(mod, x) | probe.probe_generate(mod, x)
    assert not torch.allclose(got["cache/logits"], want["cache/logits"])  # the model is wrong
    judge.verdict_incremental(got, want, x)
    judge.verdict_generate(got, want, x)
    no_run = {k: v for k, v in got.items() if "/call/" not in k and not k.endswith("/calls")}
    for verdict, run in ((judge.verdict_incremental, "b"), (judge.verdict_generate, "cache")):
        other = {**got, f"{run}/logits": got[f"{run}/logits"] + 0.01}  # argmax kept
        zeros = _forge_zero_run(got, run, x["prompts"][1 if run == "b" else 0], x["n"])
        for forged in (no_run, other, zeros):
            with pytest.raises(Failure):
                verdict(forged, want, x)


def _variant(name, **parts):
    """A module: solutions/kvcache.py with `parts` in place of its own (KVCache,
    CachedAttention, ...), greedy_decode and TinyDecoder looking names up in it, as a student's
    file does."""
    import types

    module = types.ModuleType(f"kvcache_{name}")
    module.__dict__.update({k: v for k, v in vars(kvcache).items() if not k.startswith("__")})
    module.__dict__.update(parts)
    code = kvcache.greedy_decode.__wrapped__.__code__
    module.greedy_decode = torch.no_grad()(types.FunctionType(code, module.__dict__))
    return module


def test_a_wrong_axis_cache_is_judged_with_a_working_cache_outside_the_students_process():
    """A KVCache that concatenates along the heads (kv-append-wrong-axis) returns tensors no
    layer runs on: the probe runs the layer's and greedy_decode's calls again with a working
    cache in a forked grandchild, and the judge accepts that run only when the student's own
    cache shows the mistake. A right layer keeps its points; a wrong one still fails; a cache
    that always raises (no named mistake) excuses nothing; the working cache never reaches the
    process that runs the checks (a layer keeping every cache it is given holds none)."""
    from types import SimpleNamespace

    from autograder.checks.kvcache import judge, probe, probe_fallback
    from autograder.core.check import Failure

    wrong_axis = _mutant("append_wrong_axis").KVCache

    class AlwaysRaises(kvcache.KVCache):
        def append(self, layer, k, v):
            raise RuntimeError("no")

    kept = []

    class Keeps(kvcache.CachedAttention):
        def forward(self, x, cache=None, layer=0):
            kept.append(cache)
            return super().forward(x, cache, layer)

    class Restarts(kvcache.CachedAttention):  # positions restart at 0 (kv-positions-restart)
        def forward(self, x, cache=None, layer=0):
            zero = SimpleNamespace(length=lambda layer=0: 0, append=getattr(cache, "append", None))
            return super().forward(x, None if cache is None else zero, layer)

    x = probe.inputs_layer(torch.Generator().manual_seed(6))
    want = probe.probe_layer(kvcache, x)
    verdicts = (judge.verdict_layer, judge.verdict_contents)
    right = probe.probe_layer(_variant("right", KVCache=wrong_axis, CachedAttention=Keeps), x)
    assert "error" in right and "fallback/out0" in right, right.get(probe_fallback.ERROR)
    assert {type(c) for c in kept} <= {wrong_axis, type(None)}  # only the student's own
    for verdict in verdicts:
        verdict(right, want, x)
    no_evidence = {k: v for k, v in right.items() if not k.startswith("axis/")}
    forged_axis = {**right, "axis/keys": want["cache/keys"], "axis/values": want["cache/values"]}
    wrong = probe.probe_layer(_variant("w", KVCache=wrong_axis, CachedAttention=Restarts), x)
    raises = probe.probe_layer(_variant("raises", KVCache=AlwaysRaises), x)
    assert "fallback/out0" in raises  # run, but not accepted: no named mistake of the cache
    for got in (no_evidence, forged_axis, wrong, raises):
        with pytest.raises(Failure):
            judge.verdict_layer(got, want, x)
    x = probe.inputs_positions(torch.Generator().manual_seed(6))
    judge.verdict_positions(probe.probe_layer(_variant("p", KVCache=wrong_axis), x), None, x)
    with pytest.raises(Failure):
        got = probe.probe_layer(_variant("pw", KVCache=wrong_axis, CachedAttention=Restarts), x)
        judge.verdict_positions(got, None, x)
    # greedy_decode builds its own cache from the module's globals: the grandchild binds it.
    x = probe.inputs_generate(torch.Generator().manual_seed(6))
    want = probe.probe_generate(kvcache, x)
    mod = _variant("g", KVCache=wrong_axis)
    got = probe.probe_incremental(mod, x) | probe.probe_generate(mod, x)
    assert mod.KVCache is wrong_axis
    judge.verdict_incremental(got, want, x)
    judge.verdict_generate(got, want, x)
    raises = _variant("graises", KVCache=AlwaysRaises)
    got = probe.probe_incremental(raises, x) | probe.probe_generate(raises, x)
    for verdict in (judge.verdict_incremental, judge.verdict_generate):
        with pytest.raises(Failure):
            verdict(got, want, x)


def test_the_grandchild_is_bounded_and_a_refused_fork_fails_as_before(monkeypatch):
    """The working cache's run (probe_fallback) ends with its CPU limit (an endless loop) or
    its wait (a sleep), and a fork the sandbox refuses leaves no run: each time the check
    fails on the student's own run, as it did before the fallback existed."""
    import os
    import time

    from autograder.checks.kvcache import judge, probe, probe_fallback
    from autograder.core.check import Failure

    here = os.getpid()

    class StuckOutsideThisProcess(kvcache.CachedAttention):
        def forward(self, x, cache=None, layer=0):
            while os.getpid() != here and how == "loop":
                pass
            if os.getpid() != here and how == "sleep":
                time.sleep(60)
            return super().forward(x, cache, layer)

    monkeypatch.setattr(probe_fallback, "FALLBACK_CPU", 1)
    monkeypatch.setattr(probe_fallback, "FALLBACK_WAIT", 1.0)
    wrong_axis = _mutant("append_wrong_axis").KVCache
    mod = _variant("stuck", KVCache=wrong_axis, CachedAttention=StuckOutsideThisProcess)
    x = probe.inputs_layer(torch.Generator().manual_seed(7))
    want = probe.probe_layer(kvcache, x)
    for how in ("loop", "sleep"):
        started = time.monotonic()
        got = probe.probe_layer(mod, x)
        assert time.monotonic() - started < 30 and probe_fallback.ERROR in got, how
        with pytest.raises(Failure, match="failed at call 1"):
            judge.verdict_layer(got, want, x)

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    got = probe.probe_layer(_variant("refused", KVCache=wrong_axis), x)
    assert got[probe_fallback.ERROR].startswith("fork refused")
    with pytest.raises(Failure, match="failed at call 1"):
        judge.verdict_layer(got, want, x)
