"""Every graded input depends on the seed, and each student has their own hidden seed."""

from __future__ import annotations

import pytest
import torch

from autograder.core import registry, seeds
from autograder.run.probing import make_inputs

pytestmark = pytest.mark.fast


def _leaves(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}/{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}/{i}")
    else:
        yield path, value


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("check", registry.all_checks(), ids=lambda c: c.id)
def test_every_check_draws_its_inputs_from_the_seed(check):
    """Two seeds give two different sets of inputs: nothing a student could read off the
    public fixtures and replay on the hidden tier. (A part fixed by the others, such as the
    causal mask of a drawn length, may stay the same.)"""
    a, b = dict(_leaves(make_inputs(check, 1))), dict(_leaves(make_inputs(check, 2)))
    same = a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    assert not same, f"{check.id}: its inputs are the same for every seed"


def test_student_seeds_are_private_and_stable():
    secret = seeds.new_secret()
    alice, bob = seeds.student_seed(secret, "alice"), seeds.student_seed(secret, "bob")
    assert alice != bob and alice == seeds.student_seed(secret, "alice")
    assert 0 <= alice < 2**63
    assert seeds.student_seed(seeds.new_secret(), "alice") != alice
    with pytest.raises(ValueError, match="student id"):
        seeds.student_seed(secret, "")


def test_bad_secret_file_says_what_is_expected(tmp_path):
    (tmp_path / "secret").write_text("hunter2")
    with pytest.raises(ValueError, match="at least 32 hex digits"):
        seeds.read_secret(tmp_path / "secret")
    with pytest.raises(ValueError, match="cannot read"):
        seeds.read_secret(tmp_path / "missing")


def test_a_missing_or_short_course_secret_is_refused_or_made(tmp_path):
    """The one place of the secret is course/course.toml: made (with a fresh secret) when
    missing, refused with a message saying where when present but too short."""
    secret, made = seeds.course_secret(tmp_path / "fresh")
    assert made and len(secret) >= 16
    assert seeds.course_secret(tmp_path / "fresh") == (secret, False)
    short = tmp_path / "short"
    short.mkdir()
    (short / "course.toml").write_text('[hidden]\nsecret = "abc"\n')
    with pytest.raises(seeds.SecretMissing, match=r"\[hidden\] secret"):
        seeds.course_secret(short)


def test_each_attempt_has_its_own_seed_and_a_regrade_the_same(tmp_path):
    secret = seeds.new_secret()
    first, second = (seeds.student_seed(secret, "alice", a) for a in ("1", "2"))
    assert first != second and first == seeds.student_seed(secret, "alice", "1")
    assert seeds.student_seed(secret, "alice", "1") != seeds.student_seed(secret, "bob", "1")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "attention.py").write_text("x = 1\n")
    attempt = seeds.attempt_id(tmp_path / "a")
    assert attempt == seeds.attempt_id(tmp_path / "a")  # the same files: the same attempt
    (tmp_path / "a" / "attention.py").write_text("x = 1  # again\n")
    assert seeds.attempt_id(tmp_path / "a") != attempt  # changed code: a new attempt
    (tmp_path / "a" / "link.py").symlink_to(tmp_path / "a" / "attention.py")
    changed = seeds.attempt_id(tmp_path / "a")
    (tmp_path / "a" / "link.py").unlink()
    assert seeds.attempt_id(tmp_path / "a") == changed  # links are not what was handed in


def test_no_padding_pins_an_attempt_whose_code_changed(tmp_path):
    """A hunt handed in a 64 MB file in a hidden folder beside pkg/attention.py: attempt_id
    read 64 MB at most, in a walk that entered hidden folders, so the code was digested by
    name and size only, and other code of the same size drew the same inputs. Now it
    digests what grading takes (seeds.handed_in, runner.copy_submission's walk), in full."""
    (tmp_path / ".a").mkdir()
    (tmp_path / ".a" / "pad").write_bytes(b"\0" * (seeds.MAX_BYTES + (14 << 20)))
    (tmp_path / "pkg").mkdir()
    code = tmp_path / "pkg" / "attention.py"
    code.write_text("x = 1\n")
    first = seeds.attempt_id(tmp_path)
    code.write_text("x = 2\n")  # the same size, other code
    assert seeds.attempt_id(tmp_path) != first
    assert [p.name for p in seeds.handed_in(tmp_path)] == ["attention.py"]
    # past the caps nothing is graded, and nothing more is digested
    (tmp_path / "big").write_bytes(b"\0" * (seeds.MAX_BYTES + 1))
    assert list(seeds.handed_in(tmp_path)) == []


def test_hidden_feedback_withholds_the_reference_values():
    """On hidden inputs the failure keeps the student's own value and the index, and loses
    the reference's value and the error from it, in English and in every language."""
    from autograder.core import i18n
    from autograder.core.check import WRONG_VALUES, Failure, Result

    check = registry.all_checks()[0]
    failure = Failure(
        WRONG_VALUES, what="the output", err=0.4934, index=(0, 2), got=0.1, want=0.5934
    )
    shown = Result.of(check, "failed", failure)
    assert "0.5934" in shown.message  # public inputs: the reference value helps
    hidden = i18n.withhold_reference(shown)
    assert "0.5934" not in hidden.message and "0.493" not in hidden.message
    assert "yours 0.1" in hidden.message and "(0, 2)" in hidden.message
    assert i18n.WITHHELD in hidden.message
    assert set(hidden.details) == set(shown.details)
    for lang, word in (("en", i18n.WITHHELD), ("zh_CN", "（隐藏）")):
        text = i18n.message(hidden, lang)
        assert "0.5934" not in text and "0.1" in text and word in text, text
