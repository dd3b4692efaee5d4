"""Similar submissions, for the class report: exact and near-duplicate files per module.

A flag for an instructor to review, never a verdict: nothing here changes a grade.

Each submission's module file is normalised with Python's tokenizer: comments, blank lines,
layout and docstrings dropped, every string literal one placeholder, and every name that is
not a keyword, a builtin, a library (torch, nn, F, math, ...) or an attribute (`.softmax`)
replaced by a placeholder numbered in order of first use within its top-level function or
class, so renamed variables and rewritten comments change nothing. The stub's lines (what
every student was given: signatures, the parameters created in `__init__`, the TODO's
`raise`) are taken out of each submission, so a class of stubs and half-finished files is not
"similar" by what they share from the start; what is compared is each student's own code.

Pairs are scored with the Indel similarity of their own token sequences, 2·LCS / (|a| + |b|)
in [0, 1] (rapidfuzz, pinned in the instructor extras; difflib's SequenceMatcher ratio, the
same measure, where rapidfuzz is not installed). Files whose own code is shorter than
MIN_TOKENS are not compared: a few lines leave too little room to write them differently.
"""

from __future__ import annotations

import builtins
import collections
import difflib
import hashlib
import html
import io
import json
import keyword
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

THRESHOLD = 0.85  # a pair at or above this is flagged for review
MIN_TOKENS = 25  # own code shorter than this is not compared
MAX_BYTES = 400_000  # a file read for comparison, at most

# Names every submission shares: not placeholders.
LIBRARIES = frozenset({"torch", "nn", "F", "functional", "math", "np", "numpy", "einops", "self"})
KEEP = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
KEEP |= LIBRARIES
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
SKIP |= {tokenize.ENDMARKER}

Line = tuple[str, ...]


def measure() -> str:
    """The similarity measure's implementation, as the report names it."""
    try:
        import rapidfuzz

        return f"rapidfuzz {rapidfuzz.__version__} (Indel similarity)"
    except ImportError:
        return "difflib SequenceMatcher ratio (rapidfuzz is not installed)"


def notebook_code(text: str) -> str:
    """The code cells of a notebook, one after the other; IPython magics and shell lines
    (`%time`, `!pip`) become comments, so the tokenizer reads the rest."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return ""
    parts = []
    for c in cells if isinstance(cells, list) else []:
        if not isinstance(c, dict) or c.get("cell_type") != "code":
            continue
        source = c.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        lines = [
            "# " + line if line.lstrip().startswith(("%", "!")) else line
            for line in source.splitlines()
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def normalise(source: str) -> list[Line]:
    """The logical lines of `source`, as normalised tokens (see the module's docstring). Text
    the tokenizer cannot read (a syntax error) is kept line by line, whitespace collapsed."""
    lines: list[Line] = []
    names: dict[str, str] = {}
    current: list[str] = []
    previous = ""
    done_upto = 0  # the last physical line read by the tokenizer
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            done_upto = tok.end[0]
            if tok.type in SKIP:
                continue
            if tok.type == tokenize.NEWLINE:
                if current and not (len(current) == 1 and current[0] == "S"):  # a docstring
                    lines.append(tuple(current))
                current, previous = [], ""
                continue
            text = tok.string
            if tok.type == tokenize.NAME:
                if not current and tok.start[1] == 0 and text in ("def", "class", "async"):
                    names = {}  # a new top-level block: its own numbering
                if text not in KEEP and previous != ".":
                    text = names.setdefault(text, f"v{len(names)}")
            elif tok.type == tokenize.STRING:
                text = "S"
            current.append(text)
            previous = tok.string
    except (tokenize.TokenError, SyntaxError):
        rest = source.splitlines()[max(0, done_upto - 1) :]
        lines += [tuple(line.split()) for line in rest if line.strip()]
        return lines
    if current:
        lines.append(tuple(current))
    return lines


def own_lines(lines: list[Line], stub: Iterable[Line]) -> list[Line]:
    """`lines` less the stub's lines (each stub line taken out once, wherever it stands)."""
    given = collections.Counter(stub)
    out = []
    for line in lines:
        if given[line] > 0:
            given[line] -= 1
        else:
            out.append(line)
    return out


@dataclass
class Code:
    """One student's file of one module, ready to compare."""

    student: str
    text: str
    own: list[Line]

    @property
    def tokens(self) -> list[str]:
        return [t for line in self.own for t in line]

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "replace")).hexdigest()


