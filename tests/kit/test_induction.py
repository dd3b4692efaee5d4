"""induction.py: the judge's float64 models equal the solution, the grader's stored model
holds a clear induction circuit, renumbering heads renumbers the answer (no index can be
hard-coded), and the slow training check."""

import pytest
import torch
from conftest import KIT, ROOT, expected_misconception, submission_with, variants

from autograder.checks.induction import judge, probe, probe_weights
from autograder.core import registry
from autograder.core.references import References
from autograder.run.engine import run_check
from autograder.run.submission import Submission
from solutions import induction as solution


def test_enough_variants():
    mutants = [m for m in variants("mutants") if m.values[0] == "induction"]
    alternatives = [a for a in variants("alternatives") if a.values[0] == "induction"]
    assert len(mutants) >= 8 and len(alternatives) >= 3


def _probe_weights(state=None):
    model = solution.AttentionOnlyTransformer(**probe_weights.CONFIG)
    model.load_state_dict(state or probe_weights.state())
    return model.eval()


def test_judge_models_equal_the_solution():
    """The judge names mistakes with its own float64 models: with no mistake flagged they
    must compute what the solution computes (float32 tolerance)."""
    gen = torch.Generator().manual_seed(0)
    x = probe.inputs_ablation(gen)
    model = _probe_weights(x["state"])
    tokens, P = x["tokens"], x["period"]
    for ablate in ([], [(1, 0)], [(0, 1), (1, 1)]):
        with torch.no_grad():
            logits, weights = model(tokens, ablate=ablate)
        ours, our_weights = judge.forward64(x["state"], x["config"], tokens, ablate)
        torch.testing.assert_close(ours.float(), logits, atol=1e-4, rtol=1e-4)
        for w, v in zip(our_weights, weights, strict=True):
            torch.testing.assert_close(w.float(), v, atol=1e-5, rtol=1e-5)
    w = weights[1]
    torch.testing.assert_close(judge.previous64(w).float(), solution.previous_token_scores(w))
    torch.testing.assert_close(judge.induction64(w, P).float(), solution.induction_scores(w, P))
    first, repeated = solution.in_context_losses(logits, tokens, P)
    torch.testing.assert_close(
        judge.losses64(logits, tokens, P).float(), torch.stack([first, repeated])
    )
    tables = probe.inputs_tables(gen)
    ind, prev = solution.find_heads(tables["previous"], tables["induction"])
    assert judge.heads64(tables["previous"], tables["induction"]).tolist() == [*ind, *prev]


def test_the_probe_weights_holds_an_induction_circuit():
    """The stored weights (tools/make_induction_weights.py): a previous-token head in layer
    0, an induction head in layer 1, a large in-context loss drop that ablating layer 1's
    heads removes. Renumbering the heads (the probe side's permutation) renumbers the heads
    found and changes nothing else."""
    P = 12
    tokens = solution.repeated_tokens(
        64, P, probe_weights.CONFIG["vocab_size"], torch.Generator().manual_seed(5)
    )
    model = _probe_weights()
    previous, induction = solution.head_scores(model, tokens, P)
    (li, hi), (lp, hp) = solution.find_heads(previous, induction)
    assert (li, lp) == (1, 0)
    assert previous[0, hp] > 0.4 and induction[1, hi] > 0.6, (previous, induction)
    assert solution.loss_drop(model, tokens, P) > 1.5
    assert solution.loss_drop(model, tokens, P, [(1, 0), (1, 1)]) < 0.3
    found = set()
    for seed in range(8):
        state = probe.permuted_state(torch.Generator().manual_seed(seed))
        renumbered = _probe_weights(state)
        prev2, ind2 = solution.head_scores(renumbered, tokens, P)
        assert torch.allclose(prev2.sort(dim=1).values, previous.sort(dim=1).values, atol=1e-5)
        found.add(solution.find_heads(prev2, ind2))
    assert len(found) > 1, "the permutation never moved the heads"


def _train(folder):
    """The slow training check alone, public seed."""
    check = registry.find("induction.train")
    return run_check(check, Submission(folder), None, seed=References.public().seed)


SLOW_MUTANTS = sorted((KIT / "slow_mutants" / "induction").glob("*.py"))


@pytest.mark.parametrize("path", [None, *SLOW_MUTANTS], ids=lambda p: p.stem if p else "solution")
def test_training_check_passes_the_solution_and_names_slow_mutants(path, tmp_path):
    if path is None:
        result = _train(ROOT / "solutions")
        assert result.passed, result.message
        return
    result = _train(submission_with(tmp_path, {"induction": path.read_text()}))
    assert (result.passed, result.misconception) == (False, expected_misconception(path))
