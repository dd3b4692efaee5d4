"""nbgrader delivery: the course notebooks and one whole cycle, with nbgrader itself.

One course directory and one fresh sqlite gradebook for the module: course -> release ->
collect (zip_collect) -> autograde -> feedback -> export, on the attention and masks
assignments (the Makefile's targets call the same functions), for four students:

    alice  submits the source notebooks (the solutions)             full marks
    bob    submits the released notebooks untouched                 zero
    carol  (one .zip) a classic bug in attention; a masks answer    partial credit, the bug's
           that is correct but makes PyTorch write a warning        message in the feedback;
                                                                    masks: full marks
    dave   deleted a test cell and duplicated a solution cell       graded sensibly
           (attention); deleted the padding_mask cell (masks)
"""

from __future__ import annotations

import ast
import copy
import csv
import html
import os
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import KIT, SOLUTIONS, grade_cli, grade_folder, submission_with

from autograder import checks, course, fixtures, notebook
from autograder.checks.attention.judge import NO_SCALING

MODULES = ["attention", "masks"]  # the full cycle runs on these; every module's notebook runs
MUTANT = KIT / "mutants" / "attention" / "no_scaling.py"
SEED = "424242"


# --------------------------------------------------------------------------- helpers


def read(path: Path):
    return nbformat.read(path, as_version=4)


def cell(nb, grade_id: str):
    found = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    assert len(found) == 1, f"{grade_id}: {len(found)} cells"
    return found[0]


def function_source(path: Path, name: str) -> str:
    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise AssertionError(f"{path} has no function {name}")


def answered(root: Path, module: str, replace: dict[str, str] | None = None):
    """The released notebook with every solution cell filled in from the source notebook,
    then the cells in `replace` ({grade_id: source}) replaced: what a student hands in."""
    release = read(root / "release" / module / f"{module}.ipynb")
    source = read(root / "source" / module / f"{module}.ipynb")
    for c in release.cells:
        meta = c.metadata.get("nbgrader", {})
        if meta.get("solution"):
            c.source = (replace or {}).get(meta["grade_id"], cell(source, meta["grade_id"]).source)
    return release