@dataclass
class Group:
    """Students whose files of `module` are identical: byte for byte (`exact`), or after
    normalisation (renamed variables, other comments and layout)."""

    module: str
    students: list[str]
    exact: bool
    reference: bool = False  # the same code as solutions/<module>.py (after normalisation)


@dataclass
class Pair:
    """Two students' files of `module` whose own code scores `score` (>= the threshold)."""

    module: str
    a: str
    b: str
    score: float
    a_also: list[str] = field(default_factory=list)  # the same code as a's (its groups)
    b_also: list[str] = field(default_factory=list)


@dataclass
class ModuleSimilarity:
    module: str
    compared: int  # students whose own code was long enough to compare
    threshold: float = THRESHOLD
    groups: list[Group] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)


def _scorer():
    try:
        from rapidfuzz.distance import Indel

        return lambda a, b, cutoff: Indel.normalized_similarity(a, b, score_cutoff=cutoff)
    except ImportError:

        def ratio(a: str, b: str, cutoff: float) -> float:
            matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
            if matcher.real_quick_ratio() < cutoff or matcher.quick_ratio() < cutoff:
                return 0.0
            score = matcher.ratio()
            return score if score >= cutoff else 0.0

        return ratio


def compare(
    module: str,
    files: Mapping[str, str],
    stub: str = "",
    reference: str = "",
    threshold: float = THRESHOLD,
) -> ModuleSimilarity:
    """Compare every pair of students' `files` (student -> source) of `module`; `stub`: the
    code everyone was given (taken out), `reference`: the solution (a group that equals it
    says so)."""
    stub_lines = normalise(stub)
    codes = []
    for student, text in sorted(files.items()):
        own = own_lines(normalise(text), stub_lines)
        code = Code(student, text, own)
        if len(code.tokens) >= MIN_TOKENS:
            codes.append(code)
    result = ModuleSimilarity(module, len(codes), threshold)
    ref_own = own_lines(normalise(reference), stub_lines) if reference else None

    # identical files, then identical own code: one group each, not every pair of it; a
    # group's first student stands for it from then on
    rep: dict[str, str] = {c.student: c.student for c in codes}
    for exact, key in ((True, lambda c: c.digest), (False, lambda c: tuple(c.own))):
        by_key: dict[object, list[Code]] = collections.defaultdict(list)
        for c in codes:
            if rep[c.student] == c.student:
                by_key[key(c)].append(c)
        for same in by_key.values():
            if len(same) > 1:
                who = [c.student for c in same]
                result.groups.append(Group(module, who, exact, same[0].own == ref_own))
                for s, r in rep.items():
                    if r in who:
                        rep[s] = who[0]

    # near duplicates, between the groups' representatives: the tokens as characters, one
    # code point per distinct token
    alphabet: dict[str, str] = {}
    as_text = {
        c.student: "".join(alphabet.setdefault(t, chr(0x100 + len(alphabet))) for t in c.tokens)
        for c in codes
        if rep[c.student] == c.student
    }
    score = _scorer()
    students = sorted(as_text)
    for i, a in enumerate(students):
        for b in students[i + 1 :]:
            s = score(as_text[a], as_text[b], threshold)
            if s >= threshold:
                also = [sorted(x for x, r in rep.items() if r == y and x != y) for y in (a, b)]
                result.pairs.append(Pair(module, a, b, float(s), also[0], also[1]))
    result.pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return result


def side_by_side(a: str, b: str, text_a: str, text_b: str, title: str) -> str:
    """An HTML page: the two files side by side, differences marked (difflib.HtmlDiff)."""
    table = difflib.HtmlDiff(tabsize=4, wrapcolumn=72).make_table(
        text_a.splitlines(), text_b.splitlines(), a, b, context=False
    )
    legend = (
        "<p><a href='../index.html'>← class report</a></p><p>Left: "
        + _escape(a)
        + "; right: "
        + _escape(b)
        + ". <span class='diff_add'>added</span> <span class='diff_chg'>changed"
        "</span> <span class='diff_sub'>deleted</span>: the raw files, comments included; a "
        "file identical to the other shows no colour. Similarity is a reason to look, never "
        "a finding: no grade was changed.</p>"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:1em}table.diff{font-family:monospace;"
        "font-size:12px;border-collapse:collapse}.diff_header{background:#eee;color:#666}"
        "td.diff_header{text-align:right;padding:0 4px}.diff_next{background:#eee}"
        ".diff_add{background:#cfc}.diff_chg{background:#ffa}.diff_sub{background:#fcc}"
        "</style></head><body>"
        f"<h1>{_escape(title)}</h1>{legend}{table}</body></html>\n"
    )


def _escape(text: str) -> str:
    return html.escape(text)
