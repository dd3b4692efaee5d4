"""Probe side of positional.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
Every size, position and value is drawn from the check's generator, so the hidden tier
varies all of them (a stored table cannot answer for another seed).
"""

from __future__ import annotations

import torch

from ...run.probing import gradients, kept, load_weights, raised, randn

P_DROP = 0.25  # training-mode dropout: not 0.5, so dropping 1 - p instead of p shows


REFUSED_FULL = "refused-full"  # got[...]: the message of forward's ValueError at T = max_len


def _full_length(build, run, got):
    """run(build(0)): a module built for max_len, run on an x of T = max_len rows, the longest
    the docstring allows (B = T = max_len is where every way of slicing pe agrees). When the
    student's forward refuses that T with a ValueError (an off-by-one: T >= max_len), its
    message is kept in got[REFUSED_FULL] for the too-long check, which charges it alone,
    and the same x goes through build(1), a module one position longer."""
    try:
        return run(build(0))
    except ValueError as e:
        got[REFUSED_FULL] = (str(e).splitlines() or [""])[0][:300]
        return run(build(1))


def _padded(pe, extra):
    """pe (1, max_len, D) with `extra` rows of zeros after it: a longer module's buffer."""
    return torch.cat([pe, pe.new_zeros(1, extra, pe.size(-1))], dim=1) if extra else pe


