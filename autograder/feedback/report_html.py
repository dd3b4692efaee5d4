"""build/report.html: the table, each failing check's message and hint, and pictures of what
the student's own code computed, beside the reference and a difference map.

Every picture re-runs one check's probe on the student's code, on that check's own inputs
(the grader's inputs and weights, drawn from the public seed), and draws the outputs next to
the stored reference outputs of the same check: attention weights, multi-head weights per
head, masks, the positional-encoding matrix, a Transformer block's heads, MiniGPT's maps per
layer, the √d_k curves, the efficient-attention patterns, and the images the student's plot
functions drew. An exercise not attempted yet shows a placeholder.

The page is self-contained and offline: images are PNG data: URIs, encoded here (zlib, no
matplotlib, so it is fast) and drawn at their native size, scaled up by the browser without
smoothing; curves are inline SVG; the CSS is inline; there are no scripts beyond one inline
line that counts the images rendered, and no request leaves the page.

Nothing here may break grading: a picture that fails says why, in one line, in its place.
"""

from __future__ import annotations

import base64
import html
import math
import os
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import registry
from ..core.check import Result, Status
from ..core.i18n import N_, _, html_lang, message, ngettext
from ..core.i18n import title as i18n_title
from ..run import waiting
from .report import TAGS, Hints, hints_of, printed_lines, shown_status, tip

if TYPE_CHECKING:  # torch is imported where a picture is drawn (report.html may have none)
    import torch


@dataclass(frozen=True)
class Picture:
    """What to draw for one check: outputs `keys` of its probe, each passed to `select`.

    kind "map": one 2-D map per key; "heads": each key's output, after `select`, is (H, ., .),
    one map per head; "curves": 1-D outputs against the output `x`, one chart.
    scale: "unit" (weights, masks: 0 to 1) or "signed" (-1 to 1: the positional encoding).
    """

    slug: str
    keys: tuple[str, ...]
    caption: str
    kind: str = "map"
    select: Callable | None = None
    scale: str = "unit"
    x: str = ""


def _seq0(t):
    return t[0]


PICTURES: dict[str, list[Picture]] = {
    "attention": [
        Picture(
            "mask-2d", ("weights",), N_("attention weights under an (L, S) mask"), select=_seq0
        ),
        Picture("causal", ("weights",), N_("attention weights under a causal mask"), select=_seq0),
        Picture("bias", ("weights",), N_("attention_with_bias: weights"), select=_seq0),
    ],
    "masks": [
        Picture("causal", ("m2",), N_("causal_mask(8), True = blocked")),
        Picture("window", ("w1", "w2"), N_("sliding_window_mask(10, window) for two windows")),
        Picture("padding", ("list",), N_("padding_mask, (B, S)"), select=lambda t: t[:, 0, 0, :]),
    ],
    "multihead": [
        Picture(
            "self-attention",
            ("weights",),
            N_("MultiHeadAttention: self-attention weights, one map per head"),
            kind="heads",
            select=_seq0,
        ),
        Picture(
            "mask",  # cross-attention (L ≠ S) under an (L, S) mask
            ("weights",),
            N_("MultiHeadAttention: cross-attention with a mask, one map per head"),
            kind="heads",
            select=_seq0,
        ),
    ],
    "positional": [
        Picture(
            "encoding",
            ("pe",),  # what probe_table returns for the "encoding" check
            N_(
                "sinusoidal_encoding(max_len, d_model) on the encoding check's sizes, "
                "transposed: rows are features, columns positions"
            ),
            select=lambda t: t.T,
            scale="signed",
        ),
    ],
    "blocks": [
        Picture(
            "pre-ln",
            ("weights",),
            N_("Pre-LN TransformerBlock: attention weights per head"),
            kind="heads",
            select=_seq0,
        ),
        Picture(
            "post-ln",
            ("weights",),
            N_("Post-LN TransformerBlock: attention weights per head"),
            kind="heads",
            select=_seq0,
        ),
    ],
    "gpt": [
        Picture(
            "return-attn",
            ("weights0", "weights1"),
            N_("MiniGPT: each layer's attention (mean over heads), with the grader's weights"),
            select=lambda t: t[0].mean(dim=0),
        ),
    ],
    "diagnostics": [
        Picture(
            "sqrtdk-experiment",
            ("entropy_scaled", "entropy_unscaled"),
            N_("√d_k experiment: mean entropy (nats) against d_k"),
            kind="curves",
            x="d_k",
        ),
        Picture(
            "sqrtdk-experiment",
            ("max_weight_scaled", "max_weight_unscaled"),
            N_("√d_k experiment: mean largest weight against d_k"),
            kind="curves",
            x="d_k",
        ),
    ],
    "efficient": [
        Picture("local", ("w3/weights",), N_("local_attention, window 3"), select=_seq0),
        Picture("strided", ("s3/weights",), N_("strided_attention, stride 3"), select=_seq0),
    ],
    "plots": [
        Picture("attention", ("image0",), N_("plot_attention: the image your figure holds")),
        Picture("layer-means", ("image0", "image1", "image2"), N_("plot_layer_means: each panel")),
    ],
}

