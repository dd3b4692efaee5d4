"""LaTeX math as Unicode text, so feedback pages read offline (no MathJax from a CDN); and
back to ASCII for a terminal that cannot show it (`ascii_terminal`).

Covers what the course's teaching text uses ($...$ inline, $$...$$ display): Greek letters,
operators and relations, \\frac, \\sqrt, sub- and superscripts (Unicode's when every character
has one, else a plain "_" / "^"), \\operatorname, \\text, \\mathbb, aligned environments. What it
does not know loses its backslash and stays readable.
"""

from __future__ import annotations

import codecs
import html
import io
import locale
import os
import re
import sys

SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε",
    "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "ϕ",
    "omega": "ω", "Phi": "Φ", "Sigma": "Σ", "Omega": "Ω", "Delta": "Δ", "nabla": "∇",
    "sum": "∑", "prod": "∏", "infty": "∞", "cdot": "·", "times": "×", "to": "→",
    "leftarrow": "←", "rightarrow": "→", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "ne": "≠", "neq": "≠", "approx": "≈", "in": "∈", "dots": "…", "ldots": "…", "cdots": "⋯",
    "odot": "⊙", "top": "ᵀ", "ell": "ℓ", "mid": "|", "lfloor": "⌊", "rfloor": "⌋",
    "lceil": "⌈", "rceil": "⌉", "lVert": "‖", "rVert": "‖", "pm": "±", "partial": "∂",
    "bmod": " mod ", "exp": "exp", "log": "log", "ln": "ln", "max": "max", "min": "min",
    "sin": "sin", "cos": "cos", "arg": "arg", "quad": "  ", "qquad": "    ",
}  # fmt: skip
SPACING = {"!": "", ",": " ", ";": " ", ":": " ", " ": " "}
BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "E": "𝔼"}
CALLIGRAPHIC = {"H": "ℋ", "L": "ℒ", "O": "𝒪"}
SUPER = dict(zip("0123456789+-=()nijkT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱʲᵏᵀ", strict=True))
SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ", strict=True))
_GROUP = r"\{((?:[^{}]|\{[^{}]*\})*)\}"


def _script(text: str, table: dict[str, str], mark: str) -> str:
    text = text.strip()
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return f"{mark}{text}" if len(text) == 1 else f"{mark}({text})"


def _wrap(text: str) -> str:
    text = text.strip()
    plain = "".join(SUB.values()) + "".join(SUPER.values())
    return text if re.fullmatch(rf"[\w.√{plain}]+", text) else f"({text})"


def _subscripts(text: str) -> str:
    return re.sub(r"_(\w)", lambda m: _script(m.group(1), SUB, "_"), text)


def to_unicode(tex: str) -> str:
    s = tex
    s = re.sub(r"\\(begin|end)\{\w+\*?\}", "", s)
    s = s.replace("\\\\", "\n").replace("&", " ")
    for _ in range(6):  # nested groups, from the inside out
        before = s
        s = re.sub(r"\\(?:operatorname|mathrm|text|textrm|mathit|mathbf)" + _GROUP, r"\1", s)
        s = re.sub(r"\\mathbb\{(\w)\}", lambda m: BLACKBOARD.get(m.group(1), m.group(1)), s)
        s = re.sub(r"\\mathcal\{(\w)\}", lambda m: CALLIGRAPHIC.get(m.group(1), m.group(1)), s)
        s = re.sub(r"\\sqrt" + _GROUP, lambda m: "√" + _wrap(m.group(1)), s)
        s = re.sub(r"\\bar" + _GROUP, lambda m: m.group(1) + "\u0304", s)
        s = re.sub(r"\^" + _GROUP, lambda m: _script(m.group(1), SUPER, "^"), s)
        s = re.sub(r"_" + _GROUP, lambda m: _script(m.group(1), SUB, "_"), s)
        s = re.sub(  # innermost fractions first: their parts hold no more groups
            r"\\t?frac\{([^{}]*)\}\{([^{}]*)\}",
            lambda m: f"{_wrap(_subscripts(m.group(1)))}/{_wrap(_subscripts(m.group(2)))}",
            s,
        )
        if s == before:
            break
    s = re.sub(r"\\(left|right|big|Big|bigg|Bigg)\b\s*", "", s)
    s = re.sub(r"\\([!,;: ])", lambda m: SPACING[m.group(1)], s)
    s = re.sub(r"\\([A-Za-z]+)", lambda m: SYMBOLS.get(m.group(1), m.group(1)), s)
    s = re.sub(r"\^\s*(\\?\w|ᵀ)", lambda m: _script(m.group(1).lstrip("\\"), SUPER, "^"), s)
    s = re.sub(r"\^ᵀ", "ᵀ", s)
    s = re.sub(r"_(\w)", lambda m: _script(m.group(1), SUB, "_"), s)
    s = s.replace("{", "").replace("}", "")
    return re.sub(r"[ \t]{2,}", "  ", s).strip()


