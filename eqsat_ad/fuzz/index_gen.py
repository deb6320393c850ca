"""Random index-language programs, written as source text.

Independent of the test strategies: nested sums, brackets (comparisons and conjunctions of affine
index expressions), relation accesses, affine and out-of-range reads (``x[i + 1]``, ``x[N]``,
``x[i/2]``), every built-in of :mod:`eqsat_ad.ir.functions`, divisions, powers, several statements
and tuple returns. Every program is meant to be valid; one the parser rejects is counted as
"rejected" (a generator defect), not as a defect of the library.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.functions import BUILTINS, lookup
from .case import Case

__all__ = ["generate_index"]

CONSTS = ("0", "1", "2", "0.5", "-1.5", "3", "0.001", "100.0", "-2", "1e-08")
POWERS = ("2", "3", "0.5", "-1", "2.5", "-2", "0")
CMPS = ("<", "<=", ">", ">=", "==", "!=")
# user-registered functions may be in the registry: fuzz the built-ins only
FUNCTIONS = tuple(sorted(BUILTINS))


@dataclass(frozen=True)
class _Tensor:
    name: str
    dims: tuple[int | str, ...]


class _IndexGen:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.sizes: dict[str, int] = {}
        self.tensors: list[_Tensor] = []
        self.relations: list[_Tensor] = []
        self.fresh = 0

    # --- small choices ----------------------------------------------------------------------
    def pick(self, seq):  # noqa: ANN001, ANN201 - any sequence
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def dim(self) -> int | str:
        if self.sizes and self.chance(0.8):
            return self.pick(list(self.sizes))
        return int(self.pick((1, 2, 3)))

    def index_var(self) -> str:
        self.fresh += 1
        return "ijklpqrsuvw"[(self.fresh - 1) % 11] + ("" if self.fresh <= 11 else str(self.fresh))

    # --- indices ------------------------------------------------------------------------------
    def affine(self, scope: list[tuple[str, int | str]], extent: int | str) -> str:
        """An index expression for an axis of ``extent``: mostly in range, sometimes not."""
        d = str(extent)
        if not scope or self.chance(0.15):
            return self.pick(("0", f"{d} - 1", d, "1"))
        v, ve = self.pick(scope)
        match int(self.rng.integers(9)):
            case 0 | 1 | 2:
                return v
            case 3:
                return f"{v} + 1"
            case 4:
                return f"{v} - 1"
            case 5:
                return f"{d} - 1 - {v}"
            case 6:
                return f"2*{v}"
            case 7:
                w, _ = self.pick(scope)
                return f"{v} + {w}" if w != v else f"{v}/2"
            case _:
                return f"{v}/2"

    def predicate(self, scope: list[tuple[str, int | str]]) -> str:
        def cmp() -> str:
            if not scope:
                lhs = self.pick(list(self.sizes)) if self.sizes else "1"
                return f"{lhs} {self.pick(CMPS)} {self.pick((1, 2))}"
            a, ae = self.pick(scope)
            rhs = self.affine(scope, ae) if self.chance(0.6) else self.pick(("0", "1", str(ae)))
            return f"{a} {self.pick(CMPS)} {rhs}"

        parts = [cmp() for _ in range(1 + int(self.chance(0.35)) + int(self.chance(0.1)))]
        return " and ".join(parts)

    # --- expressions --------------------------------------------------------------------------
    def access(self, scope: list[tuple[str, int | str]], pool: list[_Tensor]) -> str:
        t = self.pick(pool)
        if not t.dims:
            return t.name
        return f"{t.name}[{', '.join(self.affine(scope, d) for d in t.dims)}]"

    def expr(self, scope: list[tuple[str, int | str]], depth: int) -> str:
        if depth <= 0 or self.chance(0.2):
            return self.access(scope, self.tensors) if self.chance(0.8) else self.pick(CONSTS)
        r = self.rng.random()
        if r < 0.3:
            op = self.pick(("+", "-", "*", "/", "*", "+"))
            return f"({self.expr(scope, depth - 1)} {op} {self.expr(scope, depth - 1)})"
        if r < 0.45:
            fn = self.pick(FUNCTIONS)
            args = ", ".join(self.expr(scope, depth - 1) for _ in range(lookup(fn).arity))
            return f"{fn}({args})"
        if r < 0.6:
            names = [self.index_var() for _ in range(1 + int(self.chance(0.25)))]
            inner = scope + [(n, self.dim()) for n in names]
            binders = ", ".join(f"{n}: {e}" for n, e in inner[len(scope):])
            return f"Sum[{binders}]({self.expr(inner, depth - 1)})"
        if r < 0.72:
            return f"({self.predicate(scope)}) * {self.expr(scope, depth - 1)}"
        if r < 0.8 and self.relations:
            return f"{self.access(scope, self.relations)} * {self.expr(scope, depth - 1)}"
        if r < 0.88:
            return f"({self.expr(scope, depth - 1)}) ** {self.pick(POWERS)}"
        if r < 0.93:
            return f"-({self.expr(scope, depth - 1)})"
        return self.access(scope, self.tensors)

    # --- the program --------------------------------------------------------------------------
    def program(self) -> Case:
        n_sizes = 1 + int(self.chance(0.6))
        for s in ("N", "M")[:n_sizes]:
            self.sizes[s] = int(self.pick((1, 2, 3, 4, 3, 2, 0) if self.chance(0.97) else (5, 6)))
        params: list[str] = []
        shapes: dict[str, tuple[int | str, ...]] = {}
        for k in range(1 + int(self.rng.integers(3))):
            dims = tuple(self.dim() for _ in range(int(self.pick((0, 1, 1, 2, 2)))))
            name = "xAB"[k] if k else ("x" if len(dims) < 2 else "A")
            name = name if name not in shapes else f"{name}{k}"
            self.tensors.append(_Tensor(name, dims))
            shapes[name] = dims
        if self.chance(0.3):
            dims = tuple(self.dim() for _ in range(int(self.pick((1, 2)))))
            self.relations.append(_Tensor("R", dims))
            shapes["R"] = dims
        if self.chance(0.3):
            self.tensors.append(_Tensor("w", ()))
            shapes["w"] = ()
        # only sizes some parameter binds may be used
        used = {d for dims in shapes.values() for d in dims}
        self.sizes = {s: n for s, n in self.sizes.items() if s in used}
        for name, dims in shapes.items():
            kind = "rel" if name == "R" else ""
            params.append(f"{name}: {kind}[{', '.join(str(d) for d in dims)}]")
        lines = [f"def f({', '.join(params)}):"]
        depth = int(self.pick((2, 3, 3, 4)))
        for k in range(int(self.pick((0, 1, 1, 2, 2, 3)))):
            self.fresh = 0
            rank = int(self.pick((0, 1, 1, 2)))
            gens = [(self.index_var(), self.dim()) for _ in range(rank)]
            head = f"t{k}" if not gens else f"t{k}[{', '.join(f'{v}: {e}' for v, e in gens)}]"
            lines.append(f"    {head} = {self.expr(gens, depth)}")
            self.tensors.append(_Tensor(f"t{k}", tuple(e for _, e in gens)))
        self.fresh = 0
        r = self.rng.random()
        stmts = [t for t in self.tensors if t.name.startswith("t")]
        if r < 0.12 and stmts:
            lines.append(f"    return {self.pick(stmts).name}")
        elif r < 0.25:
            outs = [self.expr([], depth) for _ in range(2)]
            if stmts and self.chance(0.5):
                outs[1] = self.pick(stmts).name
            lines.append(f"    return {outs[0]}, {outs[1]}")
        else:
            lines.append(f"    return {self.expr([], depth)}")
        return Case("index", "\n".join(lines) + "\n", shapes, dict(self.sizes),
                    frozenset(t.name for t in self.relations))


def generate_index(rng: np.random.Generator) -> Case:
    """One random index-language program (deterministic given the generator's state)."""
    return _IndexGen(rng).program()
