"""Statements and programs (Tensor SSA).

A program is a list of typed parameters, a list of single-assignment statements
``name[i: N, ...] = body`` and the returned expressions. Each statement's body is a scalar
expression whose free indices are among the statement's generator indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .expr import Access, Expr, Loc, accessed_names, free_indices
from .index import Dim, IndexVar, as_dim


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter: a float tensor (``shape == ()`` for a scalar) or a boolean relation."""

    name: str
    shape: tuple[Dim, ...] = ()
    kind: Literal["tensor", "relation"] = "tensor"
    loc: Loc | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(as_dim(d) for d in self.shape))
        if self.kind not in ("tensor", "relation"):
            raise ValueError(f"unknown parameter kind {self.kind!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True, slots=True)
class Statement:
    """``name[indices] = body``; ``indices == ()`` for a scalar statement."""

    name: str
    indices: tuple[IndexVar, ...]
    body: Expr
    loc: Loc | None = field(default=None, compare=False, repr=False)

    @property
    def shape(self) -> tuple[Dim, ...]:
        return tuple(iv.extent for iv in self.indices)

    @property
    def rank(self) -> int:
        return len(self.indices)

    def free_indices(self) -> frozenset[str]:
        """Indices of the body not bound by the generators (empty in a well-formed statement)."""
        return free_indices(self.body) - {iv.name for iv in self.indices}

    def reads(self) -> frozenset[str]:
        return accessed_names(self.body)

    @property
    def defines(self) -> tuple[str, ...]:
        return (self.name,)


@dataclass(frozen=True, slots=True)
class Fold:
    """A rolled loop: ``c, ..., ys, ... = Fold[T](body, carry=(c0, ...), scan=(x, ...),
    const=(W, ...))``.

    ``body`` is a Program from (carried states, one slice ``x[t]`` of each scanned tensor, the
    captured constants) — its parameters in that order — to a tuple (next states, per-step
    outputs). The fold runs it ``trip`` times (t = 0 .. T-1, or T-1 .. 0 when ``reverse``),
    threading the states; ``names`` are the final states, then each per-step output stacked
    along a new first axis of length T. Nothing is mutated: the loop is one value-producing
    statement of Tensor SSA whose body is optimized and differentiated once, whatever T is.
    """

    names: tuple[str, ...]
    trip: Dim
    body: Program
    carry: tuple[str, ...]
    scan: tuple[str, ...] = ()
    const: tuple[str, ...] = ()
    reverse: bool = False
    loc: Loc | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "trip", as_dim(self.trip))
        for f in ("names", "carry", "scan", "const"):
            object.__setattr__(self, f, tuple(getattr(self, f)))

    @property
    def defines(self) -> tuple[str, ...]:
        return self.names

    def reads(self) -> frozenset[str]:
        return frozenset(self.carry) | frozenset(self.scan) | frozenset(self.const)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The outer names bound to the body's parameters, in parameter order."""
        return self.carry + self.scan + self.const

    def body_output_shape(self, k: int) -> tuple[Dim, ...]:
        o = self.body.outputs[k]
        if isinstance(o, Access) and not o.indices:
            return self.body.shape_of(o.name)
        return ()

    def result_shape(self, name: str) -> tuple[Dim, ...]:
        k = self.names.index(name)
        if k < len(self.carry):
            return self.body.params[k].shape
        return (self.trip, *self.body_output_shape(k))


Step = Statement | Fold
"""A statement of a program: an assignment or a rolled loop."""


@dataclass(frozen=True, slots=True)
class Program:
    """A Tensor SSA program.

    ``outputs`` are expressions with no free indices; a tensor-valued output is written as a bare
    access ``Access(name)`` to a tensor variable. ``returns_tuple`` tells ``return a`` from
    ``return (a,)``.
    """

    params: tuple[Param, ...]
    statements: tuple[Step, ...]
    outputs: tuple[Expr, ...]
    returns_tuple: bool = False
    name: str = "f"

    # --- lookups -------------------------------------------------------------------------------
    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if isinstance(s, Statement) and s.name == name:
                return s
        raise KeyError(name)

    def shape_of(self, name: str) -> tuple[Dim, ...]:
        """Shape of a parameter or statement variable (or a fold's result)."""
        for p in self.params:
            if p.name == name:
                return p.shape
        for s in self.statements:
            if name in s.defines:
                return s.result_shape(name) if isinstance(s, Fold) else s.shape
        raise KeyError(name)

    @property
    def folds(self) -> tuple[Fold, ...]:
        return tuple(s for s in self.statements if isinstance(s, Fold))

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def names_read(self) -> frozenset[str]:
        """The names the statements and outputs read (parameters and statements' variables)."""
        names: set[str] = set()
        for s in self.statements:
            names |= s.reads()
        for o in self.outputs:
            names |= accessed_names(o)
        return frozenset(names)

    def unread_outputs(self) -> frozenset[str]:
        """Statements returned whole (``return y``) that no statement or other output reads:
        the backend may return them in any representation (dense, diagonal, ...)."""
        read: set[str] = set()
        for s in self.statements:
            read |= s.reads()
        whole = set()
        for o in self.outputs:
            if isinstance(o, Access) and not o.indices:
                whole.add(o.name)
            else:
                read |= accessed_names(o)
        return frozenset(whole - read - set(self.param_names))

    def zero_sign_reads(self) -> frozenset[str]:
        """Statements whose value can reach a divisor or a negative power's base, where the
        sign of a zero shows (``1 / -0.0`` is -inf): read there, or by such a statement."""
        from .expr import Binary, Pow, children

        found: set[str] = set()
        stack = [s.body for s in self.statements] + list(self.outputs)
        while stack:
            e = stack.pop()
            if isinstance(e, Binary) and e.op == "/":
                found |= accessed_names(e.rhs)
            elif isinstance(e, Pow) and e.exponent < 0:
                found |= accessed_names(e.base)
            stack.extend(children(e))
        for s in reversed(self.statements):  # (a statement reads only earlier ones)
            if s.name in found:
                found |= s.reads()
        return frozenset(found & {s.name for s in self.statements})

    def size_names(self) -> tuple[str, ...]:
        """Size symbols used in parameter shapes, in order of first appearance."""
        seen: list[str] = []
        for p in self.params:
            for d in p.shape:
                if not isinstance(d, int) and d.name not in seen:
                    seen.append(d.name)
        return tuple(seen)

    def __str__(self) -> str:
        from .printer import print_program

        return print_program(self)
