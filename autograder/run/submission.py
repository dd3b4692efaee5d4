"""Load a student's package folder, one exercise module at a time, in isolation.

Grading module X imports X from the submission under a fresh package name, after putting a
trusted stand-in (autograder/trusted/) in place of every *other* exercise module: X's
relative imports (`from .attention import scaled_dot_product_attention`) then get trusted
code, so a bug in attention.py costs points once, in attention, and never again later. The
same import written as code that runs from its own folder writes it (`from attention import
...`, for `python multihead.py`) gets the same module, and so does the student's own helper
file imported that way (`import helpers`: Siblings).
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import os
import pkgutil
import re
import sys
import types
from pathlib import Path
from typing import Any, Protocol

from .. import trusted
from ..core import paths, syllabus

_counter = itertools.count()
PACKAGE_PREFIX = "_attention_lab_submission_"  # + a number: the package a module is loaded in
_IN_PACKAGE = re.compile(rf"'{PACKAGE_PREFIX}\d+\.([\w.]+)'")
_PACKAGE = re.compile(rf"'{PACKAGE_PREFIX}\d+'")


def shown_names(text: str) -> str:
    """An error's text with the module names a student knows: 'attention', not the package
    the grader loads it in ('_attention_lab_submission_3.attention'); a name asked of the
    package itself is one its __init__.py would define, which grading does not run."""
    text = _IN_PACKAGE.sub(r"'\1'", text).replace(" (unknown location)", "")
    if _PACKAGE.search(text):
        text = _PACKAGE.sub("your folder's package", text)
        text += " (grading does not run your __init__.py: define it in a module and import it"
        text += " from there)"
    return text


class ImportProblem(Exception):
    """The module could not be imported; `error` says why in one line; `missing`: the file
    is not there at all (not attempted, rather than broken); `near`: files of the folder that
    look meant as it (near_misses)."""

    def __init__(self, module: str, file: str, error: str, missing: bool = False, near: str = ""):
        self.module, self.file, self.error, self.missing = module, file, error, missing
        self.near = near
        super().__init__(f"{file}: {error}")


# What turns the module's file name into another one on its way to the folder: a copy's
# number or " - Copy" (downloads, file managers), spaces, a doubled or hidden .txt ending.
_COPY = re.compile(r"\s*(\(\d+\)|-?\s*copy(\s*\(?\d+\)?)?)$")


def near_misses(folder: Path, module: str) -> list[str]:
    """The files of `folder` that look meant as `module`.py without being named so:
    Attention.py, attention (1).py, attention - Copy.py, attention.py.txt, attention.py.py."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        key = name.strip().lower()
        while key.endswith(".txt"):
            key = key[:-4].rstrip()
        while key.endswith(".py.py"):
            key = key[:-3]
        if not key.endswith(".py"):
            continue
        stem = _COPY.sub("", key[:-3]).strip()
        if stem == module and name != f"{module}.py" and (folder / name).is_file():
            found.append(name)
    return found


def trusted_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(trusted.__path__))


class Loadable(Protocol):
    """What running a probe needs of a submission: the folder its code is in (a crash's
    traceback is cut to it) and its modules, one at a time (a Submission, or a notebook's
    namespace: notebook.NotebookSubmission)."""

    path: Path

    def load(self, module: str) -> types.ModuleType: ...


