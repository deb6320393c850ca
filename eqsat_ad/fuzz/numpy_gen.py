"""Random Python functions in the NumPy subset, written as module source text.

Independent of the test strategies. Shapes are tracked symbolically: a dimension is a token
(``N``, ``M``, or ``N-1`` for ``x[1:]``, ``N/2`` for ``x[::2]``) and two dimensions are only
combined when their tokens are equal, so a program stays valid when the fuzzer's reducer shrinks
the sizes. Constructs: elementwise built-ins, ``+ - * /``, powers, ``np.where`` with data
comparisons, ``np.maximum``/``minimum``/``clip``, axis sums / means / maxima (``keepdims`` too),
``@``, ``np.dot``, ``np.einsum``, ``.T``, slices, ``np.diag``/``trace``, accumulating ``for``
loops over an axis (with an ``if`` on the loop index), reassigning loops, tuple returns.
"""

from __future__ import annotations

import numpy as np

from .case import Case

__all__ = ["generate_numpy"]

Dims = tuple[str, ...]
UNARY = ("np.exp", "np.log", "np.tanh", "np.sin", "np.cos", "np.sqrt", "np.abs", "np.square",
         "np.sign", "-")
CONSTS = ("0.0", "1.0", "2.0", "0.5", "-1.5", "3.0", "1e-3", "100.0")
CMP = (">", "<", ">=", "<=")


