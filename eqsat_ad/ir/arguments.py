"""Binding a program's arguments: each value checked against its parameter (rank, fixed
lengths, relation or real numbers) and converted, and the size symbols bound from the shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ArgumentTypeError, ShapeError
from .index import dim_str
from .program import Param, Program
from .relations import is_index_array, is_sparse_matrix, relation_argument

__all__ = ["bind_arguments"]


def bind_arguments(
    prog: Program, *args: Any, **kwargs: Any
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Match arguments to ``prog``'s parameters and bind its size symbols.

    Returns ``(arrays, sizes)``: each parameter's value as a float64 array (a bool array for a
    relation) and each size name's value. Raises :class:`ShapeError` naming the parameter on a
    missing, duplicate or unexpected argument, a wrong rank or an inconsistent size.
    """
    params = prog.params
    if len(args) > len(params):
        raise ShapeError(
            f"{prog.name}() takes {len(params)} argument(s) "
            f"({', '.join(p.name for p in params)}) but {len(args)} were given"
        )
    given: dict[str, Any] = {p.name: a for p, a in zip(params, args, strict=False)}
    names = {p.name for p in params}
    for k, v in kwargs.items():
        if k not in names:
            raise ShapeError(
                f"{prog.name}() got an unexpected argument {k!r}; its parameters are "
                f"{', '.join(p.name for p in params) or '(none)'}"
            )
        if k in given:
            raise ShapeError(f"{prog.name}() got two values for argument {k!r}")
        given[k] = v
    missing = [p.name for p in params if p.name not in given]
    if missing:
        raise ShapeError(f"{prog.name}() is missing argument(s): {', '.join(missing)}")

    arrays: dict[str, np.ndarray] = {}
    sizes: dict[str, int] = {}
    bound_by: dict[str, str] = {}  # size name -> parameter whose shape bound it (for messages)
    deferred: list[Param] = []  # index arrays: their range is another argument's size
    order = list(params)
    for p in order:  # (grows: a deferred parameter comes again at the end)
        v = given[p.name]
        if p.kind == "relation" and p not in deferred and is_index_array(v, p.rank):
            deferred.append(p)
            order.append(p)
            continue
        if p in deferred:
            shape = [d if isinstance(d, int) else sizes.get(d.name) for d in p.shape]
            arr = relation_argument(p.name, v, shape).dense
        else:
            arr = _convert(p, v)
        if arr.ndim != p.rank:
            raise ShapeError(
                f"argument {p.name!r} has rank {arr.ndim} (shape {arr.shape}) but parameter "
                f"{_param_str(p)} has rank {p.rank}"
            )
        for axis, (d, n) in enumerate(zip(p.shape, arr.shape, strict=True)):
            if isinstance(d, int):
                if n != d:
                    raise ShapeError(
                        f"argument {p.name!r} has shape {arr.shape} but parameter {_param_str(p)} "
                        f"needs length {d} on axis {axis}"
                    )
                continue
            if d.name in sizes and sizes[d.name] != n:
                raise ShapeError(
                    f"argument {p.name!r} has shape {arr.shape}, so {d.name} = {n} on axis "
                    f"{axis}, but {d.name} = {sizes[d.name]} from argument {bound_by[d.name]!r} "
                    f"(parameter {_param_str(p)})"
                )
            sizes[d.name] = n
            bound_by.setdefault(d.name, p.name)
        arrays[p.name] = arr
    return arrays, sizes


def _param_str(p: Param) -> str:
    dims = ", ".join(dim_str(d) for d in p.shape)
    return f"{p.name}: rel[{dims}]" if p.kind == "relation" else f"{p.name}: [{dims}]"


def _convert(p: Param, value: Any) -> np.ndarray:
    try:
        raw = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise ShapeError(f"argument {p.name!r} is not an array: {exc}") from None
    if p.kind == "relation":
        if is_sparse_matrix(value):
            return relation_argument(p.name, value, [None] * p.rank).dense
        if raw.dtype == bool:
            return raw.copy()
        if raw.dtype.kind in "iuf" and np.all((raw == 0) | (raw == 1)):
            return raw.astype(bool)
        raise ArgumentTypeError(
            f"argument {p.name!r} for relation {_param_str(p)} must be boolean or 0/1 (a dense "
            f"array, a scipy.sparse matrix or an integer index array), got dtype {raw.dtype}"
        )
    if raw.dtype.kind not in "biuf":
        raise ShapeError(
            f"argument {p.name!r} must be real numbers, got dtype {raw.dtype} "
            f"(parameter {_param_str(p)})"
        )
    return raw.astype(np.float64)