def markdown(text: str) -> str:
    """Markdown with its $$...$$ and $...$ math replaced by Unicode (HTML-escaped)."""

    def display(m: re.Match) -> str:
        lines = to_unicode(m.group(1)).splitlines()
        body = "<br>".join(html.escape(line.strip()) for line in lines if line.strip())
        return f'\n<div class="math-display">{body}</div>\n'

    def inline(m: re.Match) -> str:
        return f'<span class="math">{html.escape(to_unicode(m.group(1)))}</span>'

    parts = re.split(r"(```.*?```|`[^`\n]*`)", text, flags=re.S)  # leave code alone
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"\$\$(.+?)\$\$", display, parts[i], flags=re.S)
        parts[i] = re.sub(r"(?<![\\$])\$([^$\n]+?)\$", inline, parts[i])
    return "".join(parts)


# For a terminal whose encoding cannot show a character (PYTHONIOENCODING=ascii, a Latin-1
# locale): the math in ASCII ("√d_k" -> "sqrt d_k", "≠" -> "!="), anything else as its escape
# ("\u4e58"), never a UnicodeEncodeError that ends the grading.
TO_ASCII = {
    **{value: name for name, value in SYMBOLS.items() if len(value) == 1 and not value.isascii()},
    **{value: f"^{key}" for key, value in SUPER.items()},
    **{value: f"_{key}" for key, value in SUB.items()},
    "√": "sqrt ", "·": "*", "×": "x", "→": "->", "←": "<-", "≤": "<=", "≥": ">=", "≠": "!=",
    "≈": "~", "±": "+-", "…": "...", "⋯": "...", "∈": " in ", "—": "--", "–": "-", "‖": "||",
    "‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " ",
}  # fmt: skip
ASCII_ERRORS = "attention-lab-ascii"


def _to_ascii(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    out = (TO_ASCII.get(c) or c.encode("ascii", "backslashreplace").decode() for c in text)
    return "".join(out), error.end


def ascii_terminal(keep_encoding: bool = False) -> None:
    """Let stdout and stderr write what their encoding cannot show as ASCII (TO_ASCII) instead
    of raising: a no-op for a UTF-8 terminal, whose encoding shows everything. In Python's
    UTF-8 mode on a locale of another codeset (Latin-1, GBK: __main__ starts the kit so), they
    write the locale's codeset, which the terminal shows, unless PYTHONIOENCODING says.
    `keep_encoding`: the streams' encodings are already the terminal's (the warm grader's
    fork writes in the encodings its client found here)."""
    codecs.register_error(ASCII_ERRORS, _to_ascii)
    codeset = "" if keep_encoding or os.environ.get("PYTHONIOENCODING") else _locale_codeset()
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding=codeset or stream.encoding, errors=ASCII_ERRORS)


def _locale_codeset() -> str:
    """The locale's own codeset where UTF-8 mode stands in for it; "" where it is UTF-8 or
    ASCII (C, POSIX: a terminal there takes UTF-8, as Python's UTF-8 mode writes it)."""
    if not sys.flags.utf8_mode:
        return ""
    try:
        codeset = codecs.lookup(locale.nl_langinfo(locale.CODESET)).name
    except (AttributeError, LookupError, ValueError):  # no nl_langinfo, an unknown codeset
        return ""
    return "" if codeset in ("utf-8", "ascii") else codeset
