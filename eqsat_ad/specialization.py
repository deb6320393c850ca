"""Specializing a Python function on one call signature (see :func:`eqsat_ad.grad`).

A call's array dimensions become size symbols (``N``, ``M``, ...; 0 and 1 stay as they are),
its Python ints and bools become static constants of the translation, and declared ``shapes=``
are matched against a call's shapes. :class:`Specialization` records how a signature was
translated.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ShapeSpec", "Specialization", "identifiers_of", "is_static", "size_symbols", "unify",
    "with_statics",
]

ShapeSpec = Mapping[str, tuple[int | str, ...]]

# Size symbols for the dimensions of a call's arguments, in order of appearance.
_SIZE_LETTERS = ("N", "M", "K", "L", "P", "Q", "R", "T", "U", "V")


@dataclass(frozen=True)
class Specialization:
    """How one call signature of a Python function was translated.

    ``shapes``: the shapes given to the translator (size symbols or ints); ``sizes``: the
    concrete value of each size symbol (also given to the optimizer); ``origins``: where each
    symbol came from (``"x.shape[0]"``); ``statics``: the static (Python int / bool) arguments
    the function was specialized on; ``fallback``: ``None`` when the symbolic translation
    worked, else why the translation had to use the concrete shapes.
    """

    shapes: dict[str, tuple[int | str, ...]]
    sizes: dict[str, int]
    origins: dict[str, str]
    statics: dict[str, Any]
    fallback: str | None = None

    @property
    def symbolic(self) -> bool:
        """Whether the program was translated with size symbols."""
        dims = [d for shape in self.shapes.values() for d in shape]
        return self.fallback is None and any(isinstance(d, str) for d in dims)

    def describe(self) -> str:
        parts = [f"{s} = {self.origins.get(s, s)} = {n}" for s, n in self.sizes.items()]
        parts += [f"{k} = {v!r} (static)" for k, v in self.statics.items()]
        line = ", ".join(parts) or "no sizes"
        if self.fallback is not None:
            line += f"; concrete shapes (symbolic translation failed: {self.fallback})"
        return line


def is_static(value: Any) -> bool:
    """A Python int or bool (or a NumPy integer / bool scalar): a constant of the translation."""
    return isinstance(value, int | np.integer | np.bool_)


def size_symbols(
    shapes: Mapping[str, tuple[int, ...]], avoid: set[str]
) -> tuple[dict[str, tuple[int | str, ...]], dict[str, int], dict[str, str]]:
    """One size symbol per distinct dimension value other than 0 and 1 (broadcasting depends on
    1, and the cost model counts sizes >= 1): (symbolic shapes, sizes, origins)."""
    letters = [s for s in _SIZE_LETTERS if s not in avoid]
    by_value: dict[int, str] = {}
    sizes: dict[str, int] = {}
    origins: dict[str, str] = {}
    symbolic: dict[str, tuple[int | str, ...]] = {}
    for name, shape in shapes.items():
        dims: list[int | str] = []
        for axis, n in enumerate(shape):
            if n in (0, 1):
                dims.append(n)
                continue
            if n not in by_value:
                k = len(by_value)
                symbol = letters[k] if k < len(letters) else f"N{k - len(letters) + 1}"
                while symbol in avoid:
                    symbol += "_"
                by_value[n] = symbol
                sizes[symbol] = n
                origins[symbol] = f"{name}.shape[{axis}]"
            dims.append(by_value[n])
        symbolic[name] = tuple(dims)
    return symbolic, sizes, origins


def identifiers_of(fn: Callable[..., Any]) -> set[str]:
    """Names the function uses: size symbols must not shadow them in the printed program."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return set()
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names |= set(c.co_varnames) | set(c.co_names) | set(c.co_freevars) | set(c.co_cellvars)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return names


def with_statics(fn: Callable[..., Any], statics: Mapping[str, Any]) -> Callable[..., Any]:
    """A copy of ``fn`` whose signature gives the static arguments as defaults.

    The translator binds a parameter without a shape to its default, as a constant. Keyword-only
    parameters may take defaults in any order, so the copy's signature makes every parameter
    keyword-only; the translator reads names from the source and only defaults from here.
    """
    if not statics:
        return fn
    real = inspect.unwrap(fn)
    if not isinstance(real, types.FunctionType):
        return fn  # the translator reports what it cannot read
    copy = types.FunctionType(
        real.__code__, real.__globals__, real.__name__, real.__defaults__, real.__closure__
    )
    copy.__kwdefaults__ = real.__kwdefaults__
    copy.__qualname__ = real.__qualname__
    copy.__module__ = real.__module__
    sig = inspect.signature(real)
    params = [
        p.replace(
            kind=inspect.Parameter.KEYWORD_ONLY,
            default=statics[p.name] if p.name in statics else p.default,
        )
        for p in sig.parameters.values()
    ]
    copy.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return copy


def unify(declared: Mapping[str, Sequence[int | str]], shapes: Mapping[str, tuple[int, ...]]
           ) -> bool:
    """Whether the call's shapes are an instance of the declared (possibly symbolic) shapes."""
    if set(declared) != set(shapes):
        return False
    bound: dict[str, int] = {}
    for name, dims in declared.items():
        actual = shapes[name]
        if len(dims) != len(actual):
            return False
        for d, n in zip(dims, actual, strict=True):
            if isinstance(d, str):
                if bound.setdefault(d, n) != n:
                    return False
            elif int(d) != n:
                return False
    return True
