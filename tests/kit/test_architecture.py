"""The check architecture (docs/principles.md, principles 2, 3, 9): probe side apart from judge
side, no import cycles, no private names across modules, one course order, every module complete."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from autograder.core import paths, registry, syllabus

pytestmark = pytest.mark.fast

PACKAGE = ROOT / "autograder"


# The kit's judge-side modules, by full name (tools/relayout.py rewrites them when files move).
JUDGE_SIDE = {
    "autograder.core.registry",
    "autograder.run.engine",
    "autograder.core.verdicts",
    "autograder.core.diagnosis",
    "autograder.core.references",
    "autograder.core.fixtures",
    "autograder.plugin",
    "autograder.feedback.report",
    "autograder.run.worker",
    "autograder.channels.batch",
    "autograder.channels.nbgrader.course",
    "autograder.notebook",
    "autograder.channels.cli",
    "autograder.core.misconception_data",
    "autograder.feedback.sinks",
    "autograder.feedback.publish",
}


def _probe_modules(module: str) -> list[str]:
    return [f"autograder.checks.{module}.{f.stem}" for f in registry.probe_files_of(module)]


@pytest.mark.parametrize("module", syllabus.MODULES)
def test_checks_are_a_probe_judge_package(module):
    folder = paths.CHECKS / module
    assert folder.is_dir(), f"autograder/checks/{module}/ is not a package yet"
    names = {f.name for f in folder.glob("*.py")}
    assert "judge.py" in names and registry.probe_files_of(module), names
    assert all(n == "__init__.py" or n.startswith(("probe", "judge")) for n in names), names
    # __init__ imports nothing: its docstring, and the first uses its probes need paid before
    # any student code (registry.warm_ups), as literal tuples of names
    init = ast.parse((folder / "__init__.py").read_text())
    other = [
        n
        for n in init.body
        if not isinstance(n, ast.Expr)
        and not (
            isinstance(n, ast.Assign)
            and [getattr(t, "id", "") for t in n.targets] in (["WARM_UP"], ["TRAIN_WARM_UP"])
            and isinstance(n.value, ast.Tuple)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.value.elts)
        )
    ]
    assert not other, f"__init__ imports nothing: {[ast.unparse(n) for n in other]}"


# A fresh interpreter imports torch first (as the sandbox's zygote does before it forks a
# child to run student code), then forks a child per module that imports that module's probe
# side and lists sys.modules: one torch import for every module instead of one each.
PROBE_SIDE_IMPORTS = r"""
import json, os, sys, traceback
import torch
found = {}
for module, probes in json.loads(sys.argv[1]).items():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            for name in probes:
                __import__(name)
            out, code = json.dumps(sorted(sys.modules)), 0
        except BaseException:
            out, code = json.dumps(traceback.format_exc()), 1
        with os.fdopen(w, "w") as f:
            f.write(out)
        os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    found[module] = json.loads(text) if status == 0 else "import failed: " + json.loads(text)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def probe_side_imports() -> dict[str, list[str] | str]:
    """{module: sys.modules after importing its probe side in a fresh process (or why the
    import failed)}: the imports happen in one interpreter that holds nothing else but torch."""
    todo = {module: _probe_modules(module) for module in syllabus.MODULES}
    out = subprocess.run(
        [sys.executable, "-c", PROBE_SIDE_IMPORTS, json.dumps(todo)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


@pytest.mark.parametrize("module", syllabus.MODULES)
def test_probe_side_imports_no_judge_code(module, probe_side_imports):
    """A fresh interpreter imports the probe side of `module`'s checks (what a process that
    runs student code imports) and finds no judge-side module, nothing of solutions/, and
    not the trusted stand-in of the module being graded."""
    probes = _probe_modules(module)
    assert probes, f"{module} has no probe side"
    loaded = probe_side_imports[module]
    assert isinstance(loaded, list), loaded
    assert set(probes) <= set(loaded)  # the child imported them
    judge_side = re.compile(r"^(solutions(\.|$)|autograder\.checks\.[a-z_]+\.judge)")
    bad = [m for m in loaded if m in JUDGE_SIDE or judge_side.match(m)]
    assert not bad, f"the probe side of {module} imports judge-side code: {bad}"
    assert f"autograder.trusted.{module}" not in loaded


def _is_module(dotted: str) -> bool:
    base = ROOT / dotted.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path):
    """(module imported, at top level?, private names taken) for each import in `path`."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.rsplit(".", 1)[0] + ".__init__"
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            # `from . import a` or `from .pkg import a` where a is a module: a imports a module
            modules = [n for n in names if node.module is None or _is_module(f"{target}.{n}")]
            for name in modules:
                yield f"{target}.{name}", id(node) in top, [], node.lineno
            if len(modules) < len(names):
                rest = [n for n in names if n not in modules]
                yield target, id(node) in top, rest, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top, [], node.lineno


# Imports inside functions that are kept on purpose, each with its reason.
LAZY = {
    (
        "autograder/__main__.py",
        "autograder.channels.cli",
    ): "the warm grader's client imports no torch",
    ("autograder/run/warm.py", "*"): "the client imports the standard library only; the server "
    "and its forks import the grader",
    ("autograder/run/forkserver.py", "*"): "the warm grader's client imports it with the standard "
    "library only; torch and the kit's warm-up when a server warms up",
    (
        "autograder/feedback/sinks.py",
        "autograder.run.sandbox.runner",
    ): "a type only (TYPE_CHECKING)",
    (
        "autograder/feedback/sinks.py",
        "autograder.feedback.report_html",
    ): "batch's CLI starts without torch; the report's pictures import it when drawn",
    (
        "autograder/feedback/report_html.py",
        "autograder.core.fixtures",
    ): "the CLI starts without torch; the stored outputs load (torch) when a picture needs them",
    ("autograder/run/limits.py", "torch._dynamo"): "torch's compiler stack: a warm-up kind, "
    "imported only where a graded module declares it",
    ("autograder/run/limits.py", "autograder.core.registry"): (
        "the judge side's registry: the sandboxed process imports limits (slots_of) and never "
        "asks which warm-ups a module declares"
    ),
    ("autograder/core/i18n.py", "babel.messages.mofile"): "Babel only when a catalog is compiled",
    ("autograder/core/i18n.py", "babel.messages.pofile"): "Babel only when a catalog is compiled",
    ("autograder/core/i18n.py", "autograder.core.registry"): (
        "every judge, only for a result whose misconception this process never declared"
    ),
    (
        "autograder/channels/class_report.py",
        "autograder.channels.nbgrader.collect",
    ): "FROM=course: needs nbgrader",
    ("autograder/notebook.py", "ipykernel.compiler"): "only inside a Jupyter kernel",
    (
        "autograder/channels/class_report.py",
        "autograder.channels.nbgrader.export",
    ): "FROM=course: needs nbgrader",
    ("autograder/channels/class_report.py", "matplotlib"): "plots load matplotlib only when drawn",
    ("autograder/channels/similarity.py", "rapidfuzz"): "an instructor extra: difflib without it",
    (
        "autograder/channels/similarity.py",
        "rapidfuzz.distance",
    ): "an instructor extra: difflib without it",
    (
        "autograder/channels/class_report.py",
        "matplotlib.pyplot",
    ): "plots load matplotlib only when drawn",
    ("autograder/channels/prairielearn.py", "autograder.run.sandbox.runner"): (
        "the CLI builds its verbs (prairielearn's too) without importing torch"
    ),
    ("autograder/channels/prairielearn.py", "autograder.run.limits"): (
        "the CLI builds its verbs (prairielearn's too) without importing torch"
    ),
    ("autograder/channels/prairielearn.py", "autograder.channels.batch"): (
        "a notebook upload only: batch.with_notebooks"
    ),
    ("autograder/channels/nbgrader/autograde.py", "nbgrader.api"): (
        "the instructor's set: module_source, the one extractor, also runs in Gradescope's "
        "and PrairieLearn's images (the student set)"
    ),
    ("autograder/channels/nbgrader/collect.py", "nbgrader.api"): (
        "only a course with a gradebook reads its students as the roster"
    ),
    ("autograder/channels/nbgrader/course.py", "autograder.channels.nbgrader.autograde"): (
        "the sandbox and torch, for the verbs that grade (autograde, regrade): the course "
        "verbs that grade nothing start without them"
    ),
    ("autograder/channels/nbgrader/course.py", "autograder.channels.nbgrader.kernel"): (
        "the confined kernels (the sandbox, torch) for make autograde only; a type otherwise"
    ),
    ("autograder/channels/nbgrader/course.py", "autograder.run.limits"): (
        "torch, for make autograde's cell CPU limits only; a type otherwise"
    ),
    ("autograder/channels/nbgrader/autograde.py", "nbformat"): (
        "the instructor's set: module_source also runs in the student set's images"
    ),
    ("autograder/run/limits.py", "matplotlib"): "only a module whose checks draw warms it",
    ("autograder/run/limits.py", "matplotlib.figure"): "only a module whose checks draw warms it",
    # Whole files, with one reason each:
    (
        "autograder/channels/batch.py",
        "*",
    ): "the CLI lists `batch` without importing torch or the sandbox",
    (
        "autograder/channels/gradescope/__init__.py",
        "*",
    ): "`make gradescope` zips files; torch only to grade",
    ("autograder/feedback/report_html.py", "*"): "torch only when a picture is drawn",
    ("autograder/trusted/plots.py", "*"): "matplotlib only when a figure is drawn",
    ("autograder/run/sandbox/child.py", "*"): "imports come after the process has confined itself",
    ("autograder/run/sandbox/zygote.py", "*"): "the zygote imports torch and the probe side itself",
    ("autograder/run/sandbox/jail.py", "*"): "pyseccomp (libseccomp) is loaded where it is used",
    # The command line: a module per verb (channels/cli/); each imports what its verb runs
    # (torch, pytest, nbgrader, the sandbox, ...) when it runs, so that listing every verb
    # (--help, the warm grader's client) imports none of it.
    **{
        (f"autograder/channels/cli/{p.name}", "*"): "each verb's modules load when it runs"
        for p in (PACKAGE / "channels" / "cli").glob("*.py")
    },
}


def _package_files():
    return sorted(p for p in PACKAGE.rglob("*.py") if "fixtures" not in p.parts)


def test_no_import_cycles_in_the_package():
    graph: dict[str, set[str]] = {}
    for path in _package_files():
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        deps = graph.setdefault(name, set())
        for target, _top, names, _line in _imports(path):
            if not target.startswith("autograder"):
                continue
            deps.add(target.removesuffix(".__init__"))
            for n in names:  # `from . import registry` imports a module too
                if (PACKAGE.parent / (target.replace(".", "/") + f"/{n}.py")).exists():
                    deps.add(f"{target}.{n}")
    cycles = []

    def visit(node, stack, seen):
        for dep in graph.get(node, ()):
            if dep in stack:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in seen:
                seen.add(dep)
                visit(dep, stack + [dep], seen)

    for start in graph:
        visit(start, [start], {start})
    assert not cycles, f"import cycles: {sorted({' -> '.join(c) for c in cycles})[:5]}"


def test_imports_inside_functions_are_listed_with_their_reason():
    found = []
    for path in _package_files():
        rel = path.relative_to(ROOT).as_posix()
        for target, top, _names, line in _imports(path):
            listed = (rel, target) in LAZY or (rel, "*") in LAZY
            if not top and not listed and not rel.startswith("autograder/checks/"):
                found.append(f"{rel}:{line} imports {target}")
    assert not found, "imports inside functions (list them in LAZY with a reason): " + str(found)


def test_no_private_names_across_modules():
    found = []
    for path in _package_files():
        rel = path.relative_to(ROOT).as_posix()
        for target, _top, names, line in _imports(path):
            if target.startswith("autograder"):
                # `_` alone is gettext's marker of a translatable text (autograder.core.i18n._)
                found += [
                    f"{rel}:{line} {target}.{n}" for n in names if n.startswith("_") and n != "_"
                ]
    assert not found, found


def test_one_course_order():
    """README's module table and the solutions' "Exercise group N" lines follow syllabus."""
    readme = (ROOT / "README.md").read_text()
    table = re.findall(r"^\| `([a-z_]+)\.py` \|", readme, flags=re.M)
    assert table == list(syllabus.MODULES), table
    for module in syllabus.MODULES:
        first = (paths.SOLUTIONS / f"{module}.py").read_text().splitlines()[0]
        assert first.startswith(f'"""Exercise group {syllabus.group(module)}'), (module, first)


def test_module_lists_are_validated_once():
    assert syllabus.parse_modules("masks,attention.py") == ["attention", "masks"]
    assert syllabus.parse_modules("") == list(syllabus.MODULES)
    with pytest.raises(syllabus.UnknownModule, match="unknown exercise module 'atention'"):
        syllabus.parse_modules("atention")
    with pytest.raises(syllabus.UnknownModule, match="expected a comma-separated"):
        syllabus.parse_modules(3)  # type: ignore[arg-type]


def test_the_cli_and_a_batch_start_without_torch(tmp_path):
    """`make batch` starts its zygote before the grader imports torch, so that the two
    imports run side by side: building the CLI's verbs and reading course.toml (the hidden
    secret) must not import torch."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from autograder.channels import cli; from autograder.core import course_config, registry\n"
        "try:\n"
        "    cli.main(['batch', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"course_config.write(Path({str(tmp_path)!r}), registry.modules())\n"
        f"course_config.load(Path({str(tmp_path)!r}))\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]", out[-2000:]


# What lets a function read its arguments other than by name: conservatively, a verdict
# that calls any of these is taken to read `want`.
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "_getframe", "currentframe"})


def _reads_second_argument(fn) -> bool:
    """Whether `fn` may read its second positional argument, from its bytecode: False only
    when `fn` is a plain function whose code never names it (no load, store or delete of it,
    no inner function closing over it, no introspection), never for *args, wrappers or
    callables. The kit declares it (core.no_reference); this test reads the code."""
    import dis
    import inspect
    import types

    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__"):
        return True
    code = fn.__code__
    if code.co_argcount < 2 or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return True
    name = code.co_varnames[1]
    if name in code.co_cellvars or _INTROSPECTION & set(code.co_names):
        return True
    for ins in dis.get_instructions(code):
        arg = ins.argval
        if arg == name or (isinstance(arg, tuple) and name in arg):
            return True
    return False


def test_a_verdict_said_to_read_no_reference_judges_without_one():
    """core.Check.compares decides which checks' references the hidden tier's servers skip
    (reference_fork.py); a verdict declares it (@no_reference). Every declaration agrees with
    the verdict's code, both ways (none declared that reads `want`, none that reads nothing
    left undeclared); every check said to read none passes on the solution's own outputs with
    no reference at all; every way a verdict could reach `want` counts as reading it."""
    import functools

    import torch

    from autograder.core.check import Check, no_reference
    from autograder.run import limits
    from autograder.run.engine import judge
    from autograder.run.probing import make_inputs, run_probe
    from autograder.run.submission import Submission

    def ignores(got, want, x):  # (no assert: pytest rewrites asserts with locals())
        if got != x:
            raise ValueError(got)

    def returns(got, want, x):
        return want

    def closes_over(got, want, x):
        return (lambda: want)()

    def introspects(got, want, x):
        return locals()

    def rebinds(got, want, x):
        want = got
        return want is got

    def star(got, *rest):
        return rest

    def keywords(got, want, x, **more):
        return more

    assert not _reads_second_argument(ignores)
    assert not _reads_second_argument(lambda got, want, x: got)
    for reads in (returns, closes_over, introspects, rebinds, star, keywords, len):
        assert _reads_second_argument(reads), reads
    assert _reads_second_argument(functools.wraps(ignores)(lambda *a: ignores(*a)))
    assert _reads_second_argument(functools.partial(ignores, 1))
    plain = Check("m", "s", "t", 1, ignores, ignores, ignores)
    assert plain.compares  # undeclared: taken to read the reference
    declared = Check("m", "s", "t", 1, ignores, ignores, no_reference(ignores))
    assert not declared.compares
    replayed = Check("m", "s", "t", 1, ignores, ignores, ignores, replays=lambda x: {})
    assert replayed.compares  # the replays travel inside the reference

    wrong = []
    for check in registry.all_checks():
        said = getattr(check.verdict, "reads_reference", True)
        if said != _reads_second_argument(check.verdict):
            wrong.append((check.id, check.verdict.__qualname__, "declared", said))
    assert not wrong, (
        "a verdict's @no_reference disagrees with its code (add it where the verdict never "
        f"reads `want`, remove it where it does): {wrong}"
    )

    limits.warm_up(*limits.WARM_UPS)
    solution = Submission(paths.SOLUTIONS)
    skipped = 0
    for module in syllabus.MODULES:
        loaded = solution.load(module)
        for check in registry.checks_of(module):
            if check.compares or check.slow:
                continue
            skipped += 1
            torch.manual_seed(0)
            inputs = make_inputs(check, 20261202)
            got = run_probe(check, loaded, inputs)
            result = judge(check, got, None, make_inputs(check, 20261202))
            assert result.passed, (check.id, result.message)
    assert skipped >= 20  # the property tests, the errors, plots, the memory recorders


# Code that finds things out by inspecting frames or bytecode, where a declaration says them.
_INSPECTION = re.compile(
    r"\b(_getframe|currentframe|f_back|f_globals)\b|\bdis\.|^import dis|__code__", re.M
)
# Left on purpose, with the reason.
INSPECTS = {
    "autograder/core/model_replays.py": "_code_key fingerprints a judge's lambdas (their bytecode "
    "and constants) so that a recorded replay is found again for the same model code",
    "autograder/notebook.py": "_cell_folder reads co_filename of the notebook's own functions: "
    "where the kernel files the cells' code (no declaration can say it)",
}


def test_no_frame_or_bytecode_inspection_in_the_grading_core():
    """Misconceptions name the module that declares them (core.Misconceptions) and a verdict
    declares that it reads no reference (core.no_reference): nothing in the package reads a
    caller's frame or a verdict's bytecode to find that out."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in INSPECTS:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _INSPECTION.search(code):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_each_misconception_is_declared_by_the_module_that_holds_it():
    """core.origin(id) is declared (Misconceptions(__name__), or a judge's data file read by
    misconception_data), not guessed: every misconception a kit module holds at its top level
    comes from a module that holds it too, and a judge's misconceptions carry its module's
    package name (its translation catalog: catalogs.domain_of)."""
    import importlib

    from autograder.core import check as core
    from autograder.core import misconception_data
    from autograder.core.check import Misconception, Misconceptions

    for name in ("run.policy", "core.verdicts", "run.sandbox.runner"):
        importlib.import_module(f"autograder.{name}")
    registry.all_misconceptions()
    wrong = []
    declarers = 0
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("autograder.") or module is None:
            continue
        namespace = vars(module)
        data = namespace.get("MISTAKES")
        if name.startswith("autograder.checks.") and data is not None:
            # a judge's misconceptions are its module's data (checks/<m>/misconceptions.toml),
            # declared under the module's package: its translation catalog
            declarers += 1
            if data is not misconception_data.misconceptions_of(name):
                wrong.append(f"{name}: MISTAKES is not its module's misconception data")
            package = name.rsplit(".", 1)[0]
            for mid in data:
                if core.origin(mid) != package:
                    wrong.append(f"{name} reads {mid}, origin {core.origin(mid)!r}")
        own = [v for v in namespace.values() if isinstance(v, Misconceptions)]
        for declarer in own:
            declarers += 1
            if declarer.module != name:
                wrong.append(f"{name}: Misconceptions({declarer.module!r})")
            for mid in declarer.ids:
                if core.origin(mid) != name:
                    wrong.append(f"{name} declares {mid}, origin {core.origin(mid)!r}")
        for value in namespace.values():
            if isinstance(value, Misconception):
                origin = core.origin(value.id)
                holder = sys.modules.get(origin)
                if holder is None or value not in vars(holder).values():
                    wrong.append(f"{name} holds {value.id}, declared in {origin!r}")
    assert not wrong, wrong
    assert declarers >= len(syllabus.MODULES) + 3  # every judge, core, policy, verdicts, runner
    assert all(core.origin(mid) for mid in core.declared())


