"""Relations stored by their members: SciPy sparse matrices and integer index arrays.

A relation parameter ``M: rel[N, N]`` means the 0/1 factor ``[(i, j) in M]``. Its argument may be
a dense boolean (or 0/1) array, a ``scipy.sparse`` array or matrix (CSR, CSC, COO, ...: the stored
coordinates with a nonzero value are the members, duplicates count once), or, for a relation
``src: rel[E, N]`` (spelled ``src: idx[E] -> N`` in the index language), an integer array of
shape ``(E,)``: the relation ``[src[e] == i]``, one member per row.

:class:`SparseRelation` is the form the compiled code receives: the members' coordinates (one
int64 array per dimension, in row-major order, computed once per call), the dense boolean array
only on demand (the plan's dense fallback), and segment sums over the members
(``np.bincount`` / a sparse incidence product).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import ArgumentTypeError, ShapeError

__all__ = [
    "DENSE_FRACTION", "SparseRelation", "is_index_array", "is_sparse_matrix", "prefer_dense",
    "relation_argument",
]

DENSE_FRACTION = 1 / 8
"""A relation with at least this fraction of its pairs as members runs dense (a mask is cheaper
than gathers then) when its dense form fits :data:`DENSE_LIMIT` elements."""

DENSE_LIMIT = 1 << 24


def is_sparse_matrix(value: Any) -> bool:
    """A SciPy sparse array or matrix (SciPy is imported only when one could be one)."""
    if type(value).__module__.startswith("scipy.sparse"):
        import scipy.sparse as sp

        return bool(sp.issparse(value))
    return False


def is_index_array(value: Any, rank: int) -> bool:
    """An array of one dimension less than a relation of ``rank`` (an index array's shape)."""
    nd = getattr(value, "ndim", None)
    if nd is None:
        nd = np.ndim(value)
    return rank >= 1 and nd == rank - 1 and not is_sparse_matrix(value)


class SparseRelation:
    """The members of a relation: ``coords[k][m]`` is the k-th index of the m-th member.

    A relation read from a CSR matrix also keeps its row offsets (``indptr``): a gather along
    the rows is then ``np.repeat`` and a segment sum into them ``np.add.reduceat``, both
    sequential passes, and the row coordinates are built only if something else reads them."""

    __slots__ = ("_coords", "_dense", "_filled_rows", "_incidence", "_matrices", "identity",
                 "indptr", "nnz", "shape")
    dtype = np.dtype(bool)

    def __init__(self, shape: Sequence[int], coords: Sequence[np.ndarray | None],
                 identity: frozenset[int] | None = None, matrix: Any = None,
                 indptr: np.ndarray | None = None) -> None:
        self.shape = tuple(int(n) for n in shape)
        self._coords = [None if c is None else np.ascontiguousarray(c, dtype=np.int64)
                        for c in coords]
        self.indptr = indptr
        if indptr is not None:
            self.nnz = int(indptr[-1])
        else:
            self.nnz = int(self._coords[0].shape[0]) if self._coords else 0  # type: ignore
        self._dense: np.ndarray | None = None
        self._filled_rows: tuple[np.ndarray, ...] | None = None  # None: not looked at yet
        self._incidence: dict[int, Any] = {}
        # Unweighted SciPy matrices by (k_out, k_in): the caller's CSR/CSC itself when it was one
        self._matrices: dict[tuple[int, int], Any] = {}
        if matrix is not None:  # (its transpose, a CSC view, made when a product needs it)
            self._matrices = {(0, 1): matrix}
        # Dimensions whose coordinates are 0, 1, ..., n-1 (an index array's rows): a gather or
        # segment sum along them is the identity.
        self.identity = identity if identity is not None else frozenset(
            k for k, c in enumerate(self.coords)
            if self.nnz == self.shape[k] and (self.nnz == 0 or (
                c[0] == 0 and c[-1] == self.nnz - 1 and bool(np.all(np.diff(c) == 1))))
        )

    @property
    def coords(self) -> tuple[np.ndarray, ...]:
        """One int64 array per dimension (the rows of a CSR relation built on first use)."""
        if self._coords and self._coords[0] is None:
            assert self.indptr is not None
            self._coords[0] = np.repeat(np.arange(self.shape[0], dtype=np.int64),
                                        np.diff(self.indptr))
        return tuple(self._coords)  # type: ignore[arg-type]

    def coord(self, k: int) -> np.ndarray:
        """The coordinates of dimension ``k`` (without building the others)."""
        c = self._coords[k]
        return c if c is not None else self.coords[k]

    @staticmethod
    def of(value: Any, n: int | None = None, name: str = "relation") -> SparseRelation:
        """The members of a SciPy sparse matrix, or of an index array with range ``n``: build
        it once and pass it to many calls (the conversion is O(nnz) per call otherwise)."""
        if is_sparse_matrix(value):
            return relation_argument(name, value, [None, None])
        nd = np.ndim(value)
        return relation_argument(name, value, [None] * nd + [n])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<SparseRelation {'x'.join(map(str, self.shape))}, {self.nnz} members>"

    @property
    def dense(self) -> np.ndarray:
        """The boolean array (built once; the dense fallback of the plan)."""
        if self._dense is None:
            d = np.zeros(self.shape, dtype=bool)
            d[self.coords] = True
            self._dense = d
        return self._dense

    def segment_sum(self, values: np.ndarray, axis: int, k: int) -> np.ndarray:
        """``out[.., c, ..] = Σ_{m: coords[k][m] == c} values[.., m, ..]`` with the member axis
        ``axis`` of ``values`` replaced by the relation's dimension ``k``: O(values.size)."""
        n = self.shape[k]
        if k in self.identity:
            return values
        if k == 0 and self.indptr is not None:
            return self._row_sum(values, axis)
        if values.ndim == 1:
            out = np.bincount(self.coord(k), weights=values, minlength=n)
            return out.astype(values.dtype, copy=False)
        moved = np.moveaxis(values, axis, 0)
        inc = self._incidence.get(k)
        if inc is None:
            import scipy.sparse as sp

            ones = np.ones(self.nnz)
            inc = sp.csr_array((ones, (self.coord(k), np.arange(self.nnz))),
                               shape=(n, self.nnz))
            self._incidence[k] = inc
        flat = np.ascontiguousarray(moved).reshape(self.nnz, -1)
        out = np.asarray(inc @ flat, dtype=values.dtype).reshape((n, *moved.shape[1:]))
        return np.moveaxis(out, 0, axis)

    def _row_sum(self, values: np.ndarray, axis: int) -> np.ndarray:
        """The segment sum into the rows of a CSR relation: members are sorted by row, so
        ``np.add.reduceat`` at the row offsets (a sequential pass); empty rows are 0."""
        assert self.indptr is not None
        n = self.shape[0]
        if self.nnz == 0:
            shape = list(values.shape)
            shape[axis] = n
            return np.zeros(shape, dtype=values.dtype)
        if self._filled_rows is None:
            filled = np.flatnonzero(self.indptr[1:] != self.indptr[:-1])
            self._filled_rows = (filled,) if filled.size < n else ()
        if not self._filled_rows:  # every row has a member: one reduceat at the offsets
            return np.add.reduceat(values, self.indptr[:-1], axis=axis)
        rows = self._filled_rows[0]
        # (reduceat sums from each offset to the next one given: the rows with members, whose
        # offsets increase strictly; each sum ends where the next row with members starts)
        shape = list(values.shape)
        shape[axis] = n
        out = np.zeros(shape, dtype=values.dtype)
        index: list[Any] = [slice(None)] * values.ndim
        index[axis] = rows
        out[tuple(index)] = np.add.reduceat(values, self.indptr[rows], axis=axis)
        return out

    def matrix(self, weights: np.ndarray | float | None, k_out: int, k_in: int) -> Any:
        """The SciPy CSR matrix ``S[c_out, c_in] = Σ weights`` over the members (1 each when
        ``weights`` is None)."""
        import scipy.sparse as sp

        if weights is None:
            hit = self._matrices.get((k_out, k_in))
            if hit is None and (k_in, k_out) in self._matrices:
                hit = self._matrices[(k_in, k_out)].T
                self._matrices[(k_out, k_in)] = hit
            if hit is None:
                hit = sp.csr_array((np.ones(self.nnz), (self.coord(k_out), self.coord(k_in))),
                                   shape=(self.shape[k_out], self.shape[k_in]))
                self._matrices[(k_out, k_in)] = hit
            return hit
        w = np.broadcast_to(
            np.asarray(weights, dtype=np.result_type(weights, np.float32)), (self.nnz,))
        csr = self._matrices.get((0, 1))
        if csr is not None and (k_out, k_in) == (0, 1) and getattr(csr, "format", "") == "csr":
            # the members are the CSR's own entries, in its order: no sort
            return sp.csr_array((np.ascontiguousarray(w), csr.indices, csr.indptr),
                                shape=csr.shape)
        return sp.csr_array((w, (self.coord(k_out), self.coord(k_in))),
                            shape=(self.shape[k_out], self.shape[k_in]))

    def spmm(self, weights: np.ndarray | float | None, x: np.ndarray, axis: int, k_out: int,
             k_in: int) -> np.ndarray:
        """``out[c, ...] = Σ_{members m} weights[m] · x[.., coords[k_in][m], ..]`` at
        ``c = coords[k_out][m]``: the gather of ``x`` along ``axis`` and the segment sum fused
        into one sparse product (no nnz-by-features temporary). The other axes of ``x`` follow
        in order."""
        moved = np.moveaxis(x, axis, 0)
        flat = moved.reshape(moved.shape[0], -1)
        w = None if weights is None else np.asarray(weights)
        if k_out in self.identity:  # one member per output row (an index array): a gather
            out = flat[self.coord(k_in)]
            if w is not None:
                out = out * (w[:, None] if w.ndim else w)
        elif k_in in self.identity and flat.shape[1] <= 8:  # a scatter-add of a few columns
            vals = flat if w is None else flat * (w[:, None] if w.ndim else w)
            out = np.stack([np.bincount(self.coord(k_out), weights=vals[:, c],
                                        minlength=self.shape[k_out])
                            for c in range(flat.shape[1])], axis=1)
        else:
            out = self.matrix(weights, k_out, k_in) @ flat
        return np.asarray(out, dtype=np.result_type(x, out)).reshape(
            (self.shape[k_out], *moved.shape[1:]))

    def shifted(self, specs: Sequence[tuple[int, int, int] | None], shape: Sequence[int]
                ) -> SparseRelation:
        """The relation ``{v : ((a_0 v_0 + b_0) / l_0, ...) in self}`` over ``shape``
        (``specs[k] = (a_k, l_k, b_k)``, None for ``(1, 1, 0)``): the members whose solved
        ``v = (l c - b) / a`` is an integer inside ``shape``, in row-major order. One O(nnz)
        pass (plus a sort when some ``a_k`` is negative)."""
        keep: np.ndarray | None = None
        vs: list[np.ndarray] = []
        for k, spec in enumerate(specs):
            c = self.coord(k)
            v = c
            if spec is not None:
                a, lcm, b = spec
                num = c * lcm - b if (lcm, b) != (1, 0) else c
                v = num // a
                if abs(a) != 1:
                    keep = num % a == 0 if keep is None else keep & (num % a == 0)
            inside = (v >= 0) & (v < shape[k])
            keep = inside if keep is None else keep & inside
            vs.append(v)
        if keep is not None and not keep.all():
            vs = [v[keep] for v in vs]
        if any(spec is not None and spec[0] < 0 for spec in specs) and vs and vs[0].size:
            order = np.argsort(np.ravel_multi_index(vs, tuple(shape)), kind="stable")
            vs = [v[order] for v in vs]
        return SparseRelation(shape, vs)

    def gather_at(self, x: np.ndarray,
                  which: Sequence[tuple[int, int, int, int] | int | None]) -> np.ndarray:
        """``x`` read at the members like :meth:`gather`, where ``which[d]`` may also be
        ``(k, a, l, b)``: axis ``d`` read at ``(a · coords[k] + b) / l`` (a shifted read
        ``x[i + 1]``, a strided one ``x[2 i]``, a halved one ``x[i / 2]``); a read outside
        ``x`` or at a fraction is 0, as in the index language."""
        key: list[Any] = []
        inside: np.ndarray | None = None
        for d, w in enumerate(which):
            if w is None:
                key.append(slice(None))
                continue
            k, a, lcm, b = (w, 1, 1, 0) if isinstance(w, int) else w
            pos = self.coord(k) if (a, lcm, b) == (1, 1, 0) else a * self.coord(k) + b
            if (a, lcm, b) != (1, 1, 0):
                ok = (pos >= 0) & (pos < x.shape[d] * lcm)
                if lcm != 1:
                    ok &= pos % lcm == 0
                    pos = pos // lcm
                inside = ok if inside is None else inside & ok
                pos = np.where(ok, pos, 0) if x.shape[d] else pos
            key.append(pos)
        if inside is not None and not x.size:
            shape = [self.nnz] + [n for n, w in zip(x.shape, which, strict=True) if w is None]
            return np.zeros(shape, dtype=x.dtype)
        out = x[tuple(key)]
        picked = [d for d, w in enumerate(which) if w is not None]
        if picked and picked == list(range(picked[0], picked[-1] + 1)) and picked[0] != 0:
            out = np.moveaxis(out, picked[0], 0)
        if inside is not None and not inside.all():
            out = np.where(inside.reshape((-1,) + (1,) * (out.ndim - 1)), out, 0)
        return out

    def member_of(self, other: Any, which: Sequence[int]) -> np.ndarray:
        """Whether each member of this relation, read at its dimensions ``which``, is a member
        of ``other`` (a :class:`SparseRelation` or a dense boolean array): a boolean array over
        the members (the intersection's mask; O(nnz log nnz) for a sparse ``other``)."""
        keys = [self.coord(k) for k in which]
        if not isinstance(other, SparseRelation):
            return np.asarray(other, dtype=bool)[tuple(keys)]
        if other.nnz == 0 or self.nnz == 0:
            return np.zeros(self.nnz, dtype=bool)
        # Row-major linear positions: ``other``'s members are sorted by them.
        theirs = np.ravel_multi_index(other.coords, other.shape)
        mine = np.ravel_multi_index(keys, other.shape)
        pos = np.minimum(np.searchsorted(theirs, mine), other.nnz - 1)
        return theirs[pos] == mine

    def gather(self, x: np.ndarray, which: Sequence[int | None]) -> np.ndarray:
        """``x`` read at the members: ``which[d]`` is the relation dimension whose coordinate
        indexes axis ``d`` of ``x`` (None keeps the axis); the member axis comes first."""
        picked = [d for d, w in enumerate(which) if w is not None]
        if len(picked) == 1 and picked[0] == 0 and which[0] in self.identity:
            return x
        if len(picked) == 1 and which[picked[0]] == 0 and self.indptr is not None:
            # CSR rows: each row's value repeated once per member (a sequential pass)
            out = np.repeat(x, np.diff(self.indptr), axis=picked[0])
            return out if picked[0] == 0 else np.moveaxis(out, picked[0], 0)
        key = tuple(self.coord(w) if w is not None else slice(None) for w in which)
        out = x[key]
        # NumPy puts the advanced-index axis first unless the indexed axes are adjacent.
        if picked and picked == list(range(picked[0], picked[-1] + 1)) and picked[0] != 0:
            out = np.moveaxis(out, picked[0], 0)
        return out


_ARANGES: dict[int, np.ndarray] = {}


def _arange(n: int) -> np.ndarray:
    """A read-only ``np.arange(n)`` shared by the calls with index arrays of length ``n``."""
    a = _ARANGES.get(n)
    if a is None:
        if len(_ARANGES) >= 8:
            _ARANGES.pop(next(iter(_ARANGES)))
        a = np.arange(n, dtype=np.int64)
        a.flags.writeable = False
        _ARANGES[n] = a
    return a


def prefer_dense(rel: SparseRelation) -> bool:
    """Whether a dense mask is the cheaper plan for ``rel`` (see :data:`DENSE_FRACTION`)."""
    numel = int(np.prod(rel.shape, dtype=np.int64))
    return numel <= DENSE_LIMIT and rel.nnz >= numel * DENSE_FRACTION


def _describe(name: str, shape: Sequence[int | None]) -> str:
    dims = ", ".join("?" if n is None else str(n) for n in shape)
    return f"argument {name!r} (relation of shape ({dims}))"


def relation_argument(name: str, value: Any, shape: Sequence[int | None]) -> SparseRelation:
    """``value`` (a SciPy sparse matrix, or an integer index array of shape ``shape[:-1]``)
    as the members of relation parameter ``name`` of shape ``shape`` (None: not bound yet, then
    taken from the argument; an index array needs its last dimension bound).

    Raises :class:`ShapeError` for a wrong shape or an index out of range and
    :class:`ArgumentTypeError` for values that are not 0/1 or an index array of floats."""
    what = _describe(name, shape)
    if isinstance(value, SparseRelation):
        if any(n is not None and n != m for n, m in zip(shape, value.shape, strict=True)):
            raise ShapeError(f"{what} got a relation of shape {value.shape}")
        return value
    if is_sparse_matrix(value):
        if len(shape) != 2:
            raise ShapeError(f"{what} got a 2-D sparse matrix; it has {len(shape)} dimensions")
        if any(n is not None and n != m for n, m in zip(shape, value.shape, strict=True)):
            raise ShapeError(f"{what} got a sparse matrix of shape {value.shape}")
        data = np.asarray(value.data) if hasattr(value, "data") else None
        fmt = getattr(value, "format", "")
        if (fmt in ("csr", "csc") and value.has_canonical_format and data is not None
                and (data.dtype == bool or bool(np.all(data == 1)))):
            # sorted, no duplicates, every stored value 1: the members in O(nnz)
            minor = np.asarray(value.indices, dtype=np.int64)
            if fmt == "csr":  # the rows stay offsets until something reads them
                return SparseRelation(value.shape, (None, minor), identity=frozenset(),
                                      matrix=value, indptr=np.asarray(value.indptr))
            major = np.repeat(np.arange(int(value.shape[1]), dtype=np.int64),
                              np.diff(value.indptr))
            return SparseRelation(value.shape, (minor, major), identity=frozenset(),
                                  matrix=value)
        coo = value.tocoo()
        data = np.asarray(coo.data)
        if data.dtype != bool and not (
            data.dtype.kind in "iuf" and np.all((data == 0) | (data == 1))
        ):
            raise ArgumentTypeError(
                f"{what} must hold boolean or 0/1 values, got a sparse matrix of dtype "
                f"{data.dtype} with other values (a relation is a set of pairs, not weights)"
            )
        keep = data != 0
        rows = np.asarray(coo.row, dtype=np.int64)[keep]
        cols = np.asarray(coo.col, dtype=np.int64)[keep]
        n_rows, n_cols = (int(n) for n in value.shape)
        lin = np.unique(rows * n_cols + cols)  # duplicates are one member; row-major order
        return SparseRelation((n_rows, n_cols), (lin // max(n_cols, 1), lin % max(n_cols, 1)))
    idx = np.asarray(value)
    if idx.dtype.kind not in "iu":
        raise ArgumentTypeError(
            f"{what} got an array of dtype {idx.dtype} and shape {idx.shape}: an index array "
            "must hold integers (a dense relation has the relation's full shape)"
        )
    if idx.ndim != len(shape) - 1:
        raise ShapeError(f"{what} got an index array of shape {idx.shape}")
    if any(n is not None and n != m for n, m in zip(shape[:-1], idx.shape, strict=True)):
        raise ShapeError(f"{what} got an index array of shape {idx.shape}")
    n = shape[-1]
    if n is None:
        raise ShapeError(
            f"{what}: the range of index array {name!r} (its last dimension) is not bound by "
            "another argument"
        )
    # One pass: a negative value read as unsigned is at least 2**63, so it is out of range too.
    if idx.size and int(idx.view(idx.dtype.str.replace("i", "u")).max()) >= n:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise ShapeError(
                f"index array {name!r} holds {bad}, outside 0 .. {n - 1} (its range has "
                f"{n} positions; negative indices do not wrap around)"
            )
    flat = np.asarray(idx.reshape(-1), dtype=np.int64)
    if idx.ndim == 1:  # rows 0 .. E-1, one member each
        return SparseRelation((idx.shape[0], n), (_arange(idx.shape[0]), flat),
                              identity=frozenset({0}))
    lead = np.indices(idx.shape).reshape(idx.ndim, -1) if idx.ndim else np.zeros((0, 1), int)
    return SparseRelation((*idx.shape, n), [*lead, flat])
