"""The costly first uses a module's probes make are declared (its checks package's WARM_UP,
and TRAIN_WARM_UP for its training run: registry.warm_ups) and paid once by the grader before
any student code: by make grade's parent before it forks its workers, and by the sandbox's
zygote, which warms what the graded modules declare and nothing more (a zygote that grades
attention alone no longer imports torch's compiler stack and matplotlib)."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from autograder.core import registry
from autograder.run import limits

# In a fresh interpreter (a test process may have imported anything already): torch warmed
# as every grader warms it, then per module a fork that pays only what the module declares
# and runs every probe of every check, the training runs too, on the solution. What the
# probes import beyond that is a first use the module does not declare.
PROBE_ALL = r"""
import json, os, sys
import torch
from autograder.core import registry
from autograder.core.paths import SOLUTIONS
from autograder.run import limits
from autograder.run.probing import make_inputs, run_probe
from autograder.run.submission import Submission
torch.set_num_threads(1)
limits.warm_up()
found = {}
for module in registry.modules():
    checks = registry.checks_of(module)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        limits.warm_up(*registry.warm_ups([module], slow=True))
        before = set(sys.modules)
        loaded = Submission(SOLUTIONS).load(module)
        for check in checks:
            run_probe(check, loaded, make_inputs(check, 20261204))
        os.write(w, json.dumps(sorted(set(sys.modules) - before)).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    found[module] = json.loads(data) if data else None
print("FOUND " + json.dumps(found))
"""


def _fresh(script: str, tag: str, *args: str) -> str:
    """Run `script` in a fresh interpreter with the kit on its path; the last line it prints
    that starts with `tag`, without the tag."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(tag)]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return lines[-1].removeprefix(tag)


def test_every_first_use_of_the_probes_is_declared():
    found = json.loads(_fresh(PROBE_ALL, "FOUND "))
    assert set(found) == set(registry.modules())
    crashed = [m for m, new in found.items() if new is None]
    assert not crashed, f"the probes of {crashed} crashed on the solution"
    # The submission's own package and kit code are what a grading imports; anything else
    # (torch's compiler stack, sympy, matplotlib) is a lazy first use paid inside a check.
    undeclared = {
        m: sorted({n.split(".")[0] for n in new if not n.startswith(("autograder.", "_attention"))})
        for m, new in found.items()
    }
    undeclared = {m: names for m, names in undeclared.items() if names}
    assert not undeclared, (
        "these modules' probes import more than their checks package declares (add the kind "
        f"of limits.WARM_UPS to its WARM_UP or TRAIN_WARM_UP): {undeclared}"
    )


def test_declared_warm_ups_are_kinds_the_grader_knows():
    for module in registry.modules():
        kinds = registry.warm_ups([module], slow=True)
        assert set(kinds) <= set(limits.WARM_UPS), (module, kinds)
    assert registry.warm_ups(["attention"]) == []
    assert registry.warm_ups(["masks", "plots", "masks"]) == ["meta", "matplotlib"]
    # the training run's needs only where the slow checks are graded
    assert registry.warm_ups(["llama"]) == [] and registry.warm_ups(["llama"], slow=True) == [
        "optim"
    ]
    with pytest.raises(KeyError):
        registry.warm_ups(["no_such_module"])


def test_a_worker_warms_what_its_checks_need():
    llama = registry.checks_of("llama")
    fast = [c for c in llama if not c.slow]
    assert fast and len(fast) < len(llama)
    assert limits.warm_ups_of(fast) == []
    assert limits.warm_ups_of(llama) == ["optim"]
    assert limits.warm_ups_of(registry.checks_of("flash")) == ["autograd"]
    test_own = [c for c in registry.checks_of("attention")]
    assert limits.warm_ups_of(test_own) == []


def test_a_measured_run_never_counts_the_compiler_stack():
    """A measured check charges a run's resident memory from outside: torch's compiler stack
    (~90 MB, imported at the first use of torch.func, torch.utils.checkpoint, an optimizer) is
    paid before the run in every placement, so correct code that reaches it is not charged."""
    measured = sorted({c.module for c in registry.all_checks() if c.measured})
    assert measured, "no measured check: this test has nothing to hold"
    missing = [m for m in measured if "compiler" not in registry.warm_ups([m])]
    assert not missing, f"modules with measured checks that do not warm the compiler: {missing}"


# A fresh kernel-like interpreter (this test process may have imported the compiler stack
# already): the checkpointed chunked attention, exec'd as a notebook cell, self-checked.
NOTEBOOK_SELF_CHECK = r"""
import sys
from pathlib import Path
from autograder import notebook
namespace = {"__name__": "__main__", "__package__": None}
exec(compile(Path(sys.argv[1]).read_text(), "cell.py", "exec"), namespace)
result = notebook.run("efficient.chunked-memory", namespace)
print("RESULT", result.status, "torch._dynamo" in sys.modules, result.message)
"""


def test_a_notebook_self_check_pays_the_first_uses_before_a_measured_run():
    """The notebook's own feedback runs a measured check in forks of the kernel: the kernel
    pays what the module declares first, so correct code is not charged an import."""
    alternative = (
        ROOT / "tests" / "kit" / "alternatives" / "efficient" / "chunks_under_checkpoint.py"
    )
    result = _fresh(NOTEBOOK_SELF_CHECK, "RESULT ", str(alternative))
    assert result.startswith("passed True"), result