class Submission:
    """A folder holding the exercise modules (attention.py, masks.py, ...)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).resolve()
        if not self.path.is_dir():
            raise FileNotFoundError(
                f"submission folder {str(path)!r} does not exist (expected a folder holding "
                "attention.py, masks.py, ...)"
            )
        self._cache: dict[str, types.ModuleType | ImportProblem] = {}

    def file(self, module: str) -> Path:
        return self.path / f"{module}.py"

    def own_dependencies(self, module: str) -> list[str]:
        """The modules that `module` imports relatively and that have no trusted stand-in
        here (the student copy leaves some out): grading `module` uses the student's own.
        What the student's file imports, and what the kit's stub of it imports (the probes
        reach a dependency the contract names even where the student's file does not import
        it: probing.dependency)."""
        imported: set[str] = set()
        for path in (self.file(module), paths.ASSIGNMENTS / f"{module}.py"):
            try:
                tree = ast.parse(path.read_bytes())  # bytes: a BOM or a coding line, as Python
            except (OSError, SyntaxError, ValueError):
                continue
            imported |= sibling_imports(tree)
        stand_ins = set(trusted_modules())
        return sorted(m for m in imported if m != module and m not in stand_ins)

    def load(self, module: str) -> types.ModuleType:
        """Import `module` from the submission (cached); raises ImportProblem."""
        if module not in self._cache:
            try:
                self._cache[module] = self._import(module)
            except ImportProblem as problem:
                self._cache[module] = problem
        loaded = self._cache[module]
        if isinstance(loaded, ImportProblem):
            raise loaded
        return loaded

    def _import(self, module: str) -> types.ModuleType:
        file = self.file(module)
        shown = f"{self.path.name}/{module}.py"
        if not file.is_file():
            near = ", ".join(near_misses(self.path, module)[:3])
            error = f"the file is missing from {self.path}"
            raise ImportProblem(module, shown, error, missing=True, near=near)
        package = f"{PACKAGE_PREFIX}{next(_counter)}"
        pkg = types.ModuleType(package)
        pkg.__path__ = [str(self.path)]
        sys.modules[package] = pkg
        Siblings.serve(package)
        for other in trusted_modules():
            if other != module:
                stand_in = importlib.import_module(f"{trusted.__name__}.{other}")
                view = stand_in_view(package, other, stand_in, self.file(other))
                sys.modules[f"{package}.{other}"] = view
                setattr(pkg, other, view)
        spec = importlib.util.spec_from_file_location(f"{package}.{module}", file)
        if spec is None or spec.loader is None:
            raise ImportProblem(module, shown, "the file cannot be loaded as a Python module")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        try:
            spec.loader.exec_module(mod)
        except SyntaxError as e:
            raise ImportProblem(module, shown, syntax_error_text(e)) from None
        except (Exception, SystemExit) as e:
            raise ImportProblem(module, shown, shown_names(f"{type(e).__name__}: {e}")) from None
        return mod


def stand_in_view(
    package: str, other: str, stand_in: types.ModuleType, own: Path
) -> types.ModuleType:
    """`<package>.<other>` while another module is graded: the trusted stand-in's names, so
    that a bug in the student's other.py is not charged again here; and for a name the
    stand-in lacks (a helper function the student added to their own other.py, gpt's
    `train`), the student's own, from their other.py, loaded when first asked for (its
    relative imports get the stand-ins too). A student's file that cannot give the name
    leaves it missing, as before."""
    view = types.ModuleType(f"{package}.{other}", stand_in.__doc__)
    view.__package__ = package
    view.__dict__.update({k: v for k, v in vars(stand_in).items() if not k.startswith("__")})
    if hasattr(stand_in, "__all__"):
        view.__dict__["__all__"] = list(stand_in.__all__)
    loaded: list[types.ModuleType | None] = []

    def own_name(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if not loaded:
            loaded.append(_own_module(f"{package}.__own_{other}", own))
        if loaded[0] is not None and hasattr(loaded[0], name):
            return getattr(loaded[0], name)
        raise AttributeError(f"module {other!r} has no attribute {name!r}")

    vars(view)["__getattr__"] = own_name  # PEP 562: asked for a name the view lacks
    return view


def _own_module(name: str, file: Path) -> types.ModuleType | None:
    """The student's own module at `file`, under `name` (in the submission's package), or None
    where it is missing or does not import."""
    spec = importlib.util.spec_from_file_location(name, file) if file.is_file() else None
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except (Exception, SystemExit):
        sys.modules.pop(name, None)
        return None
    return mod


def syntax_error_text(e: SyntaxError) -> str:
    """A syntax error as the student reads it: its line and the code there, when Python knows
    them; a file that is not UTF-8 text (Notepad's "Unicode" is UTF-16: null bytes) says how
    to save it."""
    where = f" on line {e.lineno}" if e.lineno else ""
    code = (e.text or "").strip()
    text = f"SyntaxError{where}: {e.msg}" + (f": {code}" if code else "")
    if "null bytes" in str(e.msg):
        text += " (the file is not UTF-8 text: save it as UTF-8 and hand it in again)"
    return text


def sibling_imports(tree: ast.AST) -> set[str]:
    """The exercise modules a module's code imports: relatively (`from .attention import f`,
    `from . import attention`), or as code that runs from its own folder writes it (`from
    attention import f`, `import attention`)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if node.level == 1 or (node.level == 0 and top in syllabus.MODULES):
                found.add(top)
        elif isinstance(node, ast.ImportFrom) and node.level == 1:  # from . import attention
            found |= {a.name for a in node.names if a.name in syllabus.MODULES}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in syllabus.MODULES}
    return found