# --------------------------------------------------------------------------- PNG, colours

# viridis at 9 stops (matplotlib's values), interpolated linearly; differences use white->red.
_VIRIDIS = [
    (68, 1, 84),
    (71, 45, 123),
    (59, 82, 139),
    (44, 114, 142),
    (33, 145, 140),
    (40, 174, 128),
    (94, 201, 98),
    (173, 220, 48),
    (253, 231, 37),
]
_SIGNED = [(33, 102, 172), (146, 197, 222), (247, 247, 247), (244, 165, 130), (178, 24, 43)]
_REDS = [(255, 255, 255), (252, 187, 161), (251, 106, 74), (203, 24, 29), (103, 0, 13)]


def _colour(value: float, stops) -> tuple[int, int, int]:
    if not math.isfinite(value):
        return (255, 0, 255)  # NaN and infinity: magenta, never a colour of the scale
    t = min(max(value, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    f = t - i
    a, b = stops[i], stops[i + 1]
    return tuple(round(a[c] + (b[c] - a[c]) * f) for c in range(3))


def png(rows: list[list[float]], stops) -> bytes:
    """An RGB PNG, one pixel per value in [0, 1] (NaN and inf in magenta)."""
    height, width = len(rows), len(rows[0])
    raw = bytearray()
    for row in rows:
        raw.append(0)
        for v in row:
            raw.extend(_colour(v, stops))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw), 6))
        + chunk(b"IEND", b"")
    )


