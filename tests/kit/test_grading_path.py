"""`make grade`'s own path (CLI -> pytest -> plugin -> engine), end to end, in a subprocess."""

import ast
import json

import pytest
from conftest import SOLUTIONS, grade_cli, grade_folder, run_cli, submission_with

from autograder.core import registry
from autograder.run import submission


def test_solutions_get_full_marks(tmp_path):
    proc, data = grade_cli(SOLUTIONS, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["score"] == data["max_score"] > 0
    assert all(t["status"] == "passed" for t in data["tests"])
    # make grade leaves the training check out and says so, with the command that runs it.
    assert "all graded checks passed" in proc.stdout
    assert "Left out: gpt: train" in proc.stdout and "`make grade-train`" in proc.stdout
    assert len(data["tests"]) == len([c for c in registry.all_checks() if not c.slow])


def test_stubs_get_zero_cleanly(tmp_path, pristine_stubs):
    proc, data = grade_cli(pristine_stubs, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["score"] == 0
    assert all(t["tags"] == ["not-attempted"] for t in data["tests"]), data["tests"]
    assert "TODO" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def one_module(tmp_path_factory):
    """`make grade EX=masks` on the solutions, once for the tests that read it."""
    return grade_cli(SOLUTIONS, tmp_path_factory.mktemp("ex"), "--ex", "masks")


def test_results_json_has_gradescopes_fields(one_module):
    _, data = one_module
    assert set(data) >= {"score", "tests"}
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output"}
        assert test["name"].startswith("masks: ")
        assert test["status"] in ("passed", "failed")


def test_ex_grades_one_module(one_module):
    proc, data = one_module
    assert proc.returncode == 0
    assert {t["name"].split(":")[0] for t in data["tests"]} == {"masks"}


def test_syntax_error_costs_only_its_own_module(tmp_path):
    folder = submission_with(tmp_path, {"attention": "def broken(:\n    pass\n"})
    proc, data = grade_cli(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    by_module = {}
    for t in data["tests"]:
        by_module.setdefault(t["name"].split(":")[0], []).append(t)
    assert all(t["score"] == 0 and "import-error" in t["tags"] for t in by_module["attention"])
    assert "SyntaxError on line 1" in by_module["attention"][0]["output"]
    assert all(t["status"] == "passed" for t in by_module["masks"])


def test_exception_at_import_is_reported(tmp_path):
    source = (SOLUTIONS / "masks.py").read_text() + "\nraise RuntimeError('oops at import')\n"
    folder = submission_with(tmp_path, {"masks": source})
    proc, data = grade_cli(folder, tmp_path, "--ex", "masks")
    assert proc.returncode == 0
    assert all("RuntimeError: oops at import" in t["output"] for t in data["tests"])


def test_hanging_code_times_out_and_costs_only_that_check(tmp_path):
    source = (
        (SOLUTIONS / "masks.py")
        .read_text()
        .replace(
            "def padding_mask(lengths, S):\n",
            "def padding_mask(lengths, S):\n    while True:\n        pass\n",
            1,
        )
    )
    folder = submission_with(tmp_path, {"masks": source})
    proc, data = grade_cli(folder, tmp_path, "--ex", "masks", "--cpu-limit", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status = {t["name"]: t for t in data["tests"]}
    timed_out = [n for n, t in status.items() if "timeout" in t["tags"]]
    assert [n.split(": ", 1)[1] for n in timed_out] == [registry.find("masks.padding").title]
    assert sum(t["score"] for t in data["tests"]) == data["max_score"] - 2
    assert "did not finish within 2 CPU seconds" in proc.stdout


def test_crash_names_the_line(tmp_path):
    source = (
        (SOLUTIONS / "masks.py")
        .read_text()
        .replace(
            "    lengths = torch.as_tensor(lengths)\n",
            "    lengths = torch.as_tensor(lengths)\n    lengths = lengths[5]\n",
            1,
        )
    )
    folder = submission_with(tmp_path, {"masks": source})
    _, data = grade_cli(folder, tmp_path, "--ex", "masks")
    crash = [t for t in data["tests"] if "crash" in t["tags"]]
    assert crash and "IndexError" in crash[0]["output"]
    assert "masks.py, line" in crash[0]["output"] and "lengths[5]" in crash[0]["output"]


def test_a_raise_of_the_students_own_on_allowed_inputs_is_named_not_a_crash(tmp_path):
    """window <= 1 for window < 1: the student's own ValueError on window == 1, which the
    docstring allows, read as a crash with a hint about tensor shapes. The checks that pass
    invalid windows on purpose judge the ValueError as before."""
    source = (SOLUTIONS / "masks.py").read_text().replace("if window < 1:", "if window <= 1:")
    assert "if window <= 1:" in source
    folder = submission_with(tmp_path, {"masks": source})
    _, data = grade_cli(folder, tmp_path, "--ex", "masks")
    own = [t for t in data["tests"] if "own-check-refused" in t["tags"]]
    assert own and not [t for t in data["tests"] if "crash" in t["tags"]], data["tests"]
    assert "ValueError" in own[0]["output"]
    assert "masks.py, line" in own[0]["output"] and "which the docstring allows" in own[0]["output"]
    rejects = [t for t in data["tests"] if "window < 1 with ValueError" in t["name"]]
    assert rejects and rejects[0]["status"] == "passed"


def test_bad_arguments_get_clear_errors(tmp_path):
    proc = run_cli("grade", "--submission", str(tmp_path / "nowhere"))
    assert proc.returncode == 2 and "is not a folder" in proc.stderr
    proc = run_cli("grade", "--submission", str(SOLUTIONS), "--ex", "atention")
    assert proc.returncode == 2 and "unknown exercise module 'atention'" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run_cli("grade", "--submission", str(tmp_path / "empty"))
    assert proc.returncode == 2 and "holds none of the exercise modules" in proc.stderr
    proc = run_cli("grade", "--submission", str(SOLUTIONS), "--device", "tpu")
    assert proc.returncode == 2 and "expected cpu or cuda" in proc.stderr


def test_missing_module_file_costs_only_that_module(tmp_path):
    folder = submission_with(tmp_path)
    (folder / "masks.py").unlink()
    proc, data = grade_cli(folder, tmp_path)
    assert proc.returncode == 0
    masks = [t for t in data["tests"] if t["name"].startswith("masks:")]
    assert masks and all("the file is missing" in t["output"] for t in masks)
    assert json.dumps(data).count('"passed"') == len(data["tests"]) - len(masks)


def test_a_module_file_under_another_name_is_named_in_the_feedback(tmp_path):
    """Attention.py, a download's "multihead (1).py", Windows's hidden "positional.py.txt":
    the grader reads only the exact name, and says which file to rename (not "create it")."""
    folder = submission_with(tmp_path)
    renamed = {"attention": "Attention.py", "multihead": "multihead (1).py"}
    renamed["positional"] = "positional.py.txt"
    for module, name in renamed.items():
        (folder / f"{module}.py").rename(folder / name)
    wanted = "attention,masks,multihead,positional"
    proc, data = grade_cli(folder, tmp_path, "--ex", wanted)
    assert proc.returncode == 0, proc.stderr
    for module, name in renamed.items():
        tests = [t for t in data["tests"] if t["name"].startswith(f"{module}:")]
        assert tests and all(t["status"] == "failed" and t["score"] == 0 for t in tests)
        assert all(t["tags"] == ["misnamed-file"] for t in tests), tests[0]
        assert f"but {folder.name}/ has {name}, so" in tests[0]["output"]
    assert "[misnamed-file]" in proc.stdout and "the file is missing, so" not in proc.stdout
    masks = [t for t in data["tests"] if t["name"].startswith("masks:")]
    assert masks and all(t["status"] == "passed" for t in masks)

    alone = run_cli("grade", "--submission", str(folder), "--ex", "attention,multihead")
    assert alone.returncode == 2 and "Traceback" not in alone.stderr
    assert "rename 'Attention.py' to attention.py, 'multihead (1).py' to multihead.py" in (
        alone.stderr
    )


def test_near_misses_names_what_looks_meant_as_the_module_and_nothing_else(tmp_path):
    meant = ["Attention.py", "attention (2).py", "attention - Copy.py", "attention copy.py"]
    meant += ["attention.py.txt", "ATTENTION.PY.TXT", "attention.py.py", " attention .py"]
    other = ["attentions.py", "attention_old.py", "attention.ipynb", "my attention.py"]
    other += ["attention.py"]  # the module's own name is no near miss
    for name in meant + other:
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "Attention (3).py").mkdir()  # a folder, not a file
    assert sorted(submission.near_misses(tmp_path, "attention")) == sorted(meant)
    assert submission.near_misses(tmp_path, "masks") == []
    assert submission.near_misses(tmp_path / "nowhere", "attention") == []


def test_sibling_modules_imported_as_top_level_modules_grade_as_relative_imports(tmp_path):
    """`from attention import f` / `import attention` (code written to run from its own
    folder, `python multihead.py`) failed to import: 0 / 20 for correct code. Now it gets
    what `from .attention import f` gets: the trusted stand-in, so attention's bug costs
    points in attention only. So does `from assignments.attention import f`, which got the
    kit's stub in make grade and no module at all in the sandbox."""
    modules = ("attention", "multihead", "gqa", "kvcache")
    solution = {m: (SOLUTIONS / f"{m}.py").read_text() for m in modules}
    relative = "from .attention import scaled_dot_product_attention"
    assert relative in solution["multihead"] and relative in solution["gqa"]
    assert relative in solution["kvcache"]
    folder = submission_with(
        tmp_path,
        {
            "attention": solution["attention"].replace("/ math.sqrt(d_k)", "/ d_k"),
            "multihead": solution["multihead"].replace(relative, "from attention import *"),
            "gqa": solution["gqa"].replace(
                relative,
                "import attention as A\n"
                "scaled_dot_product_attention = A.scaled_dot_product_attention",
            ),
            # the kit's folder as a package, as an IDE writes it: the submission's own
            # package wherever it is graded (it was the kit's stubs, or no module at all)
            "kvcache": solution["kvcache"].replace(
                relative, relative.replace(".attention", "assignments.attention")
            ),
        },
    )
    proc, data = grade_cli(folder, tmp_path, "--ex", ",".join(modules))
    assert proc.returncode == 0, proc.stderr
    score: dict[str, float] = {}
    for t in data["tests"]:
        module = t["name"].split(":")[0]
        score[module] = score.get(module, 0) + t["score"]
    assert score["attention"] < 20 and "[wrong-scale]" in proc.stdout
    assert (score["multihead"], score["gqa"], score["kvcache"]) == (20, 15, 13), proc.stdout


def test_a_students_own_helper_imported_by_name_is_their_file(tmp_path):
    """A helper file or package of the student's own beside the exercise modules, imported
    as code run from its folder writes it (`import helpers`, `from utils.scaling import
    scale`), failed to import: 0 / 20 for correct code. It is the student's file (its bug
    costs points where it is used), and a name the standard library has stays the library's;
    a folder of the kit without __init__.py (tools/, on the path of `make grade`, run from the
    kit's folder) does not take a helper's name."""
    attention = (SOLUTIONS / "attention.py").read_text()
    assert "import math\n" in attention and "/ math.sqrt(d_k)" in attention
    uses = attention.replace(
        "import math\n", "import math\nimport helpers\nimport string\nimport tools\n", 1
    )
    uses = uses.replace(
        "/ math.sqrt(d_k)", "* helpers.scale(d_k) * len(string.digits) / 10 * tools.ONE"
    )
    multihead = (SOLUTIONS / "multihead.py").read_text()
    relative = "from .attention import scaled_dot_product_attention"
    assert relative in multihead
    multihead = multihead.replace(
        relative, f"{relative}\nfrom utils.scaling import NAME\nassert NAME == 'own'"
    )
    scores = {}
    for name, helper in (("right", "1.0 / math.sqrt(d)"), ("wrong", "1.0 / d")):
        folder = submission_with(tmp_path / name, {"attention": uses, "multihead": multihead})
        (folder / "helpers.py").write_text(f"import math\n\ndef scale(d):\n    return {helper}\n")
        (folder / "string.py").write_text("digits = 'not the standard library'\n")
        (folder / "tools.py").write_text("ONE = 1.0\n")  # the kit's tools/ has no __init__
        (folder / "utils").mkdir()
        (folder / "utils" / "__init__.py").write_text("from . import scaling\n")
        (folder / "utils" / "scaling.py").write_text("NAME = 'own'\n")
        results = grade_folder(folder, ["attention", "multihead"])
        scores[name] = {
            m: sum(r.score for r in results if r.check_id.startswith(f"{m}."))
            for m in ("attention", "multihead")
        }
        if name == "wrong":
            assert "wrong-scale" in {r.misconception for r in results}
    assert scores["right"] == {"attention": 20, "multihead": 20}, scores
    assert scores["wrong"]["attention"] < 20 and scores["wrong"]["multihead"] == 20, scores


def test_a_name_a_student_added_to_one_module_can_be_imported_by_another(tmp_path):
    """Each module is graded with the trusted versions of the others, which lacked what a
    student adds: `from .attention import attend_values` (a helper function of their own in
    attention.py) failed to import, 0 / 20 for a correct multihead (and in the student copy,
    which ships fewer stand-ins, it passed locally and failed in official grading). A name
    the stand-in lacks is now the student's own; the exercises stay the trusted ones (a
    wrong attention costs points in attention only). A helper folder without __init__.py
    (`common/ops.py`, imported as `common.ops`) is the student's too."""
    attention = (SOLUTIONS / "attention.py").read_text()
    wrong = attention.replace("/ math.sqrt(d_k)", "/ d_k")
    assert wrong != attention and "import torch\n" in wrong
    wrong = wrong.replace("import torch\n", "import torch\n\nfrom .masks import BLOCKED\n", 1)
    wrong += "\n\ndef attend_values(weights, v):\n    'own'\n    return weights @ v\n"
    multihead = (SOLUTIONS / "multihead.py").read_text()
    relative = "from .attention import scaled_dot_product_attention"
    assert relative in multihead
    multihead = multihead.replace(
        relative,
        f"{relative}, attend_values\nfrom common.ops import mix\n"
        "assert attend_values.__doc__ == 'own' and mix(1) == 1",
    )
    masks = (SOLUTIONS / "masks.py").read_text() + "\n\nBLOCKED = True\n"
    folder = submission_with(tmp_path, {"attention": wrong, "multihead": multihead, "masks": masks})
    (folder / "common").mkdir()
    (folder / "common" / "ops.py").write_text("def mix(x):\n    return x\n")
    results = grade_folder(folder, ["attention", "multihead", "masks"])
    score = {
        m: sum(r.score for r in results if r.check_id.startswith(f"{m}."))
        for m in ("attention", "multihead", "masks")
    }
    assert "wrong-scale" in {r.misconception for r in results}  # attention's own mistake
    assert score["attention"] < 20 and (score["multihead"], score["masks"]) == (20, 10), score


def test_sibling_imports_are_read_in_every_spelling():
    code = (
        "from .attention import f\nfrom masks import causal_mask\nimport gpt, os\n"
        "import torch.nn\nfrom rotary.x import y\nfrom . import blocks\nfrom typing import Any\n"
    )
    assert submission.sibling_imports(ast.parse(code)) == {
        "attention",
        "masks",
        "gpt",
        "rotary",
        "blocks",
    }


def test_solutions_get_full_marks_on_the_hidden_tier():
    """Fresh inputs from another seed, references computed from solutions/ (no fixtures)."""
    from autograder.run.engine import grade
    from autograder.run.submission import Submission

    results = grade(Submission(SOLUTIONS), seed=424242)
    assert results and all(r.passed for r in results), [
        (r.check_id, r.message) for r in results if not r.passed
    ]


def test_the_judge_loop_runs_on_one_torch_thread(monkeypatch):
    """The grading process only judges (small tensors) while its workers run the student's
    code: on one torch thread (no idle intra-op thread spinning on their cores), then as
    before. make grade, the warm grader and make watch judge in engine.grade_module."""
    import torch

    from autograder.run import engine
    from autograder.run.submission import Submission

    seen = []
    judge = engine.judge

    def counting(*args):
        seen.append(torch.get_num_threads())
        return judge(*args)

    monkeypatch.setattr(engine, "judge", counting)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        results = engine.grade(Submission(SOLUTIONS), ["masks"])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert seen and set(seen) == {1}, seen
    assert results and all(r.passed for r in results)