# The folder the kit hands the stubs out in, a package: `from assignments.attention import f`
# (an IDE's import from the kit's folder) is the submission's own module, as `from .attention
# import f` gives it, wherever the submission is graded (Siblings).
KIT_FOLDER = "assignments"


class Siblings(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import attention` or `from attention import f` in a submitted module, where no
    module of that name is on the path (the last finder asked): the module the relative
    import gives, `<package>.attention` of the submission last loaded (a trusted stand-in, or
    the student's own where the copy has none). Code written to run from its own folder
    (`python multihead.py`, where `from .attention` fails) then grades as the stub's does.
    The name is a view of that module (its attributes read through), never a second copy.

    `from assignments.attention import f` (the kit's folder as a package, as an IDE writes
    the import) is the same: `assignments` is the submission being graded, not the stubs.

    A student's own helper beside the exercise modules (`helpers.py`, a `utils/` package),
    imported the same way (`import helpers`), is that file of the submission last loaded:
    the module `from .helpers import f` gives, under both names (one module, not a copy).
    For those names a second finder is asked first, so that a folder of the kit's own
    without `__init__.py` (a namespace package: data/, tools/, on the path where the kit
    runs from its folder) does not take a helper's name; a module or a package that a later
    finder has (the standard library, torch, the kit's packages) keeps its name."""

    _package = ""
    _installed = False

    def __init__(self, first: bool = False):
        self.first = first  # the helpers' finder, at the front of sys.meta_path

    @classmethod
    def serve(cls, package: str) -> None:
        cls._package = package
        if not cls._installed:
            for name in [n for n in sys.modules if n.split(".")[0] == KIT_FOLDER]:
                del sys.modules[name]  # the kit's own assignments/, imported before: not here
            sys.meta_path.insert(0, cls(first=True))
            sys.meta_path.append(cls())
            cls._installed = True

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not self._package:
            return None
        if not self.first:  # the last finder: an exercise module's name nothing else has
            mine = path is None and fullname in syllabus.MODULES
        elif fullname.split(".")[0] == KIT_FOLDER:  # assignments, assignments.attention
            return importlib.util.spec_from_loader(fullname, self, is_package="." not in fullname)
        else:  # the first finder: a helper's name that no module or package elsewhere has
            mine = path is None and fullname not in syllabus.MODULES and self._helper(fullname)
            mine = mine and not self._taken(fullname)
        return importlib.util.spec_from_loader(fullname, self) if mine else None

    def _helper(self, name: str) -> bool:
        """Whether `name` is a helper module or package of the submission last loaded (a
        folder without `__init__.py` too: Python imports it as a namespace package)."""
        package = sys.modules.get(self._package)
        if package is None or "." in name:
            return False
        folder = Path(package.__path__[0])
        return (folder / f"{name}.py").is_file() or (folder / name).is_dir()

    @staticmethod
    def _taken(name: str) -> bool:
        """Whether another finder has `name` as a module or a regular package (a namespace
        package, a folder without `__init__.py`, has no loader yet: it does not count)."""
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if isinstance(finder, Siblings) or find is None:
                continue
            try:
                spec = find(name, None)
            except (ImportError, ValueError, OSError):
                continue
            if spec is not None and spec.loader is not None:
                return True
        return False

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in syllabus.MODULES:
            return types.ModuleType(spec.name)
        if spec.name == KIT_FOLDER:  # the submission's package itself
            return sys.modules[self._package]
        within = spec.name.removeprefix(f"{KIT_FOLDER}.")  # assignments.attention: attention
        return importlib.import_module(f"{self._package}.{within}")  # a helper: itself

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ not in syllabus.MODULES:
            return  # a helper or the package, run when the package's import created it
        target = importlib.import_module(f"{self._package}.{module.__name__}")
        public = getattr(target, "__all__", [n for n in vars(target) if n[0] != "_"])
        vars(module).update(__getattr__=lambda name: getattr(target, name), __all__=public)