def _img(matrix, lo: float, hi: float, stops, label: str) -> str:
    rows = [[(float(v) - lo) / (hi - lo) for v in row] for row in matrix.tolist()]
    if not rows or not rows[0]:
        return f'<div class="empty">{html.escape(label)}: empty</div>'
    cell = max(4, min(20, 240 // max(len(rows[0]), 1)))
    data = base64.b64encode(png(rows, stops)).decode()
    w, h = len(rows[0]) * cell, len(rows) * cell
    caption = f"<figcaption>{html.escape(label)}</figcaption>" if label else ""
    return (
        f'<figure><img alt="{html.escape(label)}" width="{w}" height="{h}" '
        f'src="data:image/png;base64,{data}">{caption}</figure>'
    )


# --------------------------------------------------------------------------- drawing


def _as_maps(picture: Picture, outputs: dict) -> list[tuple[str, torch.Tensor]]:
    """[(label, 2-D tensor)] for one side (the student's or the reference)."""
    import torch

    maps = []
    for key in picture.keys:
        value = outputs.get(key)
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"output {key!r} is {type(value).__name__}, not a tensor")
        value = value.detach().float()
        if picture.select is not None:
            value = picture.select(value)
        if picture.kind == "heads":
            maps += [(_("head {h}").format(h=h), value[h]) for h in range(value.shape[0])]
        else:
            label = key.split("/")[0] if len(picture.keys) > 1 else ""
            if picture.slug == "return-attn":
                label = _("layer {n}").format(n=key.removeprefix("weights"))
            maps.append((label, value))
    for label, m in maps:
        if m.dim() != 2:
            raise ValueError(f"{label or picture.keys[0]} has shape {tuple(m.shape)}, not 2-D")
    return maps


def _maps_html(picture: Picture, got: dict, want: dict) -> str:
    """A table: one row per map (a head, a layer, a key), columns yours, reference and
    |yours - reference| (on its own scale, from 0 to its largest entry)."""
    import torch

    ref = _as_maps(picture, want)
    lo, hi = (-1.0, 1.0) if picture.scale == "signed" else (0.0, 1.0)
    stops = _SIGNED if lo < 0 else _VIRIDIS
    try:
        yours = _as_maps(picture, got)
    except (TypeError, ValueError, IndexError, RuntimeError) as e:
        yours, problem = [], _("Your output could not be drawn: {error}").format(error=e)
    else:
        problem = ""
        if len(yours) != len(ref):
            problem = _("You returned {n} maps where the reference has {m}.").format(
                n=len(yours), m=len(ref)
            )
    columns = []  # per map: (label, yours cell, reference cell, difference cell)
    for i, (label, r) in enumerate(ref):
        ref_cell = _img(r, lo, hi, stops, "")
        if i < len(yours):
            y = yours[i][1]
            mine = _img(y, lo, hi, stops, "")
        else:
            mine = '<span class="empty">—</span>'
        if i >= len(yours):
            diff_cell = '<span class="empty">—</span>'
        elif y.shape != r.shape:
            differ = _("shapes differ: yours {yours}, reference {reference}").format(
                yours=tuple(y.shape), reference=tuple(r.shape)
            )
            diff_cell = f'<span class="empty">{html.escape(differ)}</span>'
        else:
            diff = (y - r).abs()
            finite = torch.isfinite(diff)
            worst = float(diff[finite].max()) if finite.any() else 0.0
            diff = torch.where(finite, diff, torch.full_like(diff, float("nan")))
            text = (
                _("identical")
                if worst <= 1e-6
                else _("largest {worst}").format(worst=f"{worst:.2g}")
            )
            if not finite.all():
                text += _(", NaN/inf in magenta")
            diff_cell = _img(diff, 0.0, max(worst, 1e-6), _REDS, text)
        columns.append((label, mine, ref_cell, diff_cell))
    sides = (_("yours"), _("reference"), _("|yours − reference|"))
    if len(columns) == 1:  # one map: the three side by side
        head = "<tr>" + "".join(f"<th>{html.escape(n)}</th>" for n in sides) + "</tr>"
        body = "<tr>" + "".join(f"<td>{c}</td>" for c in columns[0][1:]) + "</tr>"
    else:  # several (heads, layers): one column per map, one row per side
        head = "<tr><th></th>" + "".join(f"<th>{html.escape(c[0])}</th>" for c in columns)
        head += "</tr>"
        body = "".join(
            f'<tr><th class="side">{html.escape(name)}</th>'
            + "".join(f"<td>{c[k + 1]}</td>" for c in columns)
            + "</tr>"
            for k, name in enumerate(sides)
        )
    table = f'<table class="maps">{head}{body}</table>'
    scale = _("colours: {lo} {bar} {hi}; difference: 0 {reds} its largest value").format(
        lo=f"{lo:g}", bar=_bar(stops), hi=f"{hi:g}", reds=_bar(_REDS)
    )
    scale = f'<p class="scale">{scale}</p>'
    note = _note(problem) if problem else ""
    return f"{note}{table}{scale}"


def _bar(stops) -> str:
    data = base64.b64encode(png([[i / 31 for i in range(32)]], stops)).decode()
    return f'<img class="bar" alt="" width="64" height="10" src="data:image/png;base64,{data}">'


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


_COLOURS = ("#1f77b4", "#d62728")


def _curves_html(picture: Picture, got: dict, want: dict) -> str:
    """One SVG chart: the reference's lines dashed, the student's solid; x on a log-2 axis."""
    import torch

    xs = [float(v) for v in want[picture.x].tolist()]
    series = []
    for i, key in enumerate(picture.keys):
        ref = [float(v) for v in want[key].tolist()]
        name = key.rsplit("_", 1)[-1]
        series.append((_("{name} (reference)").format(name=name), ref, _COLOURS[i], "6 4"))
        value = got.get(key)
        if isinstance(value, torch.Tensor) and value.numel() == len(xs):
            mine = [float(v) for v in value.detach().flatten().tolist()]
            series.append((_("{name} (yours)").format(name=name), mine, _COLOURS[i], ""))
        else:
            what = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            missing = _("{key}: yours not drawn ({what})").format(key=key, what=what)
            series.append((missing, [], _COLOURS[i], ""))
    finite = [v for s in series for v in s[1] if math.isfinite(v)] or [0.0, 1.0]
    lo, hi = min(finite + [0.0]), max(finite)
    hi = hi if hi > lo else lo + 1
    W, H, P = 420, 220, 36
    lx = [math.log2(x) if x > 0 else 0.0 for x in xs]
    x0, x1 = min(lx), max(lx) if max(lx) > min(lx) else min(lx) + 1

    def pt(x, y):
        return (
            P + (x - x0) / (x1 - x0) * (W - 2 * P),
            H - P - (y - lo) / (hi - lo) * (H - 2 * P),
        )

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" role="img">',
        f'<rect x="{P}" y="{P // 2}" width="{W - 2 * P}" height="{H - P - P // 2}" '
        'fill="none" stroke="#999"/>',
    ]
    for x, label in zip(lx, xs, strict=True):
        px = pt(x, lo)[0]
        parts.append(
            f'<text x="{px:.1f}" y="{H - P + 14}" font-size="10" text-anchor="middle">'
            f"{label:g}</text>"
        )
    for y in (lo, (lo + hi) / 2, hi):
        py = pt(x0, y)[1]
        parts.append(
            f'<text x="{P - 4}" y="{py + 3:.1f}" font-size="10" text-anchor="end">{y:.2g}</text>'
        )
    parts.append(f'<text x="{W / 2}" y="{H - 4}" font-size="11" text-anchor="middle">d_k</text>')
    for _name, ys, colour, dash in series:
        points = [pt(x, y) for x, y in zip(lx, ys, strict=False) if math.isfinite(y)]
        if points:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
            dashing = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" '
                f'stroke-width="2"{dashing}/>'
            )
    parts.append("</svg>")
    legend = "".join(
        f'<li><span style="border-top:2px {"dashed" if dash else "solid"} {colour}"></span>'
        f"{html.escape(name)}</li>"
        for name, _ys, colour, dash in series
    )
    return f'<div class="chart">{"".join(parts)}<ul class="legend">{legend}</ul></div>'


