"""What the fuzzer runs: a generated program as source text, its parameters' shapes, and inputs.

A :class:`Case` is plain data (picklable, printable in a reproducer): the generator that made it,
the source (index language, or a Python module defining ``f`` in the NumPy subset), the shape of
each parameter in size names or integers, the size values, and which parameters are relations
(boolean). Inputs are drawn per *input kind*; :data:`INPUT_KINDS` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["INPUT_KINDS", "SIGNED_ZEROS", "SPECIALS", "Case", "draw_inputs", "shrink_inputs"]

# finite: moderate values away from 0 (gradients are checked against finite differences there);
# extreme: +-0, huge and tiny values mixed in; nonfinite: inf, -inf and nan mixed in as well;
# zeros: every entry +0.0, -0.0 or a small exact value, so that sums, differences and
# products of them are often exact zeros and a division meets the sign of one (1 / -0.0 is
# -inf): the sign-of-zero rules of docs/semantics.md.
INPUT_KINDS = ("finite", "extreme", "nonfinite", "zeros")
EXTREMES = (0.0, -0.0, 1e300, -1e300, 1e-300, -1e-300, 5e-324, 1e154, -1e154)
SPECIALS = (np.inf, -np.inf, np.nan) + EXTREMES
SIGNED_ZEROS = (0.0, -0.0, 1.0, -1.0, 0.5)


@dataclass(frozen=True)
class Case:
    """A generated program. ``shapes`` maps each parameter (in order) to its dimensions."""

    generator: str  # "index" or "numpy"
    source: str
    shapes: Mapping[str, tuple[int | str, ...]]
    sizes: Mapping[str, int]
    relations: frozenset[str] = field(default_factory=frozenset)

    def concrete(self, name: str) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else self.sizes[d] for d in self.shapes[name])

    def with_source(self, source: str) -> Case:
        return replace(self, source=source)


def draw_inputs(case: Case, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray | float]:
    """Arguments for ``case`` of one input kind; scalars (shape ``()``) as Python floats."""
    args: dict[str, np.ndarray | float] = {}
    for name in case.shapes:
        shape = case.concrete(name)
        if name in case.relations:
            args[name] = rng.random(shape) < 0.5
            continue
        # finite values in +-[0.3, 2]: no ties at 0 for abs/sign/step, exp does not overflow
        x = rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        if kind == "zeros":
            x = rng.choice(np.array(SIGNED_ZEROS), shape)
        elif kind != "finite":
            pool = np.array(EXTREMES if kind == "extreme" else SPECIALS)
            mask = rng.random(shape) < 0.35
            x = np.where(mask, rng.choice(pool, shape), x)
        args[name] = float(x) if shape == () else np.asarray(x, dtype=np.float64)
    return args


def shrink_inputs(case: Case, new_sizes: Mapping[str, int], inputs: Mapping[str, object]
                  ) -> dict[str, object]:
    """``inputs`` cut down to ``new_sizes`` (leading entries along every axis of a size)."""
    out: dict[str, object] = {}
    for name, value in inputs.items():
        dims = case.shapes[name]
        if not isinstance(value, np.ndarray) or not dims:
            out[name] = value
            continue
        cut = tuple(slice(0, new_sizes[d]) if isinstance(d, str) else slice(None) for d in dims)
        out[name] = value[cut].copy()
    return out
