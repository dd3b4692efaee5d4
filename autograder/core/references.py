"""Expected outputs, per check: the one way every front end (make grade, batch, Gradescope,
nbgrader) gets them.

Public tier: the stored fixtures (probe(solution) on the public seed). Hidden tier: probe
(solution) on inputs drawn from a secret seed, computed here from solutions/ at grading time
(instructor side only: the student copy has no solutions/).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..run import limits
from . import fixtures, paths
from .check import Check, Outputs
from .settings import Settings

# Where the hidden tier is computed: f(modules, seed, solutions) -> ({module: {slug: outputs}},
# {module: {slug: CPU seconds}}, {module: error}).
Compute = Callable[
    [list[str], int, Path],
    tuple[dict[str, dict[str, Outputs]], dict[str, dict[str, float]], dict[str, str]],
]


class References:
    def __init__(
        self,
        tier: str,
        seed: int,
        solutions: Path = paths.SOLUTIONS,
        compute: Compute | None = None,
    ) -> None:
        """`compute`: where the hidden tier is computed, f(modules, seed, solutions) ->
        ({module: {slug: outputs}}, {module: {slug: CPU seconds}}, {module: error}); None:
        in this process (the sandbox passes its zygote's trusted fork: Zygote.references)."""
        if tier not in ("public", "hidden"):
            raise ValueError(f"tier must be 'public' or 'hidden', got {tier!r}")
        self.tier, self.seed, self.solutions = tier, int(seed), solutions
        self._compute = compute
        self._modules: dict[str, dict[str, Outputs]] = {}
        self._errors: dict[str, str] = {}
        # {check id: the reference's CPU seconds}: what time limits are calibrated on
        # (limits.TimeLimits.reference), filled as each module's references are had
        self.cpu: dict[str, float] = {}

    @classmethod
    def public(cls) -> References:
        return cls("public", fixtures.PUBLIC_SEED)

    @classmethod
    def hidden(
        cls, seed: int, solutions: Path = paths.SOLUTIONS, compute: Compute | None = None
    ) -> References:
        return cls("hidden", seed, solutions, compute)

    def module(self, module: str) -> dict[str, Outputs]:
        """{slug: expected outputs} for every fast check of `module`.

        Raises OSError/ValueError when the public fixtures are missing or corrupt.
        """
        if module in self._errors:
            raise RuntimeError(self._errors[module])
        if module not in self._modules:
            if self.tier == "public":
                self._modules[module] = fixtures.load(module)
                cpu = fixtures.manifest(module).get("cpu_seconds", {})
            elif self._compute is not None:
                self.modules([module])
                return self.module(module)
            else:
                self._modules[module], cpu = fixtures.compute_timed(
                    module, self.solutions, self.seed
                )
            self._record(module, cpu)
        return self._modules[module]

    def modules(self, names: list[str]) -> tuple[dict[str, dict[str, Outputs]], dict[str, str]]:
        """({module: its expected outputs}, {module: why they could not be had}) for many
        modules at once: with `compute`, one trip for all of them."""
        todo = [m for m in names if m not in self._modules and m not in self._errors]
        if todo and self.tier == "hidden" and self._compute is not None:
            found, cpu, errors = self._compute(todo, self.seed, self.solutions)
            for module, outputs in found.items():
                self._modules[module] = outputs
                self._record(module, cpu.get(module, {}))
            self._errors.update(errors)
            self._errors.update(
                {
                    m: "no reference outputs came back"
                    for m in todo
                    if m not in self._modules and m not in self._errors
                }
            )
        found_all: dict[str, dict[str, Outputs]] = {}
        errors_all: dict[str, str] = {}
        for module in names:
            try:
                found_all[module] = self.module(module)
            except Exception as e:
                errors_all[module] = (
                    self._errors[module] if module in self._errors else f"{type(e).__name__}: {e}"
                )
        return found_all, errors_all

    def _record(self, module: str, cpu: Any) -> None:
        """The solution's CPU seconds per check: what time limits are calibrated on."""
        for slug, seconds in cpu.items() if isinstance(cpu, dict) else ():
            if isinstance(seconds, (int, float)):
                self.cpu[f"{module}.{slug}"] = float(seconds)

    def time_limits(self, settings: Settings | None = None) -> limits.TimeLimits:
        """The time limits calibrated on these references, under the run's `settings` (its
        fixed limit or its cap: limits.TimeLimits.of, the one rule of every channel)."""
        return limits.TimeLimits.of(settings or Settings(), self.cpu)

    def get(self, check: Check) -> Outputs | None:
        """The expected outputs of `check` (None for a slow check: judged on thresholds)."""
        if check.slow:
            return None
        return self.module(check.module).get(check.slug)
