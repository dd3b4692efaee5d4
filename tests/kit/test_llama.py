"""llama.py: the judge's float64 model equals the solution, a mistake in one exercise is
charged once when it reaches the others, and the slow training check."""

import pytest
import torch
from conftest import KIT, ROOT, expected_misconception, grade_folder, submission_with, variants

from autograder.checks.llama import judge, judge_models, probe
from autograder.core import registry
from autograder.core.check import Failure
from autograder.core.references import References
from autograder.run.engine import grade, run_check
from autograder.run.probing import make_inputs
from autograder.run.submission import Submission
from solutions import gqa
from solutions import llama as solution


def test_enough_variants():
    mutants = [m for m in variants("mutants") if m.values[0] == "llama"]
    alternatives = [a for a in variants("alternatives") if a.values[0] == "llama"]
    assert len(mutants) >= 8 and len(alternatives) >= 3


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_judge_model_equals_solution(num_kv_heads):
    """The judge recognises mistakes with its own model: it must be the solution's when no
    mistake is named (float64 against float32, float32 tolerance)."""
    gen = torch.Generator().manual_seed(num_kv_heads)
    config = {**probe.config_of(gen, num_kv_heads), "num_layers": 3}
    state = probe.draw_state(gen, probe.model_shapes(config, 11))
    model = solution.MiniLlama(11, **config)
    model.load_state_dict(state)
    idx = torch.randint(11, (2, 9), generator=gen)
    with torch.no_grad():
        ours = model.eval()(idx)
    torch.testing.assert_close(judge.llama_logits(state, config, idx).float(), ours)


def _mutated(tmp_path, old, new):
    source = (ROOT / "solutions" / "llama.py").read_text()
    assert source.count(old) == 1, old
    return submission_with(tmp_path, {"llama": source.replace(old, new)})


POST_NORM = (
    "x = x + self.attn(self.attn_norm(x), positions, mask)[0]  # (B, T, D)\n"
    "        return x + self.ffn(self.ffn_norm(x))  # (B, T, D)",
    "x = self.attn_norm(x + self.attn(x, positions, mask)[0])\n"
    "        return self.ffn_norm(x + self.ffn(x))",
)
NO_ROTARY = (
    "q = apply_rotary(q, positions, self.base)  # (B, H, T, d_k)\n"
    "        k = apply_rotary(k, positions, self.base)  # (B, H_kv, T, d_k)\n        ",
    "",
)


@pytest.mark.parametrize(
    ("old", "new", "lost"),
    [
        (  # inside RotaryAttention: the block and the model built on it pass
            "k = apply_rotary(k, positions, self.base)  # (B, H_kv, T, d_k)",
            "k, v = (apply_rotary(t, positions, self.base) for t in (k, v))",
            {"rotary": "llama-rotates-v"},
        ),
        (  # a layout that breaks both sub-layers: charged by both; the model built on it passes
            *POST_NORM,
            {"block-attention": "llama-post-norm", "block-ffn": "llama-post-norm"},
        ),
        (  # multihead's mistake, made again in RotaryAttention: named there, once
            "out = heads.transpose(1, 2).reshape(B, T, self.num_heads * self.d_k)",
            "out = heads.reshape(B, T, self.num_heads * self.d_k)",
            {"attention": "merge-view-no-transpose"},
        ),
        (  # masks' mistake, made again in MiniLlama's own mask
            "mask = causal_mask(T, device=idx.device)",
            "mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu()",
            {"logits": "causal-blocks-diagonal"},
        ),
    ],
    ids=["attention", "block", "merge", "mask"],
)
def test_a_mistake_is_charged_where_it_is_made(tmp_path, old, new, lost):
    """The whole solution with one place changed, so the mistake reaches every later check
    (the mutants override one method each, so theirs does not)."""
    results = grade_folder(_mutated(tmp_path, old, new), ["llama"])
    failed = {r.check_id.split(".", 1)[1]: r.misconception for r in results if not r.passed}
    assert failed == lost


def test_kv_memory_and_parameter_counts_in_the_docs():
    """The figures docs/llama.md states, from these very calls."""
    V = 58  # the corpus's characters
    n = sum(p.numel() for p in solution.MiniLlama(V).parameters())
    assert n == 740_992
    per_layer = [gqa.kv_cache_bytes(128, 4, kv, 128) for kv in (4, 2, 1)]
    assert per_layer == [131_072, 65_536, 32_768]


def _train(folder):
    """The slow training check alone, public seed."""
    check = registry.find("llama.train")
    return run_check(check, Submission(folder), None, seed=References.public().seed)


SLOW_MUTANTS = sorted((KIT / "slow_mutants" / "llama").glob("*.py"))


@pytest.mark.parametrize("path", [None, *SLOW_MUTANTS], ids=lambda p: p.stem if p else "solution")
def test_training_check_passes_the_solution_and_names_slow_mutants(path, tmp_path, monkeypatch):
    if path is None:
        # the judge's models name what the trained model computes, never score it: with a
        # judge's model that computes nonsense, the solution's own logits still pass
        nonsense = lambda *a, **k: torch.zeros(4, 32, 58).double()  # noqa: E731
        monkeypatch.setattr(judge, "llama_logits", nonsense)
        result = _train(ROOT / "solutions")
        assert result.passed, result.message
        return
    result = _train(submission_with(tmp_path, {"llama": path.read_text()}))
    assert (result.passed, result.misconception) == (False, expected_misconception(path))


