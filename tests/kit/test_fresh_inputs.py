"""Issue 27, item 1: every attempt draws its own hidden inputs, and feedback on hidden inputs
names the mistake and shows the student's own values, never the reference's. The same wrong
code is handed in twice in each channel that takes resubmissions (make batch, Gradescope,
PrairieLearn): the inputs differ, and neither feedback holds a reference value."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, SOLUTIONS
from test_batch import batch, grades
from test_gradescope import autograder_zip, run_autograder  # noqa: F401 (a fixture)
from test_prairielearn import course, grade  # noqa: F401 (a fixture)

from autograder.channels import prairielearn
from autograder.core import i18n

# Right shapes, wrong numbers: no named mistake fits, so the generic "wrong values" speaks,
# the message that used to print "(yours 0.1, expected 0.59345)".
OFF = """

_right = scaled_dot_product_attention


def scaled_dot_product_attention(q, k, v, mask=None):
    out, weights = _right(q, k, v, mask)
    return out * 1.5 + 0.25, weights
"""
REFERENCE_NUMBER = re.compile(r"expected -?\d|largest error \d")


def _wrong(folder: Path, comment: str = "") -> Path:
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    text = (SOLUTIONS / "attention.py").read_text() + OFF + comment
    (folder / "attention.py").write_text(text)
    return folder


def _yours(text: str) -> list[str]:
    """The student's own values the feedback shows ("yours 1.234")."""
    return re.findall(r"yours (-?[0-9][0-9.e+-]*)", text)


def _no_reference(text: str) -> None:
    assert i18n.WITHHELD in text, text[:3000]
    assert not REFERENCE_NUMBER.search(text), REFERENCE_NUMBER.search(text)


def test_batch_draws_inputs_per_attempt_and_shows_no_reference(tmp_path):
    subs = tmp_path / "subs"
    _wrong(subs / "first")
    _wrong(subs / "second", "# handed in again, one comment added\n")
    out = tmp_path / "out"
    batch(subs, out, "--ex", "attention")
    rows = grades(out)
    assert 0 < float(rows["first"]["attention"]) < 20
    with open(out / "seeds.csv") as f:
        recorded = {r["student"]: (r["seed"], r["attempt"]) for r in csv.DictReader(f)}
    assert recorded["first"][1] and recorded["first"][1] != recorded["second"][1]
    feedback = {n: (out / n / "feedback.txt").read_text() for n in ("first", "second")}
    results = {n: (out / n / "results.json").read_text() for n in ("first", "second")}
    for name in feedback:
        _no_reference(feedback[name])
        _no_reference(results[name])
    assert _yours(feedback["first"]) and _yours(feedback["first"]) != _yours(feedback["second"])
    # The same files again (a regrade): the same attempt, the same inputs, the same feedback.
    again = tmp_path / "again"
    batch(subs, again, "--ex", "attention", "--student", "first")
    with open(again / "seeds.csv") as f:
        assert {r["student"]: r["attempt"] for r in csv.DictReader(f)}["first"] == recorded[
            "first"
        ][1]
    assert _yours((again / "first" / "feedback.txt").read_text()) == _yours(feedback["first"])


def test_gradescope_draws_inputs_per_upload_and_shows_no_reference(autograder_zip, tmp_path):  # noqa: F811
    upload = _wrong(tmp_path / "upload")
    seen = []
    for upload_id in (101, 102):
        root = tmp_path / f"root{upload_id}"
        root.mkdir()
        meta = {"id": upload_id, "users": [{"id": 7, "email": "s@example.edu"}]}
        (root / "submission_metadata.json").write_text(json.dumps(meta))
        data = run_autograder(autograder_zip, root, upload)
        text = json.dumps(data, ensure_ascii=False)
        _no_reference(text)
        log = (root / "instructor_log.txt").read_text()
        seen.append((re.search(r"seed (\d+) of 7, attempt (\w+)", log).groups(), _yours(text)))
    (seed1, attempt1), yours1 = seen[0]
    (seed2, attempt2), yours2 = seen[1]
    assert (attempt1, attempt2) == ("101", "102") and seed1 != seed2
    assert yours1 and yours1 != yours2


WRONG_MASK = """import torch


def causal_mask(L, device=None):
    return torch.ones(L, L, dtype=torch.bool, device=device).tril(-2)
"""


def test_prairielearn_draws_inputs_per_attempt_and_shows_no_reference(course, tmp_path):  # noqa: F811
    wrong = WRONG_MASK
    texts, seeds = [], []
    for i, source in enumerate((wrong, wrong + "# again\n")):
        root = tmp_path / f"grade{i}"
        data = grade(course, root, source)
        texts.append(json.dumps(data, ensure_ascii=False))
        seeds.append(prairielearn._seed(root, "masks"))
    assert seeds[0] != seeds[1]
    for text in texts:
        assert not REFERENCE_NUMBER.search(text)


@pytest.mark.parametrize(("module", "slug"), [("gqa", "kv-bytes"), ("mla", "cache-bytes")])
def test_every_named_byte_count_is_withheld_on_the_hidden_tier(module, slug):
    """gqa's kv_cache_bytes messages printed the reference's byte count ({expected}) in every
    channel's hidden feedback (Sandbox._verdict: withhold_reference withholds `want` and `err`
    only); now they name it `want`, withheld in English and in Chinese alike. mla's
    cache_bytes_per_token did the same until a hunt returned the reference + 1 and read it.
    (kvcache's greedy message shows the argmax of the student's own logits: a value of
    theirs.)"""
    from autograder.core import registry
    from autograder.core.references import References
    from autograder.run.engine import judge
    from autograder.run.probing import make_inputs

    check = next(c for c in registry.checks_of(module) if c.slug == slug)
    refs = References.public()
    want, x = refs.get(check), make_inputs(check, refs.seed)
    n = len(x["cases"])
    halves = {f"bytes{i}": want[f"bytes{i}"] // 2 for i in range(n)}  # the keys only
    plus = {f"bytes{i}": want[f"bytes{i}"] + 1 for i in range(n)}  # a plain wrong number
    for got in (halves, plus):
        shown = judge(check, got, want, x)
        assert not shown.passed and str(want["bytes0"]) in shown.message  # the public tier
        hidden = i18n.withhold_reference(shown)
        assert i18n.WITHHELD in hidden.message
        for lang in ("en", "zh_CN"):
            assert str(want["bytes0"]) not in i18n.message(hidden, lang)


def test_no_judge_hands_a_reference_value_to_a_message_under_another_name():
    """A reference value in a Failure's details is named `want` (or `err`), the names that
    withhold_reference withholds on hidden inputs; `expected=want[...]` showed it (mla)."""
    from autograder.core import i18n as i18n_module

    # a quoted key or a keyword argument given want[...] itself (not its shape, dtype or
    # size: the inputs' own); a local variable (`x = want[...]`) is not a detail
    pattern = re.compile(
        r"(?:[\"'](\w+)[\"']\s*:\s*|\b(\w+)=)want\[[^\]]*\](?!\.(?:shape|dtype|size|ndim))"
    )
    found = []
    for path in sorted((ROOT / "autograder" / "checks").glob("*/judge*.py")):
        for key, keyword in pattern.findall(path.read_text()):
            name = key or keyword
            if name not in i18n_module.REFERENCE_DETAILS:
                found.append(f"{path.parent.name}/{path.name}: {name}=want[...]")
    assert not found, found