class _NumpyGen:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.vars: dict[str, Dims] = {}
        self.extra: dict[str, Dims] = {}  # loop-indexed views (x[i]) inside a loop body
        self.lines: list[str] = []
        self.count = 0

    def pick(self, seq):  # noqa: ANN001, ANN201 - any sequence
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def new_name(self, stem: str = "t") -> str:
        self.count += 1
        return f"{stem}{self.count}"

    # --- views of the variables in scope --------------------------------------------------
    def views(self) -> dict[str, Dims]:
        out: dict[str, Dims] = dict(self.extra)
        for v, s in self.vars.items():
            out[v] = s
            if len(s) >= 1 and "-" not in s[0] and "/" not in s[0]:
                out[f"{v}[1:]"] = (f"{s[0]}-1",) + s[1:]
                out[f"{v}[:-1]"] = (f"{s[0]}-1",) + s[1:]
                out[f"{v}[::2]"] = (f"{s[0]}/2",) + s[1:]
            if len(s) >= 1:
                out[f"{v}[0]"] = s[1:]
                out[f"{v}[-1]"] = s[1:]
            if len(s) == 2:
                out[f"{v}.T"] = (s[1], s[0])
                out[f"{v}[:, 0]"] = (s[0],)
                if s[0] == s[1]:
                    out[f"np.diag({v})"] = (s[0],)
                    out[f"np.trace({v})"] = ()
        return out

    def dims_in_use(self) -> list[str]:
        return sorted({d for s in self.views().values() for d in s})

    def dim_expr(self, d: str) -> str:
        for text, s in self.views().items():
            if d in s:
                return f"{text}.shape[{s.index(d)}]"
        raise AssertionError(d)

    # --- expressions --------------------------------------------------------------------------
    def any(self, target: Dims, depth: int) -> str:
        """An expression whose shape broadcasts to ``target``."""
        if target and self.chance(0.25):
            return self.exact((), depth - 1) if self.chance(0.5) else self.pick(CONSTS)
        return self.exact(target, depth)

    def exact(self, target: Dims, depth: int) -> str:
        """An expression of exactly the shape ``target``."""
        leaves = [t for t, s in self.views().items() if s == target]
        if depth <= 0 or self.chance(0.15):
            if leaves:
                return self.pick(leaves)
            if not target:
                return self.pick(CONSTS)
            dims = ", ".join(self.dim_expr(d) for d in target)
            return f"np.full(({dims},), {self.pick(CONSTS)})"
        r = self.rng.random()
        d = depth - 1
        if r < 0.25:
            a, b = self.exact(target, d), self.any(target, d)
            if self.chance(0.5):
                a, b = b, a
            op = self.pick(("+", "-", "*", "/", "*"))
            if op == "/" and a in CONSTS and b in CONSTS:
                op = "*"  # Python itself refuses 0.5 / 0.0 (plain floats, not arrays)
            return f"({a} {op} {b})"
        if r < 0.4:
            fn = self.pick(UNARY)
            arg = self.exact(target, d)
            if fn == "-":
                return f"-({arg})"
            if self.chance(0.15):
                return f"({arg}) ** {self.pick(('2', '3', '0.5', '-1'))}"
            return f"{fn}({arg})"
        if r < 0.5:
            c = f"{self.exact(target, d)} {self.pick(CMP)} {self.any(target, d)}"
            return f"np.where({c}, {self.any(target, d)}, {self.any(target, d)})"
        if r < 0.57:
            fn = self.pick(("np.maximum", "np.minimum", "np.clip"))
            if fn == "np.clip":
                return f"np.clip({self.exact(target, d)}, -1.0, 1.0)"
            return f"{fn}({self.exact(target, d)}, {self.any(target, d)})"
        if r < 0.72:
            return self.reduction(target, d)
        if r < 0.87:
            return self.product(target, d)
        if r < 0.92 and len(target) == 2:
            leaves = [t for t, s in self.views().items() if s == target and "[" not in t]
            if leaves:
                v = self.pick(leaves)
                red = self.pick(("np.max", "np.sum", "np.mean", "np.min"))
                return f"({v} - {red}({v}, axis={self.pick((0, 1))}, keepdims=True))"
        return self.pick(leaves) if leaves else self.exact(target, 0)

    def reduction(self, target: Dims, d: int) -> str:
        if not self.dims_in_use():
            return self.exact(target, 0)
        extra = self.pick(self.dims_in_use())
        fn = self.pick(("np.sum", "np.sum", "np.mean", "np.max", "np.min", ".sum"))
        if len(target) >= 2:
            return self.exact(target, d)
        if not target and self.chance(0.5):
            shape = self.pick([s for s in self.views().values() if s] or [(extra,)])
            arg = self.exact(shape, d)
            return f"({arg}).sum()" if fn == ".sum" else f"{fn}({arg})"
        axis = self.pick((0, -1)) if target else 0
        shape = (extra,) + target if axis == 0 else target + (extra,)
        arg = self.exact(shape, d)
        if fn == ".sum":
            return f"({arg}).sum(axis={axis})"
        return f"{fn}({arg}, axis={axis})"

    def product(self, target: Dims, d: int) -> str:
        if not self.dims_in_use():
            return self.exact(target, 0)
        k = self.pick(self.dims_in_use())
        if not target:
            a, b = self.exact((k,), d), self.exact((k,), d)
            return self.pick((f"({a} @ {b})", f"np.dot({a}, {b})",
                              f"np.einsum('i,i->', {a}, {b})"))
        if len(target) == 1:
            a, b = self.exact((target[0], k), d), self.exact((k,), d)
            return self.pick((f"({a} @ {b})", f"np.dot({a}, {b})",
                              f"np.einsum('ij,j->i', {a}, {b})"))
        if len(target) == 2:
            a, b = self.exact((target[0], k), d), self.exact((k, target[1]), d)
            return self.pick((f"({a} @ {b})", f"np.einsum('ik,kj->ij', {a}, {b})",
                              f"np.einsum('ji->ij', {self.exact((target[1], target[0]), d)})"))
        return self.exact(target, d)

    # --- statements ---------------------------------------------------------------------------
    def target_shape(self) -> Dims:
        shapes = [s for s in self.views().values() if len(s) <= 2]
        return self.pick(shapes) if self.chance(0.8) else ()

    def assign(self, depth: int) -> None:
        target = self.target_shape()
        name = self.new_name()
        self.lines.append(f"    {name} = {self.exact(target, depth)}")
        self.vars[name] = target

    def loop(self, depth: int) -> None:
        candidates = [v for v, s in self.vars.items() if s]
        if not candidates:
            return self.assign(depth)
        x = self.pick(candidates)
        d = self.vars[x][0]
        shifted = self.chance(0.3)
        bound = self.pick((f"{x}.shape[0]", f"len({x})"))
        # the loop variable indexes every variable whose first axis is d
        self.extra = {f"{v}[i]": s[1:] for v, s in self.vars.items() if s and s[0] == d}
        if shifted:
            bound += " - 1"
            self.extra.update({f"{v}[i + 1]": s[1:] for v, s in self.vars.items()
                               if s and s[0] == d})
        acc_shape = () if self.chance(0.75) else self.pick(list(self.extra.values()))
        acc = self.new_name("s")
        if acc_shape:
            like = self.pick([t for t, s in self.extra.items() if s == acc_shape])
            self.lines.append(f"    {acc} = np.zeros_like({like.replace('[i + 1]', '[0]')})"
                              .replace("[i]", "[0]"))
        else:
            self.lines.append(f"    {acc} = 0.0")
        self.lines.append(f"    for i in range({bound}):")
        body = self.exact(acc_shape, depth - 1)
        self.extra = {}
        indent = "        "
        if self.chance(0.2):
            cmp = f"i {self.pick(('>', '<', '!=', '=='))} {self.pick((0, 1))}"
            self.lines.append(f"        if {cmp}:")
            indent += "    "
        if self.chance(0.5):
            self.lines.append(f"{indent}{acc} += {body}")
        else:
            self.lines.append(f"{indent}{acc} = {acc} + {body}")
        self.vars[acc] = acc_shape

    def reassign(self, depth: int) -> None:
        """A static loop that reassigns a variable: unrolled by the translator."""
        v = self.pick(list(self.vars))
        s = self.vars[v]
        self.lines.append(f"    for _ in range({self.pick((2, 3))}):")
        self.lines.append(f"        {v} = {self.exact(s, max(depth - 1, 1))}")

    def program(self) -> Case:
        names = ("N", "M")[: 1 + int(self.chance(0.6))]
        # sizes >= 2: x[1:] and x[::2] are not empty, so x[1:][0] and np.max(x[1:]) exist
        sizes = {n: int(self.pick((2, 3, 4, 3, 2))) for n in names}
        shapes: dict[str, tuple[int | str, ...]] = {}
        for k in range(1 + int(self.rng.integers(3))):
            shape = self.pick(((), (names[0],), (names[-1],), (names[0], names[-1]),
                               (names[-1], names[0]), (names[0], names[0]), (names[0],)))
            name = ("x", "y", "z")[k] if len(shape) < 2 else ("A", "B", "C")[k]
            shapes[name] = shape
            self.vars[name] = tuple(str(d) for d in shape)
        used = {d for s in shapes.values() for d in s}
        sizes = {n: v for n, v in sizes.items() if n in used}
        depth = int(self.pick((2, 2, 3, 3, 4)))
        for _ in range(int(self.pick((0, 1, 1, 2, 2, 3)))):
            r = self.rng.random()
            if r < 0.55:
                self.assign(depth)
            elif r < 0.9:
                self.loop(depth)
            else:
                self.reassign(depth)
        r = self.rng.random()
        if r < 0.1:
            ret = f"{self.exact((), depth)}, {self.pick(list(self.vars))}"
        elif r < 0.2:
            ret = self.exact(self.target_shape(), depth)
        else:
            ret = self.exact((), depth)
        self.lines.append(f"    return {ret}")
        head = f"def f({', '.join(shapes)}):"
        source = "import numpy as np\n\n\n" + "\n".join([head, *self.lines]) + "\n"
        return Case("numpy", source, shapes, sizes)


def generate_numpy(rng: np.random.Generator) -> Case:
    """One random NumPy-subset function (deterministic given the generator's state)."""
    return _NumpyGen(rng).program()
