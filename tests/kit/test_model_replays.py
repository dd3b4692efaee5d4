"""The student copy's models answer from what the kit recorded
(autograder/core/model_replays.py)."""

import math

import pytest
import torch

from autograder.core import model_replays, paths
from autograder.core.verdicts import ModelUnavailable, model

pytestmark = pytest.mark.fast


def _fake(name):
    """A model-like function that looks as if a judge of module 'fake' declared it."""

    def fn(x, *, scale=None):
        out = x["q"].double() @ x["k"].double().transpose(-2, -1)
        return (out / (scale or math.sqrt(x["q"].size(-1)))).softmax(-1), {"n": out.numel()}

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "autograder.checks.fake.judge"
    return fn


def _inputs(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {
        "q": torch.randn(2, 5, 8, generator=gen),
        "k": torch.randn(2, 7, 8, generator=gen),
        "mask": torch.rand(5, 7, generator=gen) > 0.7,
    }


@pytest.fixture
def answers(tmp_path, monkeypatch):
    """A left-out copy of the fake model, answering from answers recorded into tmp_path."""
    real = _fake("_attend")
    recorded = model(real)
    with model_replays.recording() as rec:
        recorded(_inputs(), scale=4.0)
        recorded(_inputs(), scale=None)
        recorded(_inputs(1))
    rec.write(tmp_path, {"fake": "x"})
    monkeypatch.setattr(paths, "FIXTURES", tmp_path)
    monkeypatch.setattr(model_replays, "_loaded", {})
    return real, model.left_out(_fake("_attend"))


def test_a_left_out_model_answers_what_was_recorded(answers):
    real, left_out = answers
    x = _inputs()
    got, extra = left_out(x, scale=4.0)
    want, _ = real(x, scale=4.0)
    assert torch.equal(got, want) and got.dtype == torch.float64 and extra == {"n": 70}
    assert torch.equal(left_out(_inputs(1))[0], real(_inputs(1))[0])


def test_another_cpus_last_bits_still_find_the_answer(answers):
    real, left_out = answers
    x = _inputs()
    x["q"] = torch.nextafter(x["q"], torch.full_like(x["q"], math.inf))  # one ulp up
    assert torch.allclose(left_out(x, scale=4.0)[0], real(_inputs(), scale=4.0)[0])


@pytest.mark.parametrize(
    "change",
    [
        lambda x, kw: kw.update(scale=3.99),  # a float beside larger tensors: its own scale
        lambda x, kw: x["q"].__setitem__((0, 0, 0), x["q"][0, 0, 0] + 0.01),
        lambda x, kw: x["mask"].__setitem__((0, 0), not bool(x["mask"][0, 0])),  # exact
        lambda x, kw: x.__setitem__("q", x["q"].double()),
        lambda x, kw: x.__setitem__("q", x["q"][:, :4]),
        lambda x, kw: x.__setitem__("extra", 1),
        lambda x, kw: kw.update(scale=lambda: 4.0),  # unkeyable: never answered
    ],
)
def test_other_arguments_find_no_answer(answers, change):
    _, left_out = answers
    x, kw = _inputs(), {"scale": 4.0}
    change(x, kw)
    with pytest.raises(ModelUnavailable):
        left_out(x, **kw)


def test_without_answers_a_left_out_model_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "FIXTURES", tmp_path)
    monkeypatch.setattr(model_replays, "_loaded", {})
    with pytest.raises(ModelUnavailable):
        model.left_out(_fake("_attend"))(_inputs())


def test_a_tampered_answer_file_is_not_read(answers):
    _, left_out = answers
    npz = paths.FIXTURES / "fake.models.npz"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    model_replays._loaded.clear()
    with pytest.raises(ModelUnavailable):
        left_out(_inputs(), scale=4.0)


def _plus(n):
    def plus(q):
        return q + n

    return plus


def test_only_the_outermost_call_is_recorded_and_unstorable_answers_are_skipped():
    inner = model(_fake("_inner"))

    def outer_fn(x):
        return inner(x)[0] * 2

    outer_fn.__module__ = "autograder.checks.fake.judge"
    outer = model(outer_fn)

    def module_fn(x):
        return torch.nn.Linear(2, 2)

    def apply_fn(x, f):
        return f(x["q"])

    module_fn.__module__ = apply_fn.__module__ = "autograder.checks.fake.judge"
    with model_replays.recording() as rec:
        outer(_inputs())
        outer(_inputs())  # the same call again: one answer
        model(module_fn)(_inputs())  # an answer that is no plain data
        model(apply_fn)(_inputs(), _plus(1))  # a closure has no fingerprint
    names = [c["model"].rsplit(".", 1)[1] for c in rec.entries["fake"]]
    assert names == ["outer_fn"]
    assert {k.split(" ", 1)[1] for k in rec.skipped} == {"(Linear)", "(function)"}


def test_recording_is_off_outside_a_recording():
    fn = model(_fake("_attend"))
    fn(_inputs())
    assert model_replays._recorder is None


class _Holder:  # stands for a judge's plain data holder (kvcache's _Cache)
    def __init__(self, n):
        self.k = [None] * n


_Holder.__module__ = "autograder.checks.fake.judge"


def test_a_holder_filled_in_place_is_keyed_as_given_and_filled_again(tmp_path, monkeypatch):
    def fill(x, cache):
        cache.k = [x["q"].sum(-1) for _ in cache.k]
        return len(cache.k)

    fill.__module__ = "autograder.checks.fake.judge"
    with model_replays.recording() as rec:
        assert model(fill)(_inputs(), _Holder(2)) == 2
    rec.write(tmp_path, {"fake": "x"})
    monkeypatch.setattr(paths, "FIXTURES", tmp_path)
    monkeypatch.setattr(model_replays, "_loaded", {})
    left_out = model.left_out(fill)
    cache = _Holder(2)
    assert left_out(_inputs(), cache) == 2  # found with the empty holder it was called with
    assert torch.equal(cache.k[1], _inputs()["q"].sum(-1))  # and filled as the model did
    with pytest.raises(ModelUnavailable):
        left_out(_inputs(), _Holder(3))


def test_a_sealed_process_gets_no_answer(answers, monkeypatch):
    _, left_out = answers
    monkeypatch.setattr(model_replays, "_sealed", False)
    assert left_out(_inputs(), scale=4.0) is not None
    model_replays.seal()  # the worker, before it imports student code
    with pytest.raises(ModelUnavailable):
        left_out(_inputs(), scale=4.0)
