"""Scalar loop nests for Tensor SSA statements: the source a fused kernel runs.

A statement ``y[I] = body`` becomes one loop per generator index and, inside, straight-line
scalar code for the body: one loop per ``Sum`` (its range narrowed by the bracket conditions on
the summed index, so a band or an equality visits only its points), reads guarded by their
in-range conditions (out-of-range and fractional reads are an ordinary 0.0, as the semantics
says), and a fused producer's body evaluated in place of its read (:class:`LoopWriter`).

Every value carries a *strong-zero flag* (code of a boolean, or ``None`` when it cannot be a
strong zero): brackets, relation reads, data comparisons, the literal 0 and empty sums are
strong zeros, a product with a strong zero is 0 whatever the other factor is, and a stored value
(a read, or a fused producer's value) is an ordinary number (docs/semantics.md). Constants are
written ``F(c)`` with ``F`` the module's float type, so float32 programs compute in float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ...ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    free_indices,
)
from ...ir.index import Affine, Dim, dim_str
from ...ir.program import Statement
from .bands import band_sum
from .brackets import bounds, solve_order
from .code import both, either, literal, shifted, speculable
from .compact import extreme
from .functions import LOOP_FUNCTIONS
from .interior import Index, bounds_of, exact_of, requirement, signed, unproved
from .reuse import hoist_key, read_back, term_buffer
from .rows import row_sum
from .scans import ScanForm
from .tiles import interchange, jammed, tile_leaf, view

__all__ = ["UNROLL", "LoopWriter", "Unsupported"]

UNROLL = 9
"""A summed index confined to a window of at most this many points is unrolled into taps."""


class Unsupported(Exception):
    """A statement the loop writer does not lower (the NumPy backend runs it instead)."""


# Data comparisons: a condition on the arguments (1 where true, a strong zero elsewhere).
_COMPARISONS: dict[str, Callable[[Sequence[str]], str]] = {
    "gt": lambda a: f"{a[0]} > {a[1]}", "ge": lambda a: f"{a[0]} >= {a[1]}",
    "eq": lambda a: f"{a[0]} == {a[1]}", "ne": lambda a: f"not ({a[0]} == {a[1]})",
    "ngt": lambda a: f"not ({a[0]} > {a[1]})", "nge": lambda a: f"not ({a[0]} >= {a[1]})",
    "gt0": lambda a: f"{a[0]} > F(0)",
}


@dataclass
class LoopWriter:
    """Writes the scalar code of statements. ``shapes``: every array's shape; ``fused``: the
    producers whose body is evaluated where they are read; ``relations``: boolean parameters."""

    shapes: Mapping[str, tuple[Dim, ...]]
    fused: Mapping[str, Statement]
    relations: frozenset[str]
    lines: list[str] = field(default_factory=list)
    depth: int = 0
    counter: int = 0
    memo: dict = field(default_factory=dict)
    blocks: list[int] = field(default_factory=list)
    # Running sums along the innermost output index (set by the kernel writer).
    scans: dict = field(default_factory=dict)
    scan_outer: str | None = None
    scan_line: int = -1
    scan_blocks: int = 0
    sum_depth: int = 0
    # Loop partitioning (.interior): the innermost output variable whose interior this writes,
    # and the bounds (as affines of sizes) of the guards it dropped there.
    interior: str | None = None
    row: str | None = None  # the next outer output variable, in its interior rows
    row_lows: list = field(default_factory=list)
    row_highs: list = field(default_factory=list)
    tag: str = ""  # names the hoisted sums of one version of a kernel's rows apart
    lows: list = field(default_factory=list)
    highs: list = field(default_factory=list)
    # Hoisting: a sum free of the innermost output variable ``hoist_var`` is computed once per
    # point of the outer loops (``outer_vars``), its lines going to ``pre`` (at ``pre_depth``),
    # before the innermost loop; ``hoisted`` (shared by the writers of one kernel) remembers it.
    hoist_var: str | None = None
    outer_vars: frozenset = frozenset()
    hoisted: dict = field(default_factory=dict)
    pre: list = field(default_factory=list)
    pre_depth: int = 0
    prefix: str = ""
    top: list | None = None  # a sum over no free index at all: computed once, at the kernel top
    # Tiled interchange (.tiles): the interior writer's sums accumulated per tile (tile_pre,
    # at tile_depth, from the top block tile_blocks); a sub-writer's tile variable and views.
    tile_pre: list | None = None
    tile_depth: int = 0
    tile_blocks: int = -1
    tile_pre_sums: list = field(default_factory=list)
    tile_var: str | None = None
    views: list | None = None
    view_keys: dict = field(default_factory=dict)
    view_codes: frozenset = frozenset()
    # in a pass of jammed terms (.tiles.jammed): each jammed value's code -> the pass's first
    # value's code and its offset from it, so the pass reads one view per array
    jam: dict = field(default_factory=dict)
    # arrays held in a buffer from an offset on (a sliding window, .windows): their last
    # index read at ``index - shift[name]`` (guards still on the index itself)
    shift: dict = field(default_factory=dict)
    # reads at the interior's point index as unsigned (a kernel over a range of points, whose
    # interior's start LLVM does not see is not negative: a signed index takes Numba's
    # wraparound branch, which keeps the read from vectorizing)
    unsigned_interior: bool = False
    # the interior's bounds, once known (a second writing of it, .nests): brackets that hold
    # at every point of it are written as their true branch; before that, the conditions that
    # might (whether a second writing would gain)
    known: tuple[list, list] | None = None
    conditions: list = field(default_factory=list)
    # arrays read from a copy with their first axis last (a pair loop's, .pairs): by name
    rotated: dict = field(default_factory=dict)
    # terms of hoisted row sums read back from their row buffer at the points (.reuse), and
    # the output's row (``_out[i]``) when the first such sum may use it as its buffer
    terms: dict = field(default_factory=dict)
    out_row: str | None = None
    # sums of a window of constant width along an index run as block passes at the kernel top
    # (.bands; not in a sliding window's kernel, which runs a chunk of the points at a call)
    bands: bool = False
    band_stream: Any = None  # the block pass whose terms this writes (.bands.BandStream)
    # the kernel's output and its point index, when a band's pass may fill it (.bands)
    out_point: tuple[str, str, Dim] | None = None

    # --- small pieces --------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def open(self) -> None:
        """Enter a new block (a loop body or a guarded branch)."""
        self.counter += 1
        self.blocks.append(self.counter)
        self.depth += 1

    def close(self) -> None:
        self.blocks.pop()
        self.depth -= 1
        head = self.lines[-1] if self.lines else ""
        if (head.split("#")[0].rstrip().endswith(":") and head.startswith("    " * self.depth)
                and not head.startswith("    " * self.depth + " ")):
            # nothing was written inside (every term a strong zero): no loop, no guard
            self.lines.pop()

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.prefix}{self.counter}"

    def affine(self, a: Affine, env: Mapping[str, Index]) -> tuple[str, int]:
        """Integer code for ``a`` scaled by its common denominator, and that denominator."""
        den = a.const.denominator
        for _, c in a.index + a.sizes:
            den = den * c.denominator // math.gcd(den, c.denominator)
        parts: list[str] = []
        for name, c in a.index:
            if name not in env:
                raise Unsupported(f"index {name} is not in scope")
            parts.append(self._term(c * den, env[name].code))
        for name, c in a.sizes:
            parts.append(self._term(c * den, name))
        k = int(a.const * den)
        if k or not parts:
            parts.append(str(k))
        code = " + ".join(parts).replace("+ -", "- ")
        return code, den

    @staticmethod
    def _term(c: Fraction, code: str) -> str:
        c = int(c)
        atom = code if code.isidentifier() or code.isdigit() else f"({code})"
        return atom if c == 1 else f"-{atom}" if c == -1 else f"{c} * {atom}"

    def holds_inside(self, lo: Affine, hi: Affine, d: Dim) -> bool:
        """In an interior: whether the guard ``0 <= a < d``, for ``a`` between ``lo`` and
        ``hi``, is dropped (then the interior is narrowed to where it holds)."""
        for var, lows, highs in ((self.interior, self.lows, self.highs),
                                 (self.row, self.row_lows, self.row_highs)):
            req = None if var is None else requirement(var, lo, hi, d)
            if req is not None:
                lows.append(req[0])
                highs.append(req[1])
                return True
        return False

    def _in_range(self, idx: Sequence[Affine], dims: Sequence[Dim],
                  env: Mapping[str, Index]) -> tuple[list[str], list[str]]:
        """Index codes for a read and the conditions that it is in range and integral."""
        codes: list[str] = []
        conds: list[str] = []
        for a, d in zip(idx, dims, strict=True):
            k = a.const
            if a.is_constant() and (isinstance(d, int) or k < 1):
                # decided here: a constant guard such as ``0 < 2`` is noise to read, and
                # Numba 0.68 has failed to type kernels that prune such branches (a size is
                # at least 1 in a loop nest: an empty tensor runs the NumPy backend's code)
                inside = k.denominator == 1 and 0 <= k and (k == 0 or k < d)
                codes.append(str(int(k)) if inside else "0")
                conds += [] if inside else ["False"]
                continue
            code, den = self.affine(a, env)
            if den != 1:
                conds.append(f"({code}) % {den} == 0")
                code = f"({code}) // {den}"
            codes.append(code)
            var = a.as_var()
            if var is not None and env[var].extent is not None and env[var].extent == d:
                # a loop variable over exactly this axis (or a tap inside it): not negative, so
                # in the interior the read is unsigned (no wraparound select for Numba)
                if (self.unsigned_interior and env[var].code == self.interior) or (
                        self.interior is not None and (env[var].exact is not None
                                                       or env[var].inside)):
                    codes[-1] = f"np.uintp({code})"
                continue
            inside = self.interior is not None or self.row is not None
            b = bounds_of(a, env) if den == 1 and inside else None
            if b is not None and self.holds_inside(b[0], b[1], d):
                # in range everywhere in the interior: unsigned, so Numba adds no wraparound
                # branch for negative indices
                codes[-1] = f"np.uintp({code})" if not code.isdigit() else code
                if self.interior is not None and not self.shift and abs(
                        b[0].coeff(self.interior)) > 1:
                    # a strided read: LLVM vectorizes it with gathers, slower on the machines
                    # measured (E9: 3x) than the scalar loop it keeps with the index clamped
                    # to the axis (a no-op here: the index is in range)
                    codes[-1] = f"min({codes[-1]}, np.uintp({dim_str(d)} - 1))"
                continue
            nonneg = a.const >= 0 and all(c > 0 for _, c in a.index + a.sizes)
            atom = code if code.isidentifier() or code.isdigit() else f"({code})"
            conds.append(f"{atom} < {dim_str(d)}" if nonneg else f"0 <= {atom} < {dim_str(d)}")
        return codes, conds

    # --- expressions ---------------------------------------------------------------------------
    def expr(self, e: Expr, env: Mapping[str, Index]) -> tuple[str, str | None]:
        """Code of ``e``'s value and of its strong-zero flag (lines it needs are emitted)."""
        if self.terms and (kept := read_back(self, e, env)) is not None:
            return kept
        if isinstance(e, Const):
            return (literal(0.0), "True") if e.value == 0 else (literal(e.value), None)
        if isinstance(e, Access):
            return self.read(e, env)
        if isinstance(e, Bracket):
            p = e.pred if self.interior is None or self.views is not None else unproved(
                e.pred, self.interior, env, self.known, self.conditions)
            if p is None:  # true at every point of the interior: 1, never a strong zero
                return "F(1)", None
            c = self.pred(p, env)
            if c in ("True", "False"):
                return ("F(1)", None) if c == "True" else (literal(0.0), "True")
            return f"(F(1) if {c} else F(0))", f"not ({c})"
        if isinstance(e, Neg):
            v, z = self.expr(e.arg, env)
            if z is None:
                return f"(-{v})", None
            # a negated strong zero is +0.0 (docs/semantics.md): its reciprocal is +inf
            return ("F(0)", "True") if z == "True" else (f"(F(0) if {z} else -{v})", z)
        if isinstance(e, Binary):
            return self.binary(e, env)
        if isinstance(e, Pow):
            v, z = self.expr(e.base, env)
            return self.power(v, e.exponent), z if e.exponent > 0 else None
        if isinstance(e, Call):
            return self.call(e, env)
        if isinstance(e, Sum):
            return self.sum(e, env)
        raise Unsupported(f"no loop code for {type(e).__name__}")

    def binary(self, e: Binary, env: Mapping[str, Index]) -> tuple[str, str | None]:
        a, az = self.expr(e.lhs, env)
        b, bz = self.expr(e.rhs, env)
        if e.op == "*" and a == "F(1)" and az is None:  # 1 * b is b (inf, nan and -0 too)
            return b, bz
        if e.op == "*" and b == "F(1)" and bz is None:
            return a, az
        if e.op in "+-":
            if az == "True" and e.op == "+":
                return b, bz
            if bz == "True":
                return a, az
            return f"({a} {e.op} {b})", both(az, bz)
        if e.op == "*":
            z = either(az, bz)
            if z is None:
                return f"({a} * {b})", None
            if z == "True":
                return "F(0)", "True"
            # A bracket or data comparison is 1 wherever it is not a strong zero.
            prod = b if _unit(e.lhs) else a if _unit(e.rhs) else f"{a} * {b}"
            if not prod.isidentifier() and speculable(prod):
                # computed before the choice (its reads are in range): a select, not a branch
                # around loads (a dense relation mask mispredicts the branch at every other
                # term, and a branch keeps a loop from vectorizing)
                value = self.fresh("_r")
                self.emit(f"{value} = {prod}")
                prod = value
            return f"(F(0) if {z} else {prod})", z
        if e.op == "/":
            if az is None:
                return f"({a} / {b})", None
            if az == "True":
                return "F(0)", "True"
            return f"(F(0) if {az} else {a} / {b})", az
        raise Unsupported(f"operator {e.op!r}")

    @staticmethod
    def power(v: str, k: float) -> str:
        special = {1: v, 2: f"({v} * {v})", -1: f"(F(1) / {v})", 0.5: f"np.sqrt({v})"}
        return special.get(k, f"({v} ** {literal(k)})")

    def call(self, e: Call, env: Mapping[str, Index]) -> tuple[str, str | None]:
        args = [self.expr(a, env)[0] for a in e.args]
        if e.fn in _COMPARISONS:
            c = _COMPARISONS[e.fn](args)
            return f"(F(1) if {c} else F(0))", f"not ({c})"
        if e.fn not in LOOP_FUNCTIONS:
            raise Unsupported(f"function {e.fn!r} has no loop form")
        fn = LOOP_FUNCTIONS[e.fn]
        return f"{fn}({', '.join(args)})", None

    def pred(self, p: Pred, env: Mapping[str, Index]) -> str:
        if isinstance(p, And):
            parts = [self.pred(q, env) for q in p.preds]
            if "False" in parts:
                return "False"
            return " and ".join(f"({c})" for c in parts if c != "True") or "True"
        if isinstance(p, Cmp):
            diff = p.lhs - p.rhs
            if diff.is_constant():  # decided here (see _in_range)
                k = diff.const
                return str({"==": k == 0, "!=": k != 0, "<": k < 0, "<=": k <= 0, ">": k > 0,
                            ">=": k >= 0}[p.op])
            code, _ = self.affine(diff, env)  # scaling by a positive number keeps order
            op = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[p.op]
            return f"{code} {op} 0"
        if isinstance(p, Rel):
            codes, conds = self._in_range(p.indices, self.shapes[p.name], env)
            if "False" in conds:
                return "False"
            read = f"{p.name}[{', '.join(codes)}]"
            return " and ".join([*conds, read])
        raise Unsupported(f"predicate {type(p).__name__}")

    def read(self, e: Access, env: Mapping[str, Index]) -> tuple[str, str | None]:
        if e.name in self.relations:
            c = self.pred(Rel(e.name, e.indices), env)
            if c == "False":  # outside the relation's box: a strong zero
                return literal(0.0), "True"
            return f"(F(1) if {c} else F(0))", f"not ({c})"
        dims = self.shapes[e.name]
        if not dims:
            return f"{e.name}[0]", None
        codes, conds = self._in_range(e.indices, dims, env)
        if "False" in conds:  # outside the array at every point: an ordinary 0
            return "F(0)", None
        if e.name in self.shift:
            codes[-1] = shifted(codes[-1], self.shift[e.name])
        if e.name in self.fused:  # signed codes: the producer's body computes with them
            exact = [exact_of(a, env) for a in e.indices]
            codes = [signed(c) for c in codes]
            return self.inline(self.fused[e.name], codes, conds, env, exact), None
        if self.views is not None and not conds:  # in a tile: contiguous reads as views
            tiled = view(self, e, codes, env)
            if tiled is not None:
                return tiled, None
        name = self.rotated.get(e.name, e.name)
        if name != e.name:  # the same entry: the copy's axes are the array's, rotated
            codes = codes[1:] + codes[:1]
        read = f"{name}[{', '.join(codes)}]"
        return (f"({read} if {' and '.join(conds)} else F(0))" if conds else read), None

    def inline(self, s: Statement, codes: Sequence[str], conds: Sequence[str],
               env: Mapping[str, Index], exact: Sequence[Affine | None]) -> str:
        """A fused producer's value at ``codes``: its body, an ordinary number (0 outside).

        Evaluated once per point of a loop body: a later read at the same point inside the
        block that defined it (or a block nested in it) reuses the value."""
        key = (s.name, tuple(codes))
        hit = self.memo.get(key)
        if hit is not None and tuple(self.blocks[:len(hit[1])]) == hit[1]:
            return hit[0]
        out = self._inline(s, codes, conds, env, exact)
        self.memo[key] = (out, tuple(self.blocks))
        return out

    def _inline(self, s: Statement, codes: Sequence[str], conds: Sequence[str],
                env: Mapping[str, Index], exact: Sequence[Affine | None]) -> str:
        inner: dict[str, Index] = {}
        for iv, code, ex in zip(s.indices, codes, exact, strict=True):
            known = next((v for v in env.values() if v.code == code), None)
            if code.isidentifier() and known is not None:
                inner[iv.name] = known
            else:
                name = self.fresh(f"{iv.name}_")
                self.emit(f"{name} = {code}")
                inner[iv.name] = Index(name, exact=ex)
        out = self.fresh(f"{s.name}_")
        if not conds:
            v, _ = self.expr(s.body, inner)
            self.emit(f"{out} = {v}")
            return out
        self.emit(f"{out} = F(0)")
        self.emit(f"if {' and '.join(conds)}:")
        self.open()
        v, _ = self.expr(s.body, inner)
        self.emit(f"{out} = {v}")
        self.close()
        return out

    # --- sums ----------------------------------------------------------------------------------
    def sum(self, e: Sum, env: Mapping[str, Index]) -> tuple[str, str | None]:
        """An accumulator loop per summed index; its flag says the sum has no term that is
        not a strong zero (then the sum is one)."""
        done = band_sum(self, e, env)
        done = done if done is not None else self.hoist(e, env)
        done = done if done is not None else interchange(self, e, env)
        done = done if done is not None else row_sum(self, e, env)
        return done if done is not None else self._sum(e, env)

    def _sum(self, e: Sum, env: Mapping[str, Index]) -> tuple[str, str | None]:
        form = self.scans.get(e)
        outer = self.scan_outer
        if (form is not None and outer is not None and self.sum_depth == 0
                and len(self.blocks) == self.scan_blocks and outer in env
                and env[outer].code == outer):
            return self.running_sum(e, form, env)
        acc = self.fresh("acc")
        flag = self.fresh("none")
        self.emit(f"{acc} = F(0)")
        init = "    " * self.depth + f"{flag} = True"
        self.lines.append(init)
        self.sum_depth += 1
        used = self._level(list(solve_order(e.indices, e.body)), e.body, dict(env), acc, flag,
                           False)
        self.sum_depth -= 1
        if not used:
            self.lines.remove(init)
            return acc, None
        return acc, flag

    def hoist(self, e: Sum, env: Mapping[str, Index]) -> tuple[str, str | None] | None:
        """``e`` computed before the innermost loop when it does not depend on its variable
        (loop-invariant code motion: a row sum inside an elementwise body); None otherwise."""
        free = sorted(free_indices(e))
        closed = not free and self.top is not None
        if not closed and (self.hoist_var is None or self.sum_depth != 0 or not all(
                n in env and env[n].code in self.outer_vars for n in free)):
            return None
        key = hoist_key(e, env)
        hit = self.hoisted.get(key)
        if hit is None:
            self.hoisted[key] = None  # taken: a sum hoisted from inside this one is named apart
            sub = LoopWriter(self.shapes, self.fused, self.relations, hoisted=self.hoisted,
                             prefix=f"_h{self.tag}{len(self.hoisted)}_", top=self.top, tag=self.tag,
                             bands=self.bands)
            sub.depth = 1 if closed else self.pre_depth
            at = {n: env[n] for n in free}
            buf = term_buffer(self, key)  # its terms read back at the points (.reuse)
            hit = row_sum(sub, e, at, buf)
            if hit is not None and buf is not None:
                self.hoisted[("terms", *key)] = buf
            hit = hit if hit is not None else sub._sum(e, at)
            (self.top if closed and self.top is not None else self.pre).extend(sub.lines)
            self.hoisted[key] = hit
        return hit

    def running_sum(self, e: Sum, form: ScanForm, env: Mapping[str, Index]
                    ) -> tuple[str, str | None]:
        """A running sum carried across the iterations of the innermost output loop."""
        iv = e.indices[0]
        ext = dim_str(iv.extent)
        run, nxt, seen = self.fresh("run"), self.fresh("next"), self.fresh("seen")
        loop = self.lines[self.scan_line]
        pad = loop[: len(loop) - len(loop.lstrip())]
        start = "0" if form.prefix else f"{ext} - 1"
        self.lines[self.scan_line:self.scan_line] = [
            f"{pad}{run} = F(0)", f"{pad}{nxt} = {start}", f"{pad}{seen} = False"]
        self.scan_line += 3
        if not form.prefix and "range(" in loop and ", -1, -1)" not in loop:
            head, _, tail = self.lines[self.scan_line].partition("range(")
            self.lines[self.scan_line] = f"{head}range({tail[:-2]} - 1, -1, -1):"
        bound, _ = self.affine(form.bound, env)
        stop = self.fresh("stop")
        at = bound if bound.isidentifier() else f"({bound})"
        if form.prefix:
            self.emit(f"{stop} = {extreme('min', [ext, f'{at} + 1'])}")
            self.emit(f"while {nxt} < {stop}:")
        else:
            self.emit(f"{stop} = {extreme('max', ['0', bound])}")
            self.emit(f"while {nxt} >= {stop}:")
        self.open()
        var = self.fresh(iv.name)
        self.emit(f"{var} = {nxt}")
        self.sum_depth += 1
        v, z = self.expr(form.body, {**env, iv.name: Index(var, iv.extent)})
        self.sum_depth -= 1
        if z is None:
            self.emit(f"{run} += {v}")
            self.emit(f"{seen} = True")
        elif z != "True":
            self.emit(f"if not {z}:")
            self.emit(f"    {run} += {v}")
            self.emit(f"    {seen} = True")
        self.emit(f"{nxt} += 1" if form.prefix else f"{nxt} -= 1")
        self.close()
        return run, f"not {seen}"

    def accumulate(self, acc: str, v: str, z: str | None, flag: str, narrowed: bool) -> bool:
        """``acc += v`` where the term's strong-zero condition ``z`` does not hold (None: never
        zero; "True": always), clearing the all-zero ``flag`` when a term is added (or, for a
        ``narrowed`` range, whenever one is visited); whether the flag is used.

        Branch-free: where ``z`` holds, ``v`` is ±0.0 (every strong zero's code is), and an
        accumulator that starts at +0.0 is never -0.0, so adding ``v`` leaves it as it was
        (inf and nan included); the flag is and-ed with ``z``. A dense relation mask's branch
        mispredicts at every other term; a select does not (E12: 3.7 -> 1.4 ms)."""
        if z is None:
            self.emit(f"{acc} += {v}")
            if narrowed:
                self.emit(f"{flag} = False")
        elif z != "True":
            self.emit(f"{acc} += {v}")
            self.emit(f"{flag} = {flag} & ({z})")
        return z is not None or narrowed

    def _level(self, ivs: list, body: Expr, inner: dict[str, Index], acc: str, flag: str,
               narrowed: bool) -> bool:
        """The loops of the summed indices ``ivs`` (then the accumulation); whether the flag
        is used. A window of at most :data:`UNROLL` points is unrolled into guarded taps."""
        if not ivs and self.tile_var is not None and self.views is None:
            return tile_leaf(self, body, inner, acc, flag, narrowed)
        if not ivs:
            v, z = self.expr(body, inner)
            return self.accumulate(acc, v, z, flag, narrowed)
        iv, rest = ivs[0], ivs[1:]
        extent = dim_str(iv.extent)
        lo, hi, body, tight, taps = self.bounds(iv.name, extent, body, inner)
        used = False
        span = (Affine.constant(0), Affine.of_dim(iv.extent) - 1)
        if taps is not None:
            first, count, first_aff = taps
            base = exact_of(first_aff, inner)
            for t in range(count):
                var = self.fresh(iv.name)
                self.emit(f"{var} = {first} + {t}" if t else f"{var} = {first}")
                ex = None if base is None else base + t
                # (its bounds as a read's: exact, or over the spans of a window's loop
                # variables, i - a + 1 for a in [0, 3))
                b = bounds_of(first_aff + t, inner)
                guarded = b is None or not self.holds_inside(b[0], b[1], iv.extent)
                if guarded:
                    self.emit(f"if 0 <= {var} < {extent}:")
                    self.open()
                tap = Index(var, iv.extent, exact=ex, span=span, inside=not guarded)
                used |= self._level(rest, body, {**inner, iv.name: tap}, acc, flag, True)
                if guarded:
                    self.close()
            return used
        if not rest and self.tile_var is not None and self.views is None:
            return jammed(self, iv, lo, hi, body, inner, acc, flag, narrowed or tight, span)
        var = self.fresh(iv.name)
        # (a narrowed range is intersected with [0, extent): the variable stays in it)
        self._open_loop(var, lo, hi)
        used = self._level(rest, body, {**inner, iv.name: Index(var, iv.extent, span=span)},
                           acc, flag, narrowed or tight)
        self.close()
        return used

    def _open_loop(self, var: str, lo: str, hi: str) -> None:
        self.emit(f"for {var} in range({lo}, {hi}):" if lo != "0" else
                  f"for {var} in range({hi}):")
        self.open()

    def bounds(self, name: str, extent: str, body: Expr, env: Mapping[str, Index]
               ) -> tuple[str, str, Expr, bool, tuple[str, int, Affine] | None]:
        """:func:`~.brackets.bounds` with this writer's code and :data:`UNROLL`."""
        return bounds(self, name, extent, body, env, UNROLL)


def _unit(e: Expr) -> bool:
    return isinstance(e, Bracket) or (isinstance(e, Call) and e.fn in _COMPARISONS)