def _int(gen, low: int, high: int) -> int:
    """A draw from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _even(gen, low: int, high: int) -> int:
    return 2 * _int(gen, low // 2, high // 2)


# --------------------------------------------------------------------------- sinusoidal_encoding


def inputs_even(gen):
    return {"max_len": _int(gen, 30, 80), "d_model": _even(gen, 10, 24)}


def inputs_odd(gen):
    return {
        "odd": {"max_len": _int(gen, 30, 80), "d_model": 2 * _int(gen, 2, 6) + 1},
        "one-column": {"max_len": _int(gen, 2, 9), "d_model": 1},
    }


def probe_table(mod, x):
    return {"pe": mod.sinusoidal_encoding(x["max_len"], x["d_model"])}


def probe_odd(mod, x):
    return {name: mod.sinusoidal_encoding(c["max_len"], c["d_model"]) for name, c in x.items()}


def inputs_far(gen):
    max_len = _int(gen, 4000, 6000)
    picks = {0, 1, _int(gen, 2, 99), _int(gen, 100, 999), max_len - 1}
    picks |= {_int(gen, 1000, max_len - 2) for _ in range(2)}
    return {"max_len": max_len, "d_model": _even(gen, 24, 40), "positions": sorted(picks)}


def probe_far(mod, x):
    table = mod.sinusoidal_encoding(x["max_len"], x["d_model"])
    if type(table) is torch.Tensor and tuple(table.shape) == (x["max_len"], x["d_model"]):
        return {"rows": table[x["positions"]]}
    return {"rows": table}  # the wrong type or shape: the verdict says which


def inputs_frequencies(gen):
    return {"max_len": _int(gen, 60, 150), "d_model": _even(gen, 8, 24)}


def inputs_relative(gen):
    offsets = [1, _int(gen, 2, 9), _int(gen, 20, 60)]
    return {"max_len": _int(gen, 120, 250), "d_model": _even(gen, 8, 16), "offsets": offsets}


# --------------------------------------------------------------------------- PositionalEncoding


def inputs_buffer(gen):
    max_len, d_model = _int(gen, 12, 30), _even(gen, 8, 16)
    # B = T = max_len: every way of slicing pe gives the same sum here, so this check does
    # not charge forward's slicing again.
    return {
        "max_len": max_len,
        "d_model": d_model,
        "state": randn(gen, 1, max_len, d_model),
        "x": randn(gen, max_len, max_len, d_model),
    }


def probe_buffer(mod, x):
    max_len, d_model = x["max_len"], x["d_model"]
    module = mod.PositionalEncoding(d_model, max_len=max_len)
    state = module.state_dict()
    pe = getattr(module, "pe", None)
    params = dict(module.named_parameters())
    got = {
        "in_state_dict": "pe" in state,
        "is_parameter": "pe" in params or isinstance(pe, torch.nn.Parameter),
        "is_buffer": "pe" in dict(module.named_buffers()),
        "requires_grad": bool(getattr(pe, "requires_grad", False)),
        # The student's own table: the buffer must hold it (its values are graded above).
        "table": mod.sinusoidal_encoding(max_len, d_model),
    }
    if type(pe) is torch.Tensor or isinstance(pe, torch.nn.Parameter):
        got["pe"] = pe.detach().clone().as_subclass(torch.Tensor)

    # Evidence that needs the real computation: a state_dict holding a random pe, loaded
    # strictly, must be what forward adds; and a training step must not change the output.
    def loaded(extra):
        module = mod.PositionalEncoding(d_model, max_len=max_len + extra).eval()
        load_weights(module, {"pe": _padded(x["state"], extra)})  # its other buffers kept
        return module

    def run_loaded(module):
        with torch.no_grad():
            got["loaded_out"] = module(x["x"].clone())

    try:
        _full_length(loaded, run_loaded, got)
    except (RuntimeError, KeyError) as e:
        got["load_error"] = str(e).splitlines()[0]

    def step(trained):
        with torch.no_grad():
            got["before_step"] = trained(x["x"].clone())
        params = [p for p in trained.parameters() if p.requires_grad]
        if params:
            trained(x["x"].clone()).square().sum().backward()
            torch.optim.SGD(params, lr=0.1).step()
        with torch.no_grad():
            got["after_step"] = trained(x["x"].clone())

    build = lambda extra: mod.PositionalEncoding(d_model, max_len=max_len + extra).eval()  # noqa: E731
    _full_length(build, step, got)
    return got


def _table_and_x(gen, max_len, d_model, cases):
    """A random stand-in for the table (loaded into the student's pe when it has one, so
    forward is graded on its own whatever its table holds; the verdicts compare with the
    module's own table, _own_table) and one x per (B, T) case."""
    x = {"max_len": max_len, "d_model": d_model, "pe": randn(gen, 1, max_len, d_model)}
    x["x"] = {name: randn(gen, B, T, d_model) for name, (B, T) in cases.items()}
    return x


def inputs_forward(gen):
    max_len, d_model = _int(gen, 20, 40), _even(gen, 8, 20)
    B = _int(gen, 2, 4)
    cases = {
        "batch": (B, _int(gen, 2, max_len - 1)),
        "batch1": (1, _int(gen, 2, max_len - 1)),
        "full": (_int(gen, 2, 4), max_len),
    }
    return _table_and_x(gen, max_len, d_model, cases)


def inputs_dropout(gen):
    # B = T: slicing pe by the batch size happens to be right here, so that mistake costs
    # points in the forward check only. Many values: the dropped fraction is measured.
    max_len, d_model, T = _int(gen, 12, 24), _even(gen, 16, 24), _int(gen, 5, 8)
    return _table_and_x(gen, max_len, d_model, {"x": (T, T)})


def _module(mod, x, dropout=0.0, extra=0):
    """The student's module holding the drawn table in its buffer pe (when it has one);
    `extra` positions longer than max_len (_full_length), its extra rows zeros."""
    max_len = x["max_len"] + extra
    module = mod.PositionalEncoding(x["d_model"], max_len=max_len, dropout=dropout)
    pe = getattr(module, "pe", None)
    table = _padded(x["pe"], extra)
    if isinstance(pe, torch.Tensor) and pe.numel() == table.numel():
        with torch.no_grad():
            pe.copy_(table.reshape(pe.shape))
    return module


def _call(module, value, got, key, fresh=True):
    """got[key] = module(value), or got[key + '/error'] when x + pe did not broadcast;
    `fresh`: on a copy of value (a forward that changes x in place is charged once, by the
    forward check, which calls it on value itself)."""
    try:
        with torch.no_grad():
            got[key] = module(value.clone() if fresh else value)
    except RuntimeError as e:  # a finding, not a crash: the verdict names it
        if "size of tensor" not in str(e):
            raise
        got[key + "/error"] = str(e).splitlines()[0]


def _own_table(mod, x, got):
    """got["table"]: what the student's module (dropout 0, eval mode) adds to zeros of shape
    (max_len, max_len, D), B = T = max_len, where every way of slicing the table agrees: its
    own table, wherever it keeps it (pe, or d2l's P), so forward and dropout are graded on
    what forward does with it, whatever the attribute's name."""
    zeros = torch.zeros(x["max_len"], x["max_len"], x["d_model"])
    build = lambda extra: _module(mod, x, extra=extra).eval()  # noqa: E731
    _full_length(build, lambda module: _call(module, zeros, got, "table"), got)
    try:  # the student's own table, for a module that keeps it elsewhere than in pe
        got["encoding"] = mod.sinusoidal_encoding(x["max_len"], x["d_model"])
    except Exception:  # noqa: BLE001 (then the table must be the one loaded into pe)
        pass


def probe_forward(mod, x):
    """forward on each x, and whether it changed the x it was given in place (kept)."""
    module = _module(mod, x).eval()
    got = {}

    def run():
        for name, value in x["x"].items():
            if value.size(1) < x["max_len"]:
                _call(module, value, got, name, fresh=False)
            else:  # T = max_len
                build = lambda extra: _module(mod, x, extra=extra).eval()  # noqa: E731
                _full_length(build, lambda m, v=value, k=name: _call(m, v, got, k, False), got)
        return got

    got = kept([("x", value) for value in x["x"].values()], run)
    _own_table(mod, x, got)
    got.update(gradients(None, module, {"x": x["x"]["batch"]}))  # does x get a gradient?
    return got


def probe_dropout_eval(mod, x):
    module = _module(mod, x, dropout=0.5).eval()
    got = {}
    for key, seed in (("out", 1), ("out2", 2)):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            _call(module, x["x"]["x"], got, key)
    # The same module without dropout: a bug in forward costs points once, above.
    _call(_module(mod, x).eval(), x["x"]["x"], got, "no_dropout")
    return got


def probe_dropout_train(mod, x):
    module = _module(mod, x, dropout=P_DROP).train()
    got = {}
    with torch.random.fork_rng():
        torch.manual_seed(0)  # reproducible; the verdict does not depend on which values drop
        _call(module, x["x"]["x"], got, "out")
    _own_table(mod, x, got)
    return got


def inputs_too_long(gen):
    max_len = _int(gen, 10, 30)
    return {"max_len": max_len, "d_model": _even(gen, 4, 12), "T": max_len + _int(gen, 1, 5)}


def probe_too_long(mod, x):
    """forward at T = max_len (it must return) and at T > max_len (it must raise)."""
    module = mod.PositionalEncoding(x["d_model"], max_len=x["max_len"]).eval()
    try:
        module(torch.zeros(2, x["max_len"], x["d_model"]))
    except ValueError as e:
        return {REFUSED_FULL: (str(e).splitlines() or [""])[0][:300]}
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001,S110 (another error at T = max_len is the forward check's)
        pass
    got, text = raised(lambda: module(torch.zeros(2, x["T"], x["d_model"])), "returned a tensor")
    return {"got": got, "text": text}
