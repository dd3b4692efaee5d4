"""One source of truth: stubs and fixtures are what solutions/ generates, never stale."""

import pytest
import torch
from conftest import ROOT, SOLUTIONS, student_edited_stubs

from autograder.authoring import stubgen
from autograder.core import fixtures, registry
from autograder.core.verdicts import close


@pytest.mark.fast
def test_committed_stubs_match_generation():
    generated = stubgen.generate(SOLUTIONS)
    committed = {p.name: p.read_text() for p in (ROOT / "assignments").glob("*.py")}
    assert set(committed) == set(generated), "run `make stubs`"
    edited = student_edited_stubs()
    for name, text in generated.items():
        if name not in edited:
            assert committed[name] == text, f"assignments/{name} is stale: run `make stubs`"
    if edited:
        pytest.skip(
            f"assignments/ holds your own work ({', '.join(edited)}): this kit test checks "
            "the committed, untouched stubs, so it skipped those files; nothing is wrong with "
            "your work. (CI, with CI=1, checks every file.)"
        )


def test_a_students_started_file_is_told_apart_from_a_stale_stub(tmp_path, monkeypatch):
    import conftest

    generated = stubgen.generate(SOLUTIONS)
    folder = tmp_path / "assignments"
    folder.mkdir()
    for name, text in generated.items():
        (folder / name).write_text(text)
    masks = generated["masks.py"].replace(
        '    raise NotImplementedError("causal_mask: not attempted yet")',
        "    return torch.ones(L, L, dtype=torch.bool).triu(1)",
    )
    assert masks != generated["masks.py"]
    (folder / "masks.py").write_text(masks)  # a student began causal_mask
    (folder / "attention.py").write_text(generated["attention.py"] + "# stale\n")
    monkeypatch.setattr(conftest, "ROOT", tmp_path)
    monkeypatch.delenv("CI", raising=False)
    assert student_edited_stubs() == ["masks.py"]  # attention.py is stale, not a student's
    monkeypatch.setenv("CI", "1")
    assert student_edited_stubs() == []


@pytest.mark.fast
def test_every_stub_raises_not_implemented_naming_its_exercise():
    text = stubgen.generate(SOLUTIONS)["attention.py"]
    assert "### BEGIN SOLUTION" not in text and "rows sum to 1\n" not in text
    assert 'NotImplementedError("scaled_dot_product_attention: not attempted' in text
    assert 'NotImplementedError("attention_with_bias: not attempted' in text
    assert "TODO (scaled_dot_product_attention)" in text


@pytest.mark.fast
def test_stubgen_rejects_broken_markers():
    for bad in (
        "### BEGIN SOLUTION\nx = 1\n",
        "x = 1\n### END SOLUTION\n",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n",
    ):
        with pytest.raises(ValueError):
            stubgen.stub_source(bad)


@pytest.mark.fast
def test_stub_names_method_and_keeps_indentation():
    src = (
        "class A:\n    def forward(self, x):\n        # TODO\n        ### BEGIN SOLUTION\n"
        "        return x\n        ### END SOLUTION\n"
    )
    stub = stubgen.stub_source(src, "m.py")
    assert '        raise NotImplementedError("forward: not attempted yet' in stub


@pytest.mark.parametrize("module", registry.modules())
def test_fixtures_are_fresh(module):
    meta = fixtures.manifest(module)
    assert meta["seed"] == fixtures.PUBLIC_SEED
    assert {k: meta[k] for k in ("solution_sha256", "checks_sha256")} == fixtures.source_hashes(
        module
    ), "solutions/ or the checks changed: run `make fixtures`"
    stored, fresh = fixtures.load(module), fixtures.compute(module)
    assert stored.keys() == fresh.keys()
    for slug in fresh:
        assert stored[slug].keys() == fresh[slug].keys()
        for key, value in fresh[slug].items():
            if isinstance(value, torch.Tensor):
                # The tolerance table, never bit equality: another CPU may round the last
                # float32 bit differently (docs/principles.md, principle 11). Exact for
                # bool and integers.
                assert value.dtype == stored[slug][key].dtype
                old = stored[slug][key]
                nan = torch.isnan(value) if value.is_floating_point() else None
                if nan is not None and nan.any():  # a replayed mistake's NaN rows
                    assert torch.equal(torch.isnan(old), nan), f"{module}: {slug}/{key} is stale"
                    old, value = old.masked_fill(nan, 0.0), value.masked_fill(nan, 0.0)
                assert close(old, value), f"{module}: {slug}/{key} is stale"
            else:
                assert stored[slug][key] == value


def test_fixture_tampering_is_detected(tmp_path, monkeypatch):
    for name in ("masks.npz", "masks.json"):
        (tmp_path / name).write_bytes((fixtures.FIXTURE_DIR / name).read_bytes())
    monkeypatch.setattr(fixtures, "FIXTURE_DIR", tmp_path)
    data = bytearray((tmp_path / "masks.npz").read_bytes())
    data[-30] ^= 0xFF
    (tmp_path / "masks.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="make fixtures"):
        fixtures.load("masks")


def test_fixtures_are_decoded_once_and_each_load_gets_tensors_of_its_own(tmp_path, monkeypatch):
    """fixtures.load decodes a file once per process, by its hash (a process grades many
    times: the warm grader's forks, make dist's recording): a grading that changes its
    references in place changes no later grading's, and another file is read afresh."""
    first = fixtures.load("masks")
    slug, key = next(
        (s, k)
        for s, o in first.items()
        for k, v in o.items()
        if isinstance(v, torch.Tensor) and v.count_nonzero() > 0
    )
    kept = first[slug][key].clone()
    first[slug][key].zero_()  # a verdict that changes what it was given
    assert torch.equal(fixtures.load("masks")[slug][key], kept)
    attention = fixtures.load("attention").keys()
    for suffix in (".npz", ".json"):  # attention's files under masks' name
        (tmp_path / f"masks{suffix}").write_bytes(
            (fixtures.FIXTURE_DIR / f"attention{suffix}").read_bytes()
        )
    monkeypatch.setattr(fixtures, "FIXTURE_DIR", tmp_path)
    assert fixtures.load("masks").keys() == attention != first.keys()


def test_fixtures_load_without_pickle():
    import numpy as np

    for module in registry.modules():
        with np.load(fixtures.FIXTURE_DIR / f"{module}.npz", allow_pickle=False) as data:
            assert all(data[k].dtype != object for k in data.files)


def test_fixtures_rewrite_only_what_changed(tmp_path, monkeypatch):
    """`make fixtures` leaves a module whose solution and probe side did not change alone,
    and a changed check title or point value (judge side) needs no regeneration."""
    from autograder.channels import cli

    assert fixtures.is_fresh("masks")
    before = (fixtures.FIXTURE_DIR / "masks.npz").stat().st_mtime_ns
    assert cli.main(["fixtures", "--module", "masks"]) == 0
    assert (fixtures.FIXTURE_DIR / "masks.npz").stat().st_mtime_ns == before
    # masks keeps no replays with the reference: its judge is not hashed
    assert not any(c.replays for c in registry.checks_of("masks"))
    probe_side = registry.probe_files_of("masks")
    assert probe_side and all(f.name.startswith("probe") for f in probe_side)
    trusted = sorted(fixtures.TRUSTED.glob("*.py"))
    expected = fixtures.sha256(b"".join(f.read_bytes() for f in [*probe_side, *trusted]))
    assert fixtures.source_hashes("masks")["checks_sha256"] == expected