def picture_html(
    picture: Picture, check, result: Result | None, submission, refs: dict, probed=None
) -> str:
    """One picture's HTML: the three rows, a placeholder, or a one-line reason. `probed`, a
    dict, caches the student's outputs per check (two pictures may draw one check)."""
    head = f"<h4>{html.escape(_(picture.caption))}</h4>"
    exercise = check.exercise or check.module
    if result is None:
        return f'<div class="picture">{head}{_note(_("This check was not graded."))}</div>'
    if result.status == "not attempted":
        placeholder = _(
            "{exercise} is not attempted yet: its picture appears here once you write it."
        ).format(exercise=exercise)
        return f'<div class="picture placeholder">{head}<p>{html.escape(placeholder)}</p></div>'
    if result.status == "timed out":
        note = _note(_("Not drawn: the check ran out of time."))
        return f'<div class="picture">{head}{note}</div>'
    if result.status == Status.WAITING:
        note = _note(_("Not drawn: {reason}").format(reason=waiting.text(result)))
        return f'<div class="picture">{head}{note}</div>'
    want = refs.get(picture.slug)
    if want is None:
        return f'<div class="picture">{head}{_note(_("No reference outputs stored."))}</div>'
    # The report never runs student code: it draws what the grading's worker returned.
    got = (probed or {}).get(check.id)
    why = message(result) if result.message else _("your code returned nothing to draw")
    reason = _("Not drawn: {reason}").format(reason=why)
    if got is None:
        return f'<div class="picture">{head}{_note(reason[:300])}</div>'
    try:
        if picture.kind == "curves":
            body = _curves_html(picture, got, want)
        else:
            body = _maps_html(picture, got, want)
    except Exception as e:  # a picture never breaks the report
        body = _note(_("Not drawn: {reason}").format(reason=f"{type(e).__name__}: {e}")[:300])
    return f'<div class="picture">{head}{body}</div>'


# --------------------------------------------------------------------------- the page


def sections(
    results: list[Result],
    submission,
    refs: dict | None = None,
    probed: dict | None = None,
    hints: Hints = None,
    graded_at: str = "",
) -> dict[str, str]:
    """{module: its HTML section}, for the modules in `results` (draws what the student's
    code returned, `probed`). `refs`: {module: reference outputs} already loaded
    (fixtures.load), to load them once; `hints`: the hint levels to show (report.Hints: the
    ladder's state, or every level); `graded_at`: the time shown beside each heading."""
    by_module: dict[str, list[Result]] = {}
    for r in results:
        by_module.setdefault(r.module, []).append(r)
    out = {}
    for module, rs in by_module.items():
        by_slug = {r.check_id.split(".", 1)[1]: r for r in rs}
        check_of = {c.slug: c for c in registry.checks_of(module)}
        pictures = []
        probed = {} if probed is None else probed
        try:
            stored = (refs or {}).get(module)
            if not stored:
                from ..core import fixtures  # torch: only for pictures drawn from stored outputs

                stored = fixtures.load(module)
        except Exception as e:
            stored = {}
            pictures.append(
                _note(_("Reference outputs could not be loaded: {error}").format(error=e))
            )
        for picture in PICTURES.get(module, []):
            check = check_of.get(picture.slug)
            if check is None:
                continue
            result = by_slug.get(picture.slug)
            pictures.append(picture_html(picture, check, result, submission, stored, probed))
        out[module] = section(module, rs, "".join(pictures), hints, graded_at, modules=by_module)
    return out


