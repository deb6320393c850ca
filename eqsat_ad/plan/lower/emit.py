"""Emitting lines of generated code, with the plan's kernels each line runs; index arithmetic,
alignment of arrays over named axes, masks and elementwise operations."""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...ir.errors import ProgramError
from ...ir.expr import (
    Access,
)
from ...ir.index import Affine, Dim
from ...ir.program import Program
from ..kernels import (
    Elementwise,
    Fill,
    Kernel,
    Mask,
)
from ..normal import Cond, FreshNames, common_denominator, sign_known
from ..poly import ONE, ZERO, Poly
from ..ranges import Axis
from ..split import SplitPrice
from .values import (
    _ADD,
    _ATOM,
    _MUL,
    _POW,
    _RESERVED,
    Decision,
    Value,
)

# ================================================================================================
# The code generator
# ================================================================================================


class Emitter:
    def __init__(self, prog: Program, sizes: Mapping[str, int] | None, strict: bool,
                 structured: bool = False, sparse: frozenset[str] = frozenset(),
                 signed: frozenset[str] = frozenset()) -> None:
        self.prog = prog
        # Relations passed by their members (SparseRelation): read dense only as a fallback.
        self.sparse = frozenset(n for n in sparse
                                if any(p.name == n and p.kind == "relation" for p in prog.params))
        self.sizes = dict(sizes or {})
        self.strict = strict
        self.lines: list[str] = []
        self.decisions: list[Decision] = []
        self.finite_noted: dict[Decision, int] = {}  # note_finite's decisions: their position
        self.kernels: list[Kernel] = []  # the plan, in the order of the lines that run it
        self.extras: dict[str, Any] = {}
        self.shapes: dict[str, tuple[Dim, ...]] = {p.name: p.shape for p in prog.params}
        self.kinds: dict[str, str] = {p.name: p.kind for p in prog.params}
        self.risky_vars: set[str] = {p.name for p in prog.params} if strict else set()
        used = set(prog.param_names) | {s.name for s in prog.statements} | set(prog.size_names())
        for s in prog.statements:
            used |= {iv.name for iv in s.indices}
        self.names = FreshNames(used, flatten=not strict)
        self.py: dict[str, str] = {}
        taken = set(used)
        for n in list(prog.param_names) + [s.name for s in prog.statements] + list(
            prog.size_names()
        ):
            self.py[n] = self._pyname(n, taken)
        for n in sorted(self.sparse):  # the member count of a sparse relation: a size symbol
            self.py[f"nnz_{n}"] = self._pyname(f"nnz_{n}", taken)
        self.stmt = ""
        self.tmp = 0
        # (to lower a variant of the program)
        self.options = (structured, frozenset(sparse), frozenset(signed))
        self.indent = 0  # loops the next line is in (eqsat_ad.plan.lower.loops)
        self.loop_symbols: set[str] = set()  # their variables: size-like symbols in indices
        self.loop_calls = 0  # kernel calls the loops run beyond one of each
        self.loop_start = 0  # the first line of the loop body being emitted
        self.trials = 0  # trial lowerings run (eqsat_ad.plan.lower.loops.Loops.trial)
        self.trial_prices: dict[tuple, SplitPrice] = {}  # the statement's: Loops.trial_price
        self.aranges: dict[tuple, str] = {}
        self.memo: dict[str, str] = {}  # code -> temporary already holding it
        self.facts: list[Affine] = []  # index-free a >= 0 known to hold (guarded by an if)
        # Statements returned whole: they must be fresh arrays (others may be read-only views).
        self.returned = {o.name for o in prog.outputs if isinstance(o, Access) and not o.indices}
        # Statements read by a divisor or a negative power's base (the sign of a zero shows).
        self.zero_sign = prog.zero_sign_reads() | signed
        # Outputs that may be returned as a Diagonal / Sparse: returned whole and read by nothing.
        self.structured: frozenset[str] = prog.unread_outputs() if structured else frozenset()

    @staticmethod
    def _pyname(name: str, taken: set[str]) -> str:
        if name in _RESERVED or keyword.iskeyword(name) or name.startswith("_"):
            base = f"v{name}" if name.startswith("_") else f"{name}_"
            while base in taken:
                base += "_"
            taken.add(base)
            return base
        return name

    # --- small helpers -------------------------------------------------------------------------
    def nonneg(self, a: Affine) -> bool:
        """``a >= 0`` provably, for sizes >= 1 and the conditions known to hold here."""
        return sign_known(a) == 1 or any(sign_known(a - f) == 1 for f in self.facts)

    def emit(self, line: str, kernels: tuple[Kernel, ...] = ()) -> None:
        """Append a line of the function body; ``kernels`` are what it runs."""
        self.lines.append("    " * (1 + self.indent) + line)
        self.kernels += [replace(k, line=len(self.lines) - 1) for k in kernels]

    def mark(self) -> tuple[int, int, int]:
        """The state to roll back to: lines, kernels and decisions emitted so far."""
        return len(self.lines), len(self.kernels), len(self.decisions)

    def facts_unsafe(self, mark: tuple[int, int, int]) -> bool:
        """Whether lines were emitted since ``mark`` (outside a guard the facts assume)."""
        return len(self.lines) > mark[0]

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Forget the lines (and the temporaries they define) emitted since ``mark``."""
        gone = {line.split(" = ", 1)[0].strip() for line in self.lines[mark[0]:]}
        del self.lines[mark[0]:]
        del self.kernels[mark[1]:]
        del self.decisions[mark[2]:]
        self.memo = {k: v for k, v in self.memo.items() if v not in gone}
        self.aranges = {k: v for k, v in self.aranges.items() if v not in gone}

    def kernel(self, cls: type[Kernel], space: Poly, alloc: Poly | None = None,
               detail: str = "") -> tuple[Kernel, ...]:
        """One kernel of the current statement (``alloc`` defaults to ``space``)."""
        return (cls(self.stmt, space, space if alloc is None else alloc, detail),)

    def axis_count(self, ax: Axis) -> Poly:
        """The number of points of an axis as a polynomial (its extent when bounds are max/min
        of several, an upper bound)."""
        if ax.is_full() or len(ax.lo) != 1 or len(ax.hi) != 1:
            return Poly.of_dim(ax.extent)
        d = ax.hi[0] - ax.lo[0]
        if d.size_names() & self.loop_symbols:  # (bounds at a loop's variable)
            return Poly.of_dim(ax.extent)
        if d.is_constant():
            return Poly.const(max(d.const, 0))  # an empty range has no points
        coefs = [c for _, c in d.sizes]
        if all(c <= 0 for c in coefs):  # never more than d.const points (sizes are >= 0)
            return Poly.const(0) if d.const <= 0 else Poly.of_dim(ax.extent)
        if any(c < 0 for c in coefs):  # N - M + c may be negative: the extent bounds it
            return Poly.of_dim(ax.extent)
        out = Poly.const(d.const)
        for n, c in d.sizes:
            out = out + Poly.symbol(n) * Poly.const(c)
        return out

    def numel_poly(self, axes: Sequence[str], grid: Mapping[str, Axis]) -> Poly:
        out = ONE
        for a in axes:
            out = out * self.axis_count(grid[a])
        return out

    def pass_over(self, cls: type[Kernel], target: Sequence[str], grid: Mapping[str, Axis],
                  detail: str, *operands: Value) -> tuple[tuple[Kernel, ...], Poly]:
        """The kernels of a pass writing an array over ``target`` from ``operands`` (none of
        its own for 0-d arithmetic) and the size of its result."""
        inner = tuple(k for v in operands for k in v.kernels)
        if not target:
            return inner, ONE
        size = self.numel_poly(target, grid)
        (own,) = self.kernel(cls, size, size, detail)
        # (its operands' temporaries are freed once it has run: the plan's peak memory)
        return inner + (replace(own, args=tuple(len(v.kernels) for v in operands)),), size

    def decide(self, kind: str, detail: str = "", axes: Sequence[str] = (), in_sum=False) -> None:
        self.decisions.append(Decision(self.stmt, kind, detail, tuple(axes), in_sum))

    def assign(self, name: str, code: str, kernels: tuple[Kernel, ...] = ()) -> None:
        """``name = code``; a temporary just computed is renamed instead of copied."""
        last = self.lines[-1] if self.lines else ""
        pad = "    " * (1 + self.indent)
        if re.fullmatch(r"_t\d+", code) and last.startswith(f"{pad}{code} = "):
            self.lines[-1] = f"{pad}{name} = {last[len(pad) + len(code) + 3:]}"
            self.kernels += [replace(k, line=len(self.lines) - 1) for k in kernels]
            # the temporary no longer exists: later uses of its code recompute it (a statement
            # variable may still be written in place, so it cannot stand for the code)
            for k in [k for k, t in self.memo.items() if t == code]:
                del self.memo[k]
            return
        self.emit(f"{name} = {code}", kernels)

    def shared(self, v: Value, create: bool) -> Value:
        """``v`` read from the temporary that already holds its code (or a new one if
        ``create``): common subexpressions are computed once."""
        if v.code in self.memo or create:
            return replace(v, code=self.temp(v.code, kernels=v.kernels), prec=_ATOM, kernels=())
        return v

    def temp(self, code: str, base: str = "_t", kernels: tuple[Kernel, ...] = ()) -> str:
        """A temporary holding ``code``; the same code computed before is reused (values are
        immutable, so this is common-subexpression elimination across statements)."""
        if code in self.memo:
            return self.memo[code]
        self.tmp += 1
        name = f"{base}{self.tmp}"
        self.emit(f"{name} = {code}", kernels)
        self.memo[code] = name
        inner = _checked_operand(code)
        if inner is not None:
            # a checked value is the value (np.exp(z) is not computed twice), and checking it
            # again is the value itself (a sum of it is the same sum, computed once)
            self.memo.setdefault(inner, name)
            self.memo[f"_rt.checked({name})"] = name
        return name

    def dim_code(self, d: Dim) -> str:
        return str(d) if isinstance(d, int) else self.py[d.name]

    def aff_code(self, a: Affine) -> str:
        """Code of an index-free affine expression with integer coefficients."""
        parts: list[tuple[bool, str]] = []
        for n, c in a.sizes:
            if c.denominator != 1:
                raise AssertionError(f"fractional size coefficient in bound {a}")
            k = abs(c.numerator)
            text = self.py[n] if k == 1 else f"{k} * {self.py[n]}"
            parts.append((c < 0, text))
        if a.const != 0 or not parts:
            if a.const.denominator != 1:
                raise AssertionError(f"fractional constant in bound {a}")
            parts.append((a.const < 0, str(abs(a.const.numerator))))
        out = ("-" if parts[0][0] else "") + parts[0][1]
        for neg, text in parts[1:]:
            out += (" - " if neg else " + ") + text
        return out

    def bound_code(self, bounds: tuple[Affine, ...], lower: bool) -> str:
        codes = [self.aff_code(b) for b in bounds]
        if len(codes) == 1:
            return codes[0]
        return f"{'max' if lower else 'min'}({', '.join(codes)})"

    def count_code(self, ax: Axis) -> str:
        """Number of points of an axis (0 for an empty range)."""
        if ax.is_full():
            return self.dim_code(ax.extent)
        if len(ax.lo) == 1 and len(ax.hi) == 1:
            diff = ax.hi[0] - ax.lo[0]
            if self.nonneg(diff):
                return self.aff_code(diff)
            return f"max({self.aff_code(diff)}, 0)"
        lo, hi = self.bound_code(ax.lo, True), self.bound_code(ax.hi, False)
        return f"max({hi} - ({lo}), 0)" if " " in lo else f"max({hi} - {lo}, 0)"

    def arange(self, ax: Axis) -> Value:
        key = (ax.lo, ax.hi, ax.extent if ax.is_full() else None)
        if key not in self.aranges:
            code = (
                f"np.arange({self.dim_code(ax.extent)})"
                if ax.is_full()
                else f"np.arange({self.bound_code(ax.lo, True)}, {self.bound_code(ax.hi, False)})"
            )
            n = self.axis_count(ax)
            self.aranges[key] = self.temp(code, f"_{ax.name}_",
                                          self.kernel(Fill, n, n, "np.arange"))
        return Value(self.aranges[key], (ax.name,), size=self.axis_count(ax))

    # --- alignment -----------------------------------------------------------------------------
    @staticmethod
    def order(grid: Mapping[str, Axis], *axes_lists: Sequence[str]) -> tuple[str, ...]:
        names: set[str] = set()
        for a in axes_lists:
            names |= set(a)
        return tuple(n for n in grid if n in names)

    @staticmethod
    def align(v: Value, target: Sequence[str], need: float | bool = _ATOM) -> str:
        """Code of ``v`` transposed and expanded to broadcast over ``target``.

        ``need``: the precedence the context needs (False: none, e.g. a call argument).
        """
        present = [a for a in target if a in v.axes]
        perm = [v.axes.index(a) for a in present]
        if not v.axes or (perm == list(range(len(perm))) and len(present) == len(target)):
            return v.paren(float(need)) if need is not False else v.code
        code = v.paren()
        if perm != list(range(len(perm))):
            code = f"{code}.T" if len(perm) == 2 else f"np.transpose({code}, {tuple(perm)})"
        if len(present) < len(target):
            idx = ", ".join(":" if a in v.axes else "None" for a in target)
            code = f"{code}[{idx}]"
        return code

    def to_num(self, v: Value) -> Value:
        if not v.mask:
            return v
        if not v.axes:
            return Value(f"float({v.code})", (), kernels=v.kernels)
        (cast,) = self.kernel(Elementwise, v.size, v.size, "astype")
        return Value(f"{v.paren()}.astype(_dt)", v.axes, size=v.size,
                     kernels=v.kernels + (replace(cast, args=(len(v.kernels),)),))

    def binop(self, op: str, a: Value, b: Value, grid: Mapping[str, Axis]) -> Value:
        a, b = self.shared(self.to_num(a), False), self.shared(self.to_num(b), False)
        if a.code == b.code and a.axes == b.axes and a.axes and a.prec < _ATOM:
            a = b = self.shared(a, True)  # (e) * (e): e computed once
        target = self.order(grid, a.axes, b.axes)
        risky = a.risky or b.risky or op == "/"
        ks, size = self.pass_over(Elementwise, target, grid, op, a, b)
        for v in (a, b):
            if len(v.axes) > 1 and [x for x in target if x in v.axes] != list(v.axes):
                # an operand read against its layout (A[i, j] + A[j, i]): a strided pass
                ks += self.kernel(Elementwise, v.size, ZERO, "transposed read")
        level = _ADD if op in "+-" else _MUL
        left = self.align(a, target, level)
        # (a right operand of the same precedence keeps its parentheses: a * (1 / b) is not
        # (a * 1) / b in IEEE arithmetic, 1 / 5e-324 overflows; the interpreter's order)
        right = self.align(b, target, level + 0.5)
        if op == "/" and not target:
            # two Python numbers: 1 / 0 would raise ZeroDivisionError, NumPy's gives inf
            return Value(f"np.divide({self.align(a, target, False)}, "
                         f"{self.align(b, target, False)}, dtype=_dt)", target, risky=True,
                         kernels=ks, size=size)
        if op == "/" and a.code == "1" and not a.axes and b.kernels and b.axes == tuple(target):
            # 1 / e as e ** -1, NumPy's reciprocal (the same IEEE quotient and flags), which it
            # computes in e's temporary; 1 / e allocates a new array while e is still held
            ks = ks[:-1] + (replace(ks[-1], detail="**", args=(len(b.kernels),)),)
            return Value(f"{b.paren()} ** (-1)", target, risky=True, prec=_POW, kernels=ks,
                         size=size)
        return Value(f"{left} {op} {right}", target, risky=risky, prec=level, kernels=ks,
                     size=size)

    def where(self, mask: Value, v: Value, grid: Mapping[str, Axis]) -> Value:
        target = self.order(grid, mask.axes, v.axes)
        v = self.to_num(v)
        if not v.axes:  # np.where(m, N, 0) is an int array
            v = Value(f"_dt({v.code})", (), risky=v.risky, kernels=v.kernels)
        ks, size = self.pass_over(Mask, target, grid, "np.where", mask, v)
        if not target:  # (0-d, but a call all the same)
            ks += self.kernel(Mask, ONE, ONE, "np.where")
        return Value(
            f"np.where({self.align(mask, target, False)}, {self.align(v, target, False)}, 0)",
            target, risky=v.risky, kernels=ks, size=size,
        )

    def conj(self, masks: list[Value], grid: Mapping[str, Axis]) -> Value | None:
        if not masks:
            return None
        if len(masks) == 1:
            return masks[0]
        target = self.order(grid, *(m.axes for m in masks))
        code = " & ".join(f"{self.align(m, target)}" for m in masks)
        ks, size = self.pass_over(Mask, target, grid, "&", *masks)
        return Value(code, target, mask=True, prec=_ADD, kernels=ks, size=size)

    def disj(self, masks: list[Value], grid: Mapping[str, Axis]) -> Value:
        """Where one of ``masks`` (at least one) holds."""
        if len(masks) == 1:
            return masks[0]
        target = self.order(grid, *(m.axes for m in masks))
        code = " | ".join(f"{self.align(m, target)}" for m in masks)
        ks, size = self.pass_over(Mask, target, grid, "|", *masks)
        return Value(code, target, mask=True, prec=_ADD, kernels=ks, size=size)

    # --- index arithmetic ----------------------------------------------------------------------
    def index_value(self, a: Affine, grid: Mapping[str, Axis]) -> tuple[Value, int]:
        """Integer code over the grid of ``q * a`` and the denominator ``q``."""
        q = common_denominator(a)
        s = a.scale(q) if q != 1 else a
        terms: list[Value] = []
        for n, c in s.index:
            if n not in grid:
                raise ProgramError(f"index {n!r} is not bound by a generator or a Sum")
            ar = self.arange(grid[n])
            k = int(c)
            terms.append(ar if k == 1 else Value(
                f"{k} * {ar.code}", ar.axes, prec=_MUL, size=ar.size,
                kernels=self.kernel(Elementwise, ar.size, ar.size, "index")))
        rest = Affine((), s.sizes, s.const)
        target = self.order(grid, *(t.axes for t in terms))
        code = " + ".join(self.align(t, target, _ADD) for t in terms)
        if rest != Affine() or not terms:
            rc = self.aff_code(rest)
            if not terms:
                code = rc
            elif rc.startswith("-"):
                code += f" - {rc[1:]}"  # aff_code writes "-N + 1" as (-N) + 1
            else:
                code += f" + {rc}"
        simple = len(terms) == 1 and rest == Affine() and int(s.index[0][1]) == 1
        if simple or not target:
            ks, size = tuple(k for t in terms for k in t.kernels), self.numel_poly(target, grid)
        else:
            ks, size = self.pass_over(Elementwise, target, grid, "index", *terms)
        return Value(code, target, prec=_ATOM if simple else _ADD, kernels=ks, size=size), q

    def cond_mask(self, c: Cond, grid: Mapping[str, Axis], in_sum: bool = False) -> Value:
        if c.kind == "rel":
            assert c.rel is not None
            v = self.access(c.rel.name, c.rel.indices, grid, relation=True)
            self.decide("mask", f"relation {c.rel.name}", v.axes, in_sum)
            return replace(v, mask=True)
        if c.kind == "int":
            iv, q = self.index_value(c.aff, grid)
            code = f"{iv.paren()} % {q} == 0"
            axes = iv.axes
            parts = (iv,)
        else:
            pos, neg = c.sides()
            lhs, _ = self.index_value(pos, grid)
            rhs, _ = self.index_value(neg, grid)
            axes = self.order(grid, lhs.axes, rhs.axes)
            op = dict(ge=">=", eq="==", ne="!=")[c.kind]
            code = f"{self.align(lhs, axes, _ADD)} {op} {self.align(rhs, axes, _ADD)}"
            parts = (lhs, rhs)
        self.decide("mask", code, axes, in_sum)
        ks, size = self.pass_over(Mask, axes, grid, code, *parts)
        return Value(f"({code})", axes, mask=True, kernels=ks, size=size)

    # --- accesses ------------------------------------------------------------------------------


def _checked_operand(code: str) -> str | None:
    """``e`` when ``code`` is ``_rt.checked(e)`` (which returns ``e``'s value or raises)."""
    head = "_rt.checked("
    if not (code.startswith(head) and code.endswith(")")):
        return None
    inner, depth = code[len(head):-1], 0
    for ch in inner:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return None  # _rt.checked(a) + f(b): not one call
    return inner if depth == 0 else None
