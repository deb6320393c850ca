"""What the binding of a call found, kept for later calls whose arguments have the same shapes,
strides and float types (:meth:`.program.NumbaProgram._repeat`): such a call skips the binding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Repeat", "signature"]


class Repeat(NamedTuple):
    """What the binding of a call found, for later calls with arguments of the same shapes
    and float types (:meth:`NumbaProgram._repeat`)."""

    sizes: dict[str, int]
    size_values: tuple[int, ...]  # in the order the module's ``run`` takes them
    dt: np.dtype
    exact: bool  # the unoptimized program's values on every input: no guard
    numpy: bool  # NumPy statements run between the loop nests


def signature(names: tuple[str, ...], args: tuple, kwargs: Mapping[str, Any]
               ) -> tuple | None:
    """The shapes and dtypes of a call's arguments, all NumPy arrays given either all by
    position or all by name (in parameter order); None otherwise."""
    if kwargs:
        if args or len(kwargs) != len(names):
            return None
        try:
            args = tuple(kwargs[n] for n in names)
        except KeyError:
            return None
    elif len(args) != len(names):
        return None
    key = []
    for a in args:
        if type(a) is not np.ndarray:
            return None
        key += (a.shape, a.dtype, a.strides)
    return tuple(key)