def test_a_table_saved_as_a_buffer_keeps_the_training_points(tmp_path):
    """A model that keeps a table of its own in its state_dict (the kit's alternative with
    its rotary frequencies as a saved buffer, as Hugging Face's LLaMA keeps inv_freq) is
    trained and scored on the weights the grader gave it: the table is not a weight the check
    asked for (this alternative lost the 4 training points, "other names", before)."""
    source = (KIT / "alternatives" / "llama" / "complex_rope_table_buffer.py").read_text()
    assert "register_buffer(" in source
    result = _train(submission_with(tmp_path, {"llama": source}))
    assert result.passed, result.message


# Two convention differences, whole models: Meta's interleaved rotary pairs (written inline),
# and a head that reads the embedding's weight (a tie, where the docstring asks for none).
INTERLEAVED = (
    "q = apply_rotary(q, positions, self.base)  # (B, H, T, d_k)\n"
    "        k = apply_rotary(k, positions, self.base)  # (B, H_kv, T, d_k)",
    "d, at = self.d_k, positions.float()[:, None]\n"
    "        angle = at * self.base ** (-torch.arange(0, d, 2, device=x.device) / d)\n"
    "        cos, sin = angle.cos(), angle.sin()\n"
    "        q, k = (\n"
    "            torch.stack([t[..., ::2] * cos - t[..., 1::2] * sin,\n"
    "                         t[..., ::2] * sin + t[..., 1::2] * cos], dim=-1).flatten(-2)\n"
    "            for t in (q, k)\n"
    "        )",
)
TIED_IN_FORWARD = (
    "return self.lm_head(self.final_norm(x))",
    "return self.final_norm(x) @ self.token_embed.weight.T",
)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        (*POST_NORM, "llama-post-norm"),
        (*NO_ROTARY, "llama-no-rotary"),
        (*INTERLEAVED, "rope-interleaved-pairs"),
        (*TIED_IN_FORWARD, "llama-tied-head"),
    ],
    ids=["post-norm", "no-rotary", "interleaved", "tied-head"],
)
def test_a_mistake_charged_elsewhere_costs_no_training_points(
    tmp_path, monkeypatch, old, new, named
):
    """The whole model built with the mistake still learns: it is charged once, where it is
    named, and its training is scored on its own logits, against the looser bar for a named
    mistake (docs/llama.md): with the bar for the correct model out of reach, it still
    passes."""
    folder = _mutated(tmp_path, old, new)
    lost = {r.misconception for r in grade_folder(folder, ["llama"]) if not r.passed}
    assert lost == {named}, lost
    monkeypatch.setattr(judge, "TRAIN_THRESHOLD", 0.5)
    result = _train(folder)
    assert result.passed, result.message


def test_slow_check_is_left_out_by_default():
    results = grade(Submission(ROOT / "solutions"), ["llama"])
    assert "llama.train" not in {r.check_id for r in results}
    assert all(r.passed for r in results)


def test_an_own_dependency_not_attempted_is_named(tmp_path, monkeypatch):
    """Where the kit has no stand-in for gqa (the student copy), llama runs on the student's
    own gqa.py: a finished llama.py on an unfinished gqa.py names gqa's exercise."""
    from autograder.run import submission

    others = [m for m in submission.trusted_modules() if m != "gqa"]
    monkeypatch.setattr(submission, "trusted_modules", lambda: others)
    folder = submission_with(tmp_path, {"gqa": (ROOT / "assignments" / "gqa.py").read_text()})
    results = grade_folder(folder, ["llama"])
    assert {r.misconception for r in results} == {"not-attempted"}
    assert "in gqa.py, which llama.py uses," in results[0].message, results[0].message


def _head_check():
    check = registry.find("llama.head")
    return check, make_inputs(check, 7)


def _head_logits(x, E=None, norm=True):
    """lm_head(final_norm(token_embed(idx))): the head's computation with no blocks at all."""
    state, c = x["state"], x["config"]
    h = (state["token_embed.weight"] if E is None else E).double()[x["idx"]]
    if norm:
        h = judge_models.rms(h, state["final_norm.weight"], c["eps"])
    return (h @ state["lm_head.weight"].double().T).float()


def test_head_check_judges_the_final_norm_and_the_head_alone():
    """The head check decides from the student's own logits: a model right but for its
    blocks, embedding or mask passes (the logits check charges those); a head that reads no
    final norm, the embedding's weight, or anything after lm_head fails with its own name."""
    check, x = _head_check()
    check.verdict(probe.probe_logits(solution, x), {}, x)  # no Failure
    check.verdict({"logits": _head_logits(x)}, {}, x)  # no blocks: the head is still right
    E, W = x["state"]["token_embed.weight"], x["state"]["lm_head.weight"]
    named = {
        "llama-no-final-norm": _head_logits(x, norm=False),
        "llama-tied-head": _head_logits(x) @ torch.linalg.pinv(W.T) @ E.T,
        "llama-head-not-lm-head": _head_logits(x) + 1.0,
    }
    for mistake, logits in named.items():
        with pytest.raises(Failure) as failure:
            check.verdict({"logits": logits}, {}, x)
        assert failure.value.misconception.id == mistake


def test_head_check_gives_nothing_for_degenerate_logits():
    """Zeros, a constant, or the same row at every position: no evidence of a head (the
    last would be lm_head(final_norm(one vector)), which any model could return)."""
    check, x = _head_check()
    logits = _head_logits(x)
    for forged in (
        torch.zeros_like(logits),
        torch.full_like(logits, 0.5),
        logits[:1, :1].expand_as(logits),
    ):
        with pytest.raises(Failure) as failure:
            check.verdict({"logits": forged.clone()}, {}, x)
        assert failure.value.misconception.id == "no-evidence"
