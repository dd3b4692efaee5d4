"""diagnostics' checks: every input drawn from the seed, experiments graded on behaviour."""

from __future__ import annotations

import pytest
import torch
from conftest import KIT, submission_with

from autograder.checks.diagnostics import judge_ln, judge_sqrt_dk, probe_ln
from autograder.core.check import Failure
from autograder.core.registry import checks_of
from autograder.run.engine import grade
from autograder.run.probing import make_inputs
from autograder.run.submission import Submission

EXPERIMENTS = {"wo-experiment", "ln-placement", "sqrtdk-experiment", "sqrtdk-finding"}


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in _leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _same(a, b) -> bool:
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or not torch.equal(x, y):
                return False
        elif x != y:
            return False
    return True


def test_every_input_depends_on_the_seed():
    for check in checks_of("diagnostics"):
        a, b = make_inputs(check, 1), make_inputs(check, 2)
        assert not _same(a, b), f"{check.id}: the inputs do not depend on the seed"
        assert _same(a, make_inputs(check, 1)), f"{check.id}: the inputs are not deterministic"


def test_experiment_seeds_and_sizes_vary_across_seeds():
    # The experiments get fresh seeds, and lengths / d_k values a stored table cannot answer.
    by_slug = {c.slug: c for c in checks_of("diagnostics")}
    for slug, keys in (
        ("wo-experiment", ("steps",)),
        ("sqrtdk-experiment", ("d_ks",)),
        ("ln-placement", ("batch", "seq_len")),
    ):
        draws = [make_inputs(by_slug[slug], s) for s in range(12)]
        assert len({d["seed"] for d in draws}) == 12, slug
        for key in keys:
            assert len({d[key] for d in draws}) > 1, (slug, key)


def test_stored_experiment_results_earn_nothing_on_the_hidden_tier(tmp_path):
    """The stored-results attack (issue 12.6) on the hidden tier: its honest parts score, the
    experiments it typed in lose every point (the public tier is the mutant test's)."""
    path = KIT / "mutants" / "diagnostics" / "stored_experiment_results.py"
    folder = submission_with(tmp_path, {"diagnostics": path.read_text()})
    results = grade(Submission(folder), ["diagnostics"], seed=4242)
    lost = {r.check_id.split(".", 1)[1] for r in results if not r.passed}
    assert lost == EXPERIMENTS, lost
    assert all(r.score == 0 for r in results if r.check_id.split(".", 1)[1] in EXPERIMENTS)


def test_layer_gradient_norms_accepts_any_floating_dtype():
    check = next(c for c in checks_of("diagnostics") if c.slug == "ln-gradient-norms")
    x = make_inputs(check, 3)
    want = {
        "post": judge_ln._trusted_norms(x, False, None),
        "pre": judge_ln._trusted_norms(x, True, probe_ln.final_norm()),
    }
    want["post_again"] = want["post_stale"] = want["post"]
    for dtype in (torch.float64, torch.float32):
        got = {k: v.detach().to(dtype) for k, v in want.items()}
        check.verdict(got, want, x)  # no Failure
    got = {k: v.detach().to(torch.int64) for k, v in want.items()}
    with pytest.raises(Failure) as failure:
        check.verdict(got, want, x)
    assert failure.value.misconception.id == "wrong-dtype"


def test_sqrt_dk_replay_with_k_first_is_the_other_draw_order():
    # The judge accepts the docstring's draws (q, then k) and k then q; the replay of the
    # second must differ from the first, or it would accept any run.
    check = next(c for c in checks_of("diagnostics") if c.slug == "sqrtdk-experiment")
    x = make_inputs(check, 5)
    from solutions import diagnostics

    ref = diagnostics.sqrt_dk_experiment(d_ks=x["d_ks"], seed=x["seed"])
    other = judge_sqrt_dk._run_k_first(x)
    assert not torch.allclose(other["entropy_scaled"], ref["entropy_scaled"], atol=1e-4)


def test_sqrt_dk_k_first_run_is_accepted_without_the_model(monkeypatch):
    # The student copy has no model to replay the k-first run: it takes the one the
    # reference's probe measured (probe_sqrt_dk.k_first), which must be the judge's replay.
    from autograder.checks.diagnostics import probe_sqrt_dk
    from autograder.core.verdicts import ModelUnavailable
    from solutions import diagnostics

    check = next(c for c in checks_of("diagnostics") if c.slug == "sqrtdk-experiment")
    x = make_inputs(check, 5)
    want = probe_sqrt_dk.probe_experiment(diagnostics, x)
    replay = judge_sqrt_dk._run_k_first(x)
    for key in probe_sqrt_dk.QUANTITIES:
        torch.testing.assert_close(want[f"k_first/{key}"], replay[key], **judge_sqrt_dk.RUN_TOL)
    got = {"d_k": want["d_k"], **replay}
    check.verdict(got, want, x)  # no Failure

    def unavailable(x):
        raise ModelUnavailable("_run_k_first")

    monkeypatch.setattr(judge_sqrt_dk, "_run_k_first", unavailable)
    check.verdict(got, want, x)  # no Failure: decided from the reference's k-first run
    got["entropy_scaled"] = got["entropy_scaled"] + 0.01
    with pytest.raises(Failure):
        check.verdict(got, want, x)


def _module_from(path, name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_classify_heads_excuses_only_an_entropy_in_bits():
    """classify_heads is judged given the student's own head_entropy when that entropy is in
    bits (named and charged in head_entropy's checks), from what their head_entropy returned
    on the very maps; a degenerate or forged entropy excuses no other classification."""
    from autograder.checks.diagnostics import judge_entropy, probe_entropy
    from solutions import diagnostics

    shared = _module_from(KIT / "mutants" / "diagnostics" / "entropy_log2_shared.py", "shared")
    x = probe_entropy.inputs_classify(torch.Generator().manual_seed(3))
    want = probe_entropy.probe_classify(diagnostics, x)
    got = probe_entropy.probe_classify(shared, x)
    assert (got["causal"], got["random"]) != (want["causal"], want["random"])  # a cascade
    judge_entropy.verdict_classify(got, want, x)  # excused: head_entropy's checks charge it
    # The same labels with the right entropies recorded: classify_heads' own mistake.
    own_nats = {k: v for k, v in want.items() if "/own-" in k}
    with pytest.raises(Failure):
        judge_entropy.verdict_classify({**got, **own_nats}, want, x)
    # An entropy of zeros, or negated, with every head "collapsed": no excuse (principle 14).
    for forged in (torch.zeros_like, torch.neg):
        rows = {k: forged(v) for k, v in got.items() if "/own-" in k}
        constant = {
            k: ",".join(["collapsed"] * len(want[k].split(","))) for k in ("causal", "random")
        }
        with pytest.raises(Failure):
            judge_entropy.verdict_classify({**got, **rows, **constant}, want, x)
    # Bits recorded, but labels that bits do not give: charged.
    wrong = {k: ",".join(["uniform"] * len(want[k].split(","))) for k in ("causal", "random")}
    with pytest.raises(Failure):
        judge_entropy.verdict_classify({**got, **wrong}, want, x)
