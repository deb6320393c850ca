"""Structured gradients: tensors returned as the entries that may be nonzero.

The gradient of ``Σ_i A[i, i]`` is ``[i == j]``: N numbers on a diagonal, but N² once written
densely, so every dense gradient of a diagonal / point read costs O(output) whatever the program
costs. An optimized adjoint whose output is a sum of equality-bracket terms says exactly where its
nonzeros are, so ``ea.grad(..., structured=True)`` can return it as such:

* :class:`Diagonal` — ``out[k, k, ..., k] = values[k]``: the adjoint ``[i == j] · e(i)``.
* :class:`Sparse` — a coordinate list, ``out[coords[0][n], coords[1][n], ...] += values[n]``
  (repeated points add up): sums of point brackets (``x[0]``, gathers, ``[i == t]`` scatters).
* :class:`Outer` — ``out[I, J] = u[I] * v[J]`` kept as its factors: an adjoint that is one
  product of factors over disjoint indices (the gradient of ``xᵀ A y`` with respect to ``A``).

All convert to a dense ``ndarray`` on demand (``np.asarray(g)``, ``g.toarray()``), add into an
existing array in O(nnz) (``g.add_to(x, scale=-lr)``, or ``x -= lr * g``: an optimizer step
without densifying) and combine with arrays and scalars in arithmetic through NumPy's protocols
(``__array_ufunc__``, ``__array_function__``), so ``x + g`` is ``g.__radd__(x)`` rather than an
implicit N² conversion followed by an add, and ``np.sum(g)``, ``np.linalg.norm(g)`` read the
stored numbers. Their values are the dense tensor's, IEEE included: a product with an array
holding inf or nan is computed densely (``0 * inf`` is nan).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Diagonal", "Outer", "Sparse", "SparseBuilder"]


def _shape(shape: Sequence[int]) -> tuple[int, ...]:
    out = tuple(int(n) for n in shape)
    if any(n < 0 for n in out):
        raise ValueError(f"a shape has no negative extents: {out}")
    return out


def _dense(x: Any) -> Any:
    """``x`` with structured tensors (also inside lists and tuples) made dense arrays."""
    if isinstance(x, _Structured):
        return x.toarray()
    if isinstance(x, list | tuple):
        return type(x)(_dense(y) for y in x)
    return x


class _Structured:
    """What every structured tensor shares: a shape, NumPy conversion, in-place accumulation,
    and NumPy's protocols: ``W -= lr * g`` and ``W += g`` update ``W`` in place touching the
    stored entries only, ``x + g``, ``x * g`` and ``x @ g`` use the structure, ``np.sum(g)`` and
    ``np.linalg.norm(g)`` are computed from the stored numbers, and any other NumPy function
    gets the dense array (``np.asarray(g)``)."""

    __slots__ = ("shape",)
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def toarray(self) -> np.ndarray:
        raise NotImplementedError

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError(f"a {type(self).__name__} cannot be viewed as an array without a copy")
        out = self.toarray()
        return out if dtype is None else out.astype(dtype, copy=False)

    def _check_target(self, out: Any) -> None:
        if not isinstance(out, np.ndarray) or out.shape != self.shape:
            got = getattr(out, "shape", type(out).__name__)
            raise ValueError(f"add_to needs an array of shape {self.shape}, got {got}")

    def add_to(self, out: np.ndarray, scale: Any = 1) -> np.ndarray:
        raise NotImplementedError

    # --- NumPy protocols -----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        if method == "__call__" and not kwargs and len(inputs) == 2:
            a, b = inputs
            if out is not None:
                # W += g, W -= g: in place, only the stored entries
                if (ufunc in (np.add, np.subtract) and len(out) == 1 and out[0] is a
                        and b is self and isinstance(a, np.ndarray) and a.shape == self.shape
                        and np.can_cast(np.result_type(a, self.dtype), a.dtype)):
                    return self.add_to(a, scale=1 if ufunc is np.add else -1)
            else:
                binary = {np.add: ("__add__", "__radd__"), np.subtract: ("__sub__", "__rsub__"),
                          np.multiply: ("__mul__", "__rmul__"),
                          np.matmul: ("__matmul__", "__rmatmul__")}.get(ufunc)
                if binary is not None:
                    name = binary[0] if a is self else binary[1]
                    method_ = getattr(self, name, None)
                    other = b if a is self else a
                    if method_ is not None and not isinstance(other, _Structured):
                        result = method_(other)
                        if result is not NotImplemented:
                            return result
        if method == "__call__" and not kwargs and out is None and ufunc is np.negative:
            return -self
        # anything else: on the dense arrays
        if out is not None:
            kwargs["out"] = tuple(_dense(o) for o in out)
        return getattr(ufunc, method)(*(_dense(x) for x in inputs), **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is np.sum and args and args[0] is self:
            return self.sum(*args[1:], **kwargs)
        if func is np.linalg.norm and args and args[0] is self and not args[1:] and all(
                kwargs.get(k) is None for k in ("ord", "axis")) and not kwargs.get("keepdims"):
            return self.frobenius()
        return func(*_dense(tuple(args)), **{k: _dense(v) for k, v in kwargs.items()})

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **more: Any) -> Any:
        """``np.sum`` of the tensor (over all entries: from the stored numbers)."""
        if axis is None and out is None and not keepdims and not more:
            total = self._total()
            if total is not None:
                return total if dtype is None else np.asarray(total, dtype=dtype)[()]
        return np.sum(self.toarray(), axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                      **more)

    def _total(self) -> Any:
        return None

    def frobenius(self) -> Any:
        """``np.linalg.norm`` of the tensor (the 2-norm of all its entries)."""
        return np.linalg.norm(self.toarray().ravel())


class Sparse(_Structured):
    """A tensor of ``shape`` given by a coordinate list (COO); entries not listed are 0.

    ``coords``: one integer array per axis, all of length ``nnz``; ``values``: ``nnz`` numbers.
    A point listed twice holds the sum of its values (as in ``np.add.at``).
    """

    __slots__ = ("_coords", "values")

    def __init__(self, shape: Sequence[int], coords: Sequence[Any], values: Any) -> None:
        self.shape = _shape(shape)
        vals = np.asarray(values)
        if vals.ndim != 1:
            raise ValueError(f"values must be one-dimensional, got shape {vals.shape}")
        if len(coords) != len(self.shape):
            raise ValueError(
                f"{len(coords)} coordinate array(s) for a tensor of {len(self.shape)} axes"
            )
        cs = tuple(np.asarray(c, dtype=np.intp) for c in coords)
        for axis, (c, n) in enumerate(zip(cs, self.shape, strict=True)):
            if c.shape != vals.shape:
                raise ValueError(
                    f"coordinates of axis {axis} have shape {c.shape}, values {vals.shape}"
                )
            if c.size and (c.min() < 0 or c.max() >= n):
                raise ValueError(f"coordinates of axis {axis} lie outside 0..{n - 1}")
        self._coords: tuple[np.ndarray, ...] | None = cs
        self.values = vals

    # --- description ---------------------------------------------------------------------------
    @property
    def coords(self) -> tuple[np.ndarray, ...]:
        assert self._coords is not None
        return self._coords

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nnz(self) -> int:
        """Stored entries (points listed twice count twice)."""
        return int(self.values.shape[0])

    def __repr__(self) -> str:
        shape = "x".join(str(n) for n in self.shape) or "scalar"
        return f"<{type(self).__name__} {shape} {self.dtype}, {self.nnz} stored entries>"

    # --- conversion ----------------------------------------------------------------------------
    def toarray(self) -> np.ndarray:
        """The dense tensor (a new array)."""
        return self.add_to(np.zeros(self.shape, dtype=self.dtype))

    def add_to(self, out: np.ndarray, scale: Any = 1) -> np.ndarray:
        """``out += scale * self`` in place, touching only the stored entries; returns ``out``."""
        self._check_target(out)
        vals = self.values if scale == 1 else scale * self.values
        np.add.at(out, self.coords, vals)
        return out

    def _total(self) -> Any:
        return self.values.sum() if self.size else self.values.dtype.type(0)

    def frobenius(self) -> Any:
        """The 2-norm of the entries: of the stored values, repeated points added first."""
        if not self.nnz:
            return self.values.dtype.type(0)
        flat = np.ravel_multi_index(self.coords, self.shape)
        points, where = np.unique(flat, return_inverse=True)
        summed = np.zeros(points.shape[0], dtype=np.result_type(self.values, np.float64))
        np.add.at(summed, where, self.values)
        return np.linalg.norm(summed)

    # --- arithmetic ----------------------------------------------------------------------------
    def _scaled(self, values: np.ndarray) -> Sparse:
        return Sparse(self.shape, self.coords, values)

    def __neg__(self) -> Sparse:
        return self._scaled(-self.values)

    def __pos__(self) -> Sparse:
        return self

    def __mul__(self, other: Any) -> Sparse | np.ndarray:
        if np.ndim(other) == 0:
            return self._scaled(self.values * other)
        # Elementwise with a dense array: only the stored entries can be nonzero (unless the
        # array holds inf or nan: 0 * inf is nan, as in the dense product).
        other = np.broadcast_to(np.asarray(other), self.shape)
        if not np.isfinite(other).all():
            return self.toarray() * other
        return self._scaled(self.values * other[self.coords])

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Sparse:
        if np.ndim(other) != 0:
            return NotImplemented
        return self._scaled(self.values / other)

    def __add__(self, other: Any) -> Sparse | np.ndarray:
        if isinstance(other, Sparse):
            if other.shape != self.shape:
                raise ValueError(f"cannot add shapes {self.shape} and {other.shape}")
            return Sparse(
                self.shape,
                tuple(np.concatenate([a, b]) for a, b in zip(self.coords, other.coords,
                                                             strict=True)),
                np.concatenate([self.values, other.values]),
            )
        dense = np.asarray(other)
        out = np.array(np.broadcast_to(dense, np.broadcast_shapes(dense.shape, self.shape)),
                       dtype=np.result_type(dense, self.values))
        if out.shape != self.shape:
            raise ValueError(f"cannot add shapes {self.shape} and {dense.shape}")
        return self.add_to(out)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Sparse | np.ndarray:
        return self + (-other)

    def __rsub__(self, other: Any) -> Sparse | np.ndarray:
        return (-self) + other


class Diagonal(Sparse):
    """``out[k, k, ..., k] = values[k]`` for ``k < len(values)``; every other entry is 0.

    For a square matrix this is ``np.diag(values)``; ``g @ x`` scales the rows of ``x``.
    """

    __slots__ = ()

    def __init__(self, values: Any, shape: Sequence[int], dtype: Any = None) -> None:
        self.shape = _shape(shape)
        if len(self.shape) < 2:
            raise ValueError("a Diagonal has at least two axes")
        n = min(self.shape)
        vals = np.asarray(values, dtype=dtype)
        if vals.ndim > 1 or (vals.ndim == 1 and vals.shape[0] != n):
            raise ValueError(f"a {self.shape} Diagonal holds {n} values, got shape {vals.shape}")
        self.values = np.array(np.broadcast_to(vals, (n,)))  # own, writable copy
        self._coords = None  # built on demand: most uses never need them

    @property
    def coords(self) -> tuple[np.ndarray, ...]:
        k = np.arange(self.values.shape[0])
        return (k,) * len(self.shape)

    def diagonal(self) -> np.ndarray:
        """The values on the diagonal (a view: no copy)."""
        return self.values

    def frobenius(self) -> Any:
        return np.linalg.norm(self.values)

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.dtype)
        k = np.arange(self.values.shape[0])
        out[(k,) * len(self.shape)] = self.values  # distinct points: no accumulation needed
        return out

    def _scaled(self, values: np.ndarray) -> Sparse:
        return Diagonal(values, self.shape, values.dtype)

    def __matmul__(self, other: Any) -> np.ndarray:
        other = np.asarray(other)
        if len(self.shape) != 2 or other.ndim not in (1, 2) or other.shape[0] != self.shape[1]:
            raise ValueError(f"cannot multiply a {self.shape} Diagonal by shape {other.shape}")
        if not np.isfinite(other).all():  # 0 * inf = nan off the diagonal, as densely
            return self.toarray() @ other
        m, n = self.shape
        k = self.values.shape[0]
        lead = self.values if other.ndim == 1 else self.values[:, None]
        out = np.zeros((m,) + other.shape[1:], dtype=np.result_type(self.values, other))
        out[:k] = lead * other[:k]
        return out

    def __rmatmul__(self, other: Any) -> np.ndarray:
        other = np.asarray(other)
        if len(self.shape) != 2 or other.ndim not in (1, 2) or other.shape[-1] != self.shape[0]:
            raise ValueError(f"cannot multiply shape {other.shape} by a {self.shape} Diagonal")
        if not np.isfinite(other).all():
            return other @ self.toarray()
        m, n = self.shape
        k = self.values.shape[0]
        out = np.zeros(other.shape[:-1] + (n,), dtype=np.result_type(self.values, other))
        out[..., :k] = other[..., :k] * self.values
        return out


class SparseBuilder:
    """Collects the scatter writes of one output statement; :meth:`build` returns the tensor.

    The generated code's counterpart of ``out = np.zeros(shape); out[coords] += value``.
    """

    __slots__ = ("_coords", "_values", "dtype", "points", "shape")

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = _shape(shape)
        self.dtype = np.dtype(dtype)
        self._coords: list[list[np.ndarray]] = [[] for _ in self.shape]
        self._values: list[np.ndarray] = []
        # Single points as (coords, value): the generated code appends to this list directly
        # (a point write then costs what a dense ``out[i] += v`` costs).
        self.points: list[tuple[tuple[int, ...], Any]] = []

    def add(self, coords: Sequence[Any], value: Any, mask: Any = True, sign: int = 1) -> None:
        """Write ``sign * value`` at ``coords`` (broadcast together) where ``mask`` holds."""
        parts = np.broadcast_arrays(*[np.asarray(c) for c in coords], np.asarray(value),
                                    np.asarray(mask))
        m = parts[-1].astype(bool, copy=False)
        whole = bool(m.all())
        vals = parts[-2].ravel() if whole else parts[-2][m]
        self._values.append(np.asarray(-vals if sign < 0 else vals, dtype=self.dtype).ravel())
        for acc, c in zip(self._coords, parts[:-2], strict=True):
            acc.append(np.asarray(c.ravel() if whole else c[m], dtype=np.intp).ravel())

    def build(self) -> Sparse:
        if self.points:
            pts = np.array([p for p, _ in self.points], dtype=np.intp).reshape(-1, len(self.shape))
            self._values.append(np.array([v for _, v in self.points], dtype=self.dtype))
            for acc, c in zip(self._coords, pts.T, strict=True):
                acc.append(c)
            self.points = []
        if not self._values:
            empty = np.zeros(0, dtype=np.intp)
            return Sparse(self.shape, [empty] * len(self.shape), np.zeros(0, self.dtype))
        if len(self._values) == 1:
            return Sparse(self.shape, [c[0] for c in self._coords], self._values[0])
        return Sparse(self.shape, [np.concatenate(c) for c in self._coords],
                      np.concatenate(self._values))


class Outer(_Structured):
    """An outer product ``out[I, J, ...] = u[I] * v[J] * ...`` kept as its factors.

    The gradient of a bilinear form (``Σ x[i] A[i, j] y[j]`` with respect to ``A``) is
    ``x[i] * y[j]``: N + M numbers that a dense gradient spreads over N·M entries. ``factors``
    hold consecutive groups of axes (``u`` the first ``u.ndim`` axes, and so on). Its value is
    the dense IEEE product (``0 * inf`` is nan, as in the program); products with it that
    reassociate (``u (v · x)``) are used only where every number is finite.
    """

    __slots__ = ("factors",)

    def __init__(self, factors: Sequence[Any], shape: Sequence[int] | None = None,
                 dtype: Any = None) -> None:
        fs = tuple(np.array(f, dtype=dtype) for f in factors)  # own copies: inputs may change
        if len(fs) < 2:
            raise ValueError("an Outer product has at least two factors")
        if any(f.ndim == 0 for f in fs):
            raise ValueError("every factor of an Outer product has at least one axis")
        full = tuple(n for f in fs for n in f.shape)
        if shape is not None and _shape(shape) != full:
            raise ValueError(f"factors of shapes {[f.shape for f in fs]} make {full}, "
                             f"not {tuple(shape)}")
        self.factors = fs
        self.shape = full

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(*self.factors)

    @property
    def nnz(self) -> int:
        """Stored numbers (the factors' sizes), not the entries of the dense tensor."""
        return sum(f.size for f in self.factors)

    def __repr__(self) -> str:
        shape = "x".join(str(n) for n in self.shape)
        parts = " x ".join("x".join(str(n) for n in f.shape) for f in self.factors)
        return f"<Outer {shape} {self.dtype}, factors {parts}>"

    def toarray(self) -> np.ndarray:
        out = self.factors[0]
        with np.errstate(invalid="ignore", over="ignore"):
            for f in self.factors[1:]:
                out = np.multiply.outer(out, f)
        return np.asarray(out, dtype=self.dtype)

    def _total(self) -> Any:
        if not all(bool(np.isfinite(f).all()) for f in self.factors):
            return None  # (Σ u)(Σ v) reassociates Σ u v: exact for finite factors only
        out = np.prod([f.sum() for f in self.factors])
        return np.asarray(out, dtype=self.dtype)[()]

    def frobenius(self) -> Any:
        if not all(bool(np.isfinite(f).all()) for f in self.factors):
            return np.linalg.norm(self.toarray().ravel())
        return np.asarray(np.prod([np.linalg.norm(f) for f in self.factors]),
                          dtype=self.dtype)[()]

    def _finite_with(self, other: np.ndarray) -> bool:
        """Whether reassociating a product with ``other`` is exact (no inf or nan anywhere)."""
        return bool(np.isfinite(other).all()) and all(
            bool(np.isfinite(f).all()) for f in self.factors)

    def add_to(self, out: np.ndarray, scale: Any = 1) -> np.ndarray:
        """``out += scale * self`` in place (O(size): every entry may change); returns ``out``."""
        self._check_target(out)
        out += (self * scale).toarray() if scale != 1 else self.toarray()
        return out

    def __mul__(self, other: Any) -> Outer | np.ndarray:
        if np.ndim(other) == 0:
            return Outer((self.factors[0] * other, *self.factors[1:]))
        return self.toarray() * np.asarray(other)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Outer:
        if np.ndim(other) != 0:
            return NotImplemented
        return Outer((self.factors[0] / other, *self.factors[1:]))

    def __neg__(self) -> Outer:
        return self * -1

    def __pos__(self) -> Outer:
        return self

    def __add__(self, other: Any) -> np.ndarray:
        return self.toarray() + np.asarray(other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> np.ndarray:
        return self.toarray() - np.asarray(other)

    def __rsub__(self, other: Any) -> np.ndarray:
        return np.asarray(other) - self.toarray()

    def __matmul__(self, other: Any) -> np.ndarray:
        """``self @ x`` for a two-factor matrix ``u vᵀ``: ``u (v · x)``, O(N + M) per column."""
        other = np.asarray(other)
        if (len(self.factors) != 2 or self.ndim != 2 or other.shape[:1] != self.shape[1:]
                or not self._finite_with(other)):
            return self.toarray() @ other
        u, v = self.factors
        return np.multiply.outer(u, v @ other)

    def __rmatmul__(self, other: Any) -> np.ndarray:
        other = np.asarray(other)
        if (len(self.factors) != 2 or self.ndim != 2 or other.shape[-1:] != self.shape[:1]
                or not self._finite_with(other)):
            return other @ self.toarray()
        u, v = self.factors
        return np.multiply.outer(other @ u, v)