_CSS_CLASS = {"passed": "pass", "not attempted": "todo", "waiting": "wait", "note": "note"}


def _points(x: float) -> str:
    return f"{x:g}"


def section(
    module: str,
    rs: list[Result],
    pictures: str,
    hints: Hints = None,
    graded_at: str = "",
    modules=(),
) -> str:
    """One module's section: its heading (points, what waits, and when it was graded), its
    checks with their messages and hints, then `pictures` (HTML). `modules`: the modules
    graded with it (a check that waits says whether its dependency's checks are shown)."""
    score, total = sum(r.score for r in rs), sum(r.points for r in rs)
    rows = []
    shown: set[tuple[str, str]] = set()
    hinted: set[str] = set()
    held = [r for r in rs if r.status == Status.WAITING]
    for r in rs:
        status = shown_status(r)
        tag = _(TAGS[status]).strip() if status in TAGS else "?"
        css = _CSS_CLASS.get(status, "fail")
        title = html.escape(i18n_title(r.name))
        detail = ""
        if r.status == Status.WAITING:  # waiting.py: the reason, once what it means
            detail = f'<div class="msg">{html.escape(waiting.text(r))}</div>'
            if r is held[0]:
                why = waiting.why(module, waiting.files(held), modules or [module])
                detail += f'<div class="hint">{html.escape(why)}</div>'
        elif not r.passed and (r.misconception, r.message) in shown:
            same = _("(same as above: {misconception})").format(misconception=r.misconception)
            detail = f'<div class="hint">{html.escape(same)}</div>'
        elif not r.passed:
            shown.add((r.misconception, r.message))
            label = f"<b>[{html.escape(r.misconception)}]</b> " if r.misconception else ""
            detail = f'<div class="msg">{label}{html.escape(message(r))}</div>'
            if r.misconception not in hinted:
                for line in hints_of(r, hints):
                    detail += f'<div class="hint">{html.escape(line)}</div>'
            hinted.add(r.misconception)
        printed = r.extra.get("printed", "")
        if printed and not r.passed and r.status != Status.WAITING:
            text = "\n".join(printed_lines(printed, 100))
            head = html.escape(_("Your code printed:"))
            detail += f'<pre class="printed">{head}\n{html.escape(text)}</pre>'
        rows.append(
            f'<tr class="{css}"><td class="tag">{tag}</td>'
            f"<td>{_points(r.score)}/{_points(r.points)}</td><td>{title}{detail}</td></tr>"
        )
    when = ""
    if graded_at:
        when = html.escape(_("graded {time}").format(time=graded_at))
        when = f' <span class="when">{when}</span>'
    wait = ""
    if held:
        wait = _("({n} waiting)").format(n=_points(waiting.points(held))) + " "
    return (
        f'<section id="{module}"><h2>{module}.py{when} <span class="score">{html.escape(wait)}'
        f"{_points(score)} / "
        f'{_points(total)}</span></h2><table class="checks">{"".join(rows)}</table>'
        f"{pictures}</section>"
    )


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;
max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;
margin-top:32px}h4{margin:16px 0 6px;font-size:14px}
.score{float:right;font-weight:normal}
.when{font-size:12px;font-weight:normal;color:#666;margin-left:8px}
.tip{margin:8px 0;font-weight:bold}
table.checks{border-collapse:collapse;width:100%}
table.checks td{padding:4px 8px;border-top:1px solid #eee;vertical-align:top}
td.tag{font-weight:bold;width:44px}
tr.pass td.tag{color:#1a7f37}tr.fail td.tag{color:#cf222e}tr.todo td.tag{color:#9a6700}
tr.wait td.tag{color:#57606a}
tr.note td.tag{color:#0969da}
.msg{margin-top:4px}.hint{color:#444;margin-top:2px}
pre.printed{background:#f6f8fa;padding:6px;font-size:12px;white-space:pre-wrap;margin:4px 0}
.summary td{padding:2px 12px 2px 0}
.picture{margin:8px 0 16px;padding:8px 12px;background:#fafafa;border:1px solid #eee}
.placeholder{background:repeating-linear-gradient(45deg,#fafafa,#fafafa 10px,#f0f0f0 10px,
#f0f0f0 20px);color:#666}
table.maps{border-collapse:collapse}table.maps th{font-size:12px;font-weight:normal;
color:#555;padding:2px 10px;text-align:center}table.maps td{padding:4px 10px;vertical-align:top}
th.side{text-align:right!important}p.scale{font-size:11px;color:#666;margin:4px 0}
img.bar{display:inline-block;vertical-align:middle;border:1px solid #ccc}
figure{margin:0;text-align:center}figcaption{font-size:11px;color:#555}
img{image-rendering:pixelated;image-rendering:crisp-edges;border:1px solid #ccc;display:block}
.empty,.note{font-size:12px;color:#9a6700}
.chart{display:flex;gap:16px;align-items:center}
.legend{list-style:none;padding:0;font-size:12px}
.legend span{display:inline-block;width:28px;margin-right:6px;vertical-align:middle}
"""


def _state(rs: list[Result]) -> str:
    todo = sum(r.status == "not attempted" for r in rs)
    fix = sum(r.status not in ("passed", "not attempted", "waiting") and not r.note for r in rs)
    notes = sum(r.note for r in rs)
    parts = [
        _("all passed") if not todo and not fix and not waiting.points(rs) else "",
        ngettext("{n} not attempted", "{n} not attempted", todo).format(n=todo) if todo else "",
        ngettext("{n} to fix", "{n} to fix", fix).format(n=fix) if fix else "",
        ngettext("{n} advice note", "{n} advice notes", notes).format(n=notes) if notes else "",
    ]
    listed = (_(", ").join(p for p in parts if p), waiting.total_note(rs, _points))
    return _("; ").join(t for t in listed if t)


def page(
    results: list[Result],
    module_sections: dict[str, str],
    title: str,
    graded: dict[str, str] | None = None,
) -> str:
    """The whole page: a summary row per module (with the time it was graded, from `graded`:
    {module: time shown}), then each module's section."""
    modules: dict[str, list[Result]] = {}
    for r in results:
        modules.setdefault(r.module, []).append(r)
    score, total = sum(r.score for r in results), sum(r.points for r in results)
    graded = graded or {}
    summary = "".join(
        f'<tr><td><a href="#{m}">{m}.py</a></td><td>{_points(sum(r.score for r in rs))} / '
        f"{_points(sum(r.points for r in rs))}</td>"
        f"<td>{_state(rs)}</td>"
        + (
            f'<td class="when">{html.escape(_("graded {time}").format(time=graded[m]))}</td>'
            if m in graded
            else ""
        )
        + "</tr>"
        for m, rs in modules.items()
    )
    body = "".join(module_sections.get(m, "") for m in modules)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    intro = _(
        "{score} / {total} points · written {stamp} by make grade. Pictures: what your code "
        "computed on the grader's inputs, beside the reference and their difference."
    ).format(score=_points(score), total=_points(total), stamp=stamp)
    note = waiting.total_note(results, _points)
    if note:
        intro += " " + _("{note}: not judged yet, counted neither as won nor as lost.").format(
            note=note
        )
    # the table's closing tip (report.tip): the first module with a check to fix
    next_step = "".join(f'<p class="tip">{html.escape(line)}</p>' for line in tip(results))
    count = (
        "<script>addEventListener('load',()=>{const i=[...document.images];"
        "document.body.dataset.rendered=i.filter(x=>x.complete&&x.naturalWidth>0).length;"
        "document.body.dataset.images=i.length})</script>"
    )
    return (
        f'<!DOCTYPE html><html lang="{html_lang()}"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>"
        f'<table class="summary">{summary}</table>{next_step}{body}{count}</body></html>'
    )


def write(
    path: Path,
    results: list[Result],
    module_sections: dict[str, str],
    title: str,
    graded: dict[str, str] | None = None,
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(page(results, module_sections, title, graded), encoding="utf-8")
    tmp.replace(path)  # a browser reloading the page never sees half a file
    return path