def text_of_html(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def outputs_text(nb) -> str:
    parts = []
    for c in nb.cells:
        for out in c.get("outputs", []):
            parts.append(out.get("text", "") + out.get("evalue", ""))
    return "\n".join(parts)


# --------------------------------------------------------------------------- the cycle


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    course.write_course(root, MODULES)
    course.release(root)

    # Carol: forgets the 1/√d_k; her padding_mask copies a tensor with torch.tensor(tensor),
    # correct, but PyTorch warns about it on stderr.
    buggy = function_source(MUTANT, "scaled_dot_product_attention")
    padding = cell(read(root / "source" / "masks" / "masks.ipynb"), "padding_mask").source
    warns = padding.replace(
        "    lengths = torch.as_tensor(lengths)\n",
        "    lengths = torch.tensor(torch.as_tensor(lengths))  # PyTorch: UserWarning\n",
    )
    assert warns != padding

    # Dave: deletes one test cell and duplicates a solution cell (attention); deletes the
    # padding_mask cell (masks).
    dave_attention = answered(root, "attention")
    dave_attention.cells.remove(cell(dave_attention, "test-reference"))
    bias = cell(dave_attention, "attention_with_bias")
    duplicate = copy.deepcopy(bias)
    duplicate.id = "copy-of-attention-with-bias"  # Jupyter gives a copied cell a new id
    dave_attention.cells.insert(dave_attention.cells.index(bias), duplicate)
    dave_masks = answered(root, "masks")
    dave_masks.cells.remove(cell(dave_masks, "padding_mask"))

    downloads = {
        "attention": {
            "alice_attention.ipynb": read(root / "source" / "attention" / "attention.ipynb"),
            "bob_attention.ipynb": read(root / "release" / "attention" / "attention.ipynb"),
            "dave_attention.ipynb": dave_attention,
            "carol.zip": answered(root, "attention", {"scaled_dot_product_attention": buggy}),
        },
        "masks": {
            "alice_masks.ipynb": read(root / "source" / "masks" / "masks.ipynb"),
            "bob_masks.ipynb": read(root / "release" / "masks" / "masks.ipynb"),
            "dave_masks.ipynb": dave_masks,
            "carol.zip": answered(root, "masks", {"padding_mask": warns}),
        },
    }
    for assignment, files in downloads.items():
        archive = root / "downloaded" / assignment / "archive"
        archive.mkdir(parents=True)
        for name, nb in files.items():
            if name.endswith(".zip"):  # one archive per student, holding the notebook
                with zipfile.ZipFile(archive / name, "w") as z:
                    z.writestr(f"{assignment}.ipynb", nbformat.writes(nb))
            else:
                nbformat.write(nb, archive / name)

    course.collect(root)
    course.autograde(root)
    course.feedback(root)
    grades = course.export(root)
    scores = {}
    with grades.open() as f:
        for row in csv.DictReader(f):
            scores[row["student_id"], row["assignment"]] = (
                float(row["score"]),
                float(row["max_score"]),
            )
    return root, scores


def max_points(module: str) -> float:
    return sum(c.points for c in checks.checks_of(module))


def test_collect_put_every_submission_in_place(cycle):
    root, _ = cycle
    for student in ("alice", "bob", "carol", "dave"):
        for module in MODULES:
            assert (root / "submitted" / student / module / f"{module}.ipynb").is_file()


def test_solutions_get_full_marks(cycle):
    _, scores = cycle
    for module in MODULES:
        assert scores["alice", module] == (max_points(module), max_points(module))


def test_untouched_release_gets_zero(cycle):
    root, scores = cycle
    for module in MODULES:
        assert scores["bob", module] == (0.0, max_points(module))
    feedback = text_of_html(root / "feedback" / "bob" / "attention" / "attention.html")
    assert "[not-attempted] scaled_dot_product_attention is not attempted yet" in feedback


def test_classic_bug_gets_partial_credit_and_its_message(cycle, tmp_path):
    root, scores = cycle
    score, total = scores["carol", "attention"]
    # The same code graded by the engine `make grade` uses gives the same points.
    mutant = submission_with(tmp_path, {"attention": MUTANT.read_text()})
    expected = sum(r.score for r in grade_folder(mutant, ["attention"]))
    assert 0 < score == expected < total
    feedback = text_of_html(root / "feedback" / "carol" / "attention" / "attention.html")
    assert f"[no-scaling] {NO_SCALING.message}" in feedback
    assert NO_SCALING.hint.split(".")[0] in feedback


def test_pytorch_warning_on_stderr_keeps_the_points(cycle):
    root, scores = cycle
    assert scores["carol", "masks"] == (max_points("masks"), max_points("masks"))
    graded = read(root / "autograded" / "carol" / "masks" / "masks.ipynb")
    padding = cell(graded, "test-padding")
    text = "".join(o.get("text", "") for o in padding.outputs)
    assert "UserWarning: To copy construct from a tensor" in text  # the warning did happen
    assert all(o.get("name") != "stderr" for o in padding.outputs)


def test_deleted_and_duplicated_cells_are_graded_sensibly(cycle):
    root, scores = cycle
    # The deleted test cell is put back and graded; the duplicated solution cell is harmless.
    assert scores["dave", "attention"] == (max_points("attention"), max_points("attention"))
    graded = read(root / "autograded" / "dave" / "attention" / "attention.ipynb")
    assert "was missing from the submission" in cell(graded, "test-reference").source
    # The deleted solution cell costs exactly its own checks, with a message that says why.
    padding = sum(c.points for c in checks.checks_of("masks") if c.exercise == "padding_mask")
    assert scores["dave", "masks"] == (max_points("masks") - padding, max_points("masks"))
    feedback = text_of_html(root / "feedback" / "dave" / "masks" / "masks.html")
    assert "padding_mask is not defined in this notebook" in feedback


def test_nbgrader_points_equal_make_grade_points(cycle, tmp_path):
    _, scores = cycle
    proc, data = grade_cli(SOLUTIONS, tmp_path, "--ex", ",".join(MODULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for module in MODULES:
        tests = [t for t in data["tests"] if t["name"].startswith(f"{module}: ")]
        total = sum(t["max_score"] for t in tests)
        got = sum(t["score"] for t in tests)
        assert scores["alice", module] == (got, total)


def test_release_holds_no_solution_and_no_hidden_test(cycle):
    root, _ = cycle
    seed = (root / notebook.SEED_FILE).read_text().strip()
    for module in MODULES:
        text = (root / "release" / module / f"{module}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "HIDDEN" not in text
        assert "hidden=True" not in text and seed not in text
        assert "keepdim=True), 0.0)  # NaN rows -> 0" not in text  # a solution line
        assert course.CODE_STUB.split("(")[0] in text


# --------------------------------------------------------------------------- the notebooks


def test_each_check_is_one_locked_test_cell_with_its_points():
    for module in course.course_modules():
        nb = course.notebook(module)
        ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
        assert len(ids) == len(set(ids))
        for check in checks.checks_of(module):
            meta = cell(nb, f"test-{check.slug}").metadata["nbgrader"]
            assert meta["grade"] and meta["locked"] and not meta["solution"]
            assert meta["schema_version"] == 3 and meta["points"] == check.points
            source = cell(nb, f"test-{check.slug}").source
            assert f'grade("{check.id}", globals())' in source
            assert f'grade("{check.id}", globals(), hidden=True)' in source


def test_solution_cells_carry_the_regions_of_the_py_source():
    def regions(text):
        return re.findall(r"### BEGIN SOLUTION\n.*?### END SOLUTION", text, flags=re.S)

    for module in course.course_modules():
        nb = course.notebook(module)
        cells = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert regions("\n".join(cells)) == regions((SOLUTIONS / f"{module}.py").read_text())


def _fixtures_fresh(module: str) -> bool:
    try:
        meta = fixtures.manifest(module)
    except OSError:
        return False
    return {k: meta.get(k) for k in ("solution_sha256", "checks_sha256")} == (
        fixtures.source_hashes(module)
    )


@pytest.mark.parametrize("module", checks.modules())
def test_source_notebook_runs_top_to_bottom(module, tmp_path, monkeypatch):
    """Every module's notebook, with the solutions, runs top to bottom. attention and masks
    run every check, public and hidden; the other modules (skipped while their fixtures are
    stale: a module in progress) run their first check only, to keep `make test` quick."""
    from nbclient import NotebookClient

    if module not in course.course_modules():
        pytest.skip(f"solutions/{module}.py is missing")
    if module not in MODULES and not _fixtures_fresh(module):
        pytest.skip(f"{module}: its fixtures are missing or stale (module in progress)")
    nb = course.notebook(module)
    hidden = module in MODULES
    graded = checks.checks_of(module)
    if not hidden:  # every cell but the test cells, and the first check's public tier
        graded = graded[:1]
        first = f"test-{graded[0].slug}"
        for c in nb.cells:
            if c.metadata.get("nbgrader", {}).get("grade"):
                c.source = c.source.split("### BEGIN HIDDEN")[0] if c.id == first else ""
    for name, value in course.kernel_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(notebook.SEED_VARIABLE, SEED)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    text = outputs_text(nb)
    for check in graded:
        assert f"PASS  {check.name}: " in text
        if hidden:
            assert f"PASS  {check.name} (hidden inputs): " in text


# --------------------------------------------------------------------------- the runner


def _namespace(source: str, filename: str) -> dict:
    namespace = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_grade_swaps_in_trusted_code_for_other_modules(tmp_path):
    # A masks namespace whose causal_mask calls this namespace's (broken) attention.
    source = (SOLUTIONS / "masks.py").read_text() + (
        "\n\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    raise RuntimeError('the student attention ran')\n\n"
        "_causal_mask = causal_mask\n\n"
        "def causal_mask(L, device=None):\n"
        "    q = torch.zeros(1, L, 2)\n"
        "    scaled_dot_product_attention(q, q, q)\n"
        "    return _causal_mask(L, device)\n"
    )
    namespace = _namespace(source, str(tmp_path / "cell.py"))
    broken = namespace["scaled_dot_product_attention"]
    assert notebook.run("masks.causal", namespace).passed
    assert namespace["scaled_dot_product_attention"] is broken  # put back afterwards


def test_grade_reports_not_attempted_and_raises_with_the_hint(tmp_path):
    stub = course.CODE_STUB
    source = (
        "import torch\n\ndef causal_mask(L, device=None):\n    " + stub + "\n\n"
        "def padding_mask(lengths, S):\n    " + stub + "\n"
    )
    namespace = _namespace(source, str(tmp_path / "cell.py"))
    assert notebook.run("masks.causal", namespace).status == "not attempted"
    with pytest.raises(AssertionError, match=r"\[not-attempted\] causal_mask is not attempted"):
        notebook.grade("masks.causal", namespace)
    with pytest.raises(AssertionError, match="sliding_window_mask is not defined"):
        notebook.grade("masks.window", namespace)


def test_hidden_tier_needs_the_seed_and_draws_fresh_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(notebook.SEED_VARIABLE, raising=False)
    namespace = _namespace((SOLUTIONS / "attention.py").read_text(), str(tmp_path / "c.py"))
    with pytest.raises(RuntimeError, match="instructor"):
        notebook.run("attention.reference", namespace, hidden=True)
    monkeypatch.setenv(notebook.SEED_VARIABLE, SEED)
    assert notebook.run("attention.reference", namespace, hidden=True).passed
    check = checks.find("attention.reference")
    hidden = notebook._hidden_reference(check, int(SEED))["out"]
    public = fixtures.load("attention")["reference"]["out"]
    assert hidden.shape == public.shape and not (hidden == public).all()


def test_cli_verbs_are_registered():
    from autograder.cli import main

    for verb in ("course", "release", "collect", "autograde", "feedback", "export"):
        with pytest.raises(SystemExit) as e:
            main([verb, "--help"])
        assert e.value.code == 0
    assert os.path.basename(sys.executable)  # the kernel runs this Python (course.kernel_env)
