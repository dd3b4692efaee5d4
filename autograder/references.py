"""Expected outputs, per check: the one way every front end (make grade, batch, Gradescope,
nbgrader) gets them.

Public tier: the stored fixtures (probe(solution) on the public seed). Hidden tier: probe
(solution) on inputs drawn from a secret seed, computed here from solutions/ at grading time
(instructor side only: the student copy has no solutions/).
"""

from __future__ import annotations

from . import fixtures, limits, paths
from .core import Check, Outputs


class References:
    def __init__(self, tier: str, seed: int, solutions=paths.SOLUTIONS):
        if tier not in ("public", "hidden"):
            raise ValueError(f"tier must be 'public' or 'hidden', got {tier!r}")
        self.tier, self.seed, self.solutions = tier, int(seed), solutions
        self._modules: dict[str, dict[str, Outputs]] = {}

    @classmethod
    def public(cls) -> References:
        return cls("public", fixtures.PUBLIC_SEED)

    @classmethod
    def hidden(cls, seed: int, solutions=paths.SOLUTIONS) -> References:
        return cls("hidden", seed, solutions)

    def module(self, module: str) -> dict[str, Outputs]:
        """{slug: expected outputs} for every fast check of `module`.

        Raises OSError/ValueError when the public fixtures are missing or corrupt.
        """
        if module not in self._modules:
            if self.tier == "public":
                self._modules[module] = fixtures.load(module)
                cpu = fixtures.manifest(module).get("cpu_seconds", {})
            else:
                self._modules[module], cpu = fixtures.compute_timed(
                    module, self.solutions, self.seed
                )
            for slug, seconds in cpu.items() if isinstance(cpu, dict) else ():
                if isinstance(seconds, (int, float)):
                    limits.record_reference(f"{module}.{slug}", seconds)
        return self._modules[module]

    def get(self, check: Check) -> Outputs | None:
        """The expected outputs of `check` (None for a slow check: judged on thresholds)."""
        if check.slow:
            return None
        return self.module(check.module).get(check.slug)