# The modules of the runner (the placements of engine.py) and those that grade through them.
RUNNER_MODULES = (
    "autograder.run.channel",
    "autograder.channels.nbgrader.autograde",
    "autograder.run.engine",
    "autograder.run.forkserver",
    "autograder.notebook",
    "autograder.plugin",
    "autograder.run.policy",
    "autograder.run.probing",
    "autograder.run.sandbox.child",
    "autograder.run.sandbox.relay",
    "autograder.run.sandbox.runner",
    "autograder.run.sandbox.zygote",
    "autograder.run.warm",
    "autograder.channels.watch",
    "autograder.run.worker",
)


def test_every_runner_module_imports_first_in_a_fresh_interpreter():
    """No import cycle bites whichever module a process imports first (engine -> worker ->
    sandbox -> engine was one): each module of the runner is imported first in a fresh fork
    of an interpreter that has imported torch only."""
    names = list(RUNNER_MODULES)
    code = (
        "import importlib, json, os, sys, traceback\n"
        "import torch\n"
        "failed = {}\n"
        f"for name in {names!r}:\n"
        "    r, w = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.close(r)\n"
        "        try:\n"
        "            importlib.import_module(name)\n"
        "            os._exit(0)\n"
        "        except BaseException:\n"
        "            os.write(w, traceback.format_exc()[-600:].encode())\n"
        "            os._exit(1)\n"
        "    os.close(w)\n"
        "    why = os.read(r, 1 << 16)\n"
        "    os.close(r)\n"
        "    if os.waitpid(pid, 0)[1]:\n"
        "        failed[name] = why.decode() or 'died'\n"
        "print(json.dumps(failed))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    failed = json.loads(out.strip().splitlines()[-1])
    assert not failed, failed


def test_the_placements_share_one_judge_loop_one_policy_and_one_pre_fork_server():
    """engine.py: in-process (notebook), forked worker, confined sandbox. The Results of all
    three come from engine.verdict; the worker's and the sandbox's parents read their child
    with channel.Reading and settle it by policy.py, their children send with
    channel.probe_all; the warm grader and the sandbox's zygote are one ForkServer."""

    def calls(path: str) -> set[str]:
        tree = ast.parse((ROOT / path).read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                found.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
        return found

    assert "verdict" in calls("autograder/run/engine.py")  # run_check (notebook) and grade_module
    assert "verdict" in calls("autograder/run/sandbox/runner.py")
    assert "run_check" in calls("autograder/notebook.py")
    for parent in ("autograder/run/worker.py", "autograder/run/sandbox/runner.py"):
        assert {"Reading", "outcome"} <= calls(parent), parent
        text = (ROOT / parent).read_text()
        assert "def _child_result" not in text and "class Stuck" not in text, parent
    for child in ("autograder/run/worker.py", "autograder/run/sandbox/child.py"):
        assert "probe_all" in calls(child), child
        assert '"type": "outputs"' not in (ROOT / child).read_text(), child
    for server in ("autograder/run/warm.py", "autograder/run/sandbox/zygote.py"):
        assert "ForkServer" in calls(server), server

    # Only the pre-fork server forks on behalf of warm.py and the zygote's loop.
    def os_forks(node) -> list:
        return [
            n
            for n in ast.walk(node)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "fork"
            and getattr(n.func.value, "id", "") == "os"
        ]

    assert not os_forks(ast.parse((ROOT / "autograder/run/warm.py").read_text()))
    zygote = ast.parse((ROOT / "autograder/run/sandbox/zygote.py").read_text())
    serve = next(n for n in zygote.body if isinstance(n, ast.FunctionDef) and n.name == "_serve")
    assert not os_forks(serve)
    from autograder.run import forkserver, policy, worker
    from autograder.run.sandbox import runner

    assert worker.Stuck is policy.Stuck and runner.Stuck is policy.Stuck
    assert runner.overran is policy.overran
    assert forkserver.ForkServer.__module__ == "autograder.run.forkserver"
