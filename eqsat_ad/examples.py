"""The worked examples (docs/design.md, "Worked examples"), each with independent NumPy answers.

Each :class:`WorkedExample` carries its index-language source, the parameters to differentiate,
a random-input generator, the function written directly in NumPy and its gradient written by hand
(never derived by this library), so every stage of the pipeline can be checked against numbers
that do not come from the pipeline itself.

E1..E12 are the paper's table; ``chain`` (a tall/flat matrix chain) and ``mlp`` (a two-layer tanh
network with softmax cross-entropy) are the larger workloads later stages are measured on.
:func:`k_traces` and :func:`k_reads` build E2 and E5 for any ``k``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .ir.program import Program

__all__ = [
    "PAPER_EXAMPLES",
    "WORKED_EXAMPLES",
    "WorkedExample",
    "example",
    "k_reads",
    "k_traces",
]

Inputs = dict[str, Any]


@dataclass(frozen=True)
class WorkedExample:
    """One example program with an independent NumPy implementation and hand-written gradient."""

    id: str
    title: str
    source: str
    """The program in the index language (docs/index-language.md)."""
    wrt: tuple[str, ...]
    """Parameters the gradient is taken with respect to (keys of ``numpy_grad``'s result)."""
    make_inputs: Callable[[Mapping[str, int], np.random.Generator], Inputs] = field(compare=False)
    """``make_inputs(sizes, rng)``: random arguments by parameter name at the given sizes."""
    numpy_f: Callable[..., float] = field(compare=False)
    """``numpy_f(**inputs)``: the program's (first) output computed directly with NumPy."""
    numpy_grad: Callable[..., dict[str, np.ndarray]] = field(compare=False)
    """``numpy_grad(**inputs)``: ``{name: gradient}`` for each name in ``wrt``, by hand."""
    default_sizes: Mapping[str, int] = field(compare=False)
    numpy_hessian: Callable[..., np.ndarray] | None = field(default=None, compare=False)
    """For E7: the Hessian with respect to ``wrt[0]``, by hand."""
    expected: str = ""
    """The optimized adjoint the paper's table expects, as a note for people."""

    def inputs(self, sizes: Mapping[str, int] | None = None, seed: int = 0) -> Inputs:
        """Random inputs at ``default_sizes`` updated with ``sizes``, reproducible by ``seed``."""
        return self.make_inputs({**self.default_sizes, **(sizes or {})},
                                np.random.default_rng(seed))

    def program(self) -> Program:
        """The source parsed into a Program (needs the index-language frontend)."""
        from .frontend.index_lang import parse

        return parse(self.source)


def _sizes(d: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(d))


def _normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return scale * rng.standard_normal(shape)


# ================================================================================================
# E1: trace
# ================================================================================================

E1 = WorkedExample(
    id="E1",
    title="trace of A",
    source="""\
def trace(A: [N, N]):
    return Sum[i: N](A[i, i])
""",
    wrt=("A",),
    make_inputs=lambda s, rng: {"A": _normal(rng, s["N"], s["N"])},
    numpy_f=lambda A: float(np.trace(A)),
    numpy_grad=lambda A: {"A": np.eye(A.shape[0])},
    default_sizes=_sizes({"N": 64}),
    expected="A_bar[i, j] = [i == j]",
)


# ================================================================================================
# E2: k traces (the paper's headline example)
# ================================================================================================


def k_traces(k: int) -> WorkedExample:
    """E2: ``t1 .. tk`` are k copies of the trace of A and ``f = t1 + ... + tk``."""
    if k < 1:
        raise ValueError(f"k_traces needs k >= 1, got {k}")
    lines = [f"    t{t} = Sum[i: N](A[i, i])" for t in range(1, k + 1)]
    ret = " + ".join(f"t{t}" for t in range(1, k + 1))
    source = "def k_traces(A: [N, N]):\n" + "\n".join(lines) + f"\n    return {ret}\n"
    return WorkedExample(
        id="E2",
        title=f"sum of k = {k} traces of A",
        source=source,
        wrt=("A",),
        make_inputs=lambda s, rng: {"A": _normal(rng, s["N"], s["N"])},
        numpy_f=lambda A: float(k * np.trace(A)),
        numpy_grad=lambda A: {"A": k * np.eye(A.shape[0])},
        default_sizes=_sizes({"N": 64}),
        expected=f"A_bar[i, j] = {k} * [i == j] (the k terms merged)",
    )


# ================================================================================================
# E3: a diagonal matrix built with a bracket
# ================================================================================================


def _e3_f(x: np.ndarray, B: np.ndarray) -> float:
    return float(np.sum(np.diag(x) * B))


E3 = WorkedExample(
    id="E3",
    title="diagonal matrix D = diag(x) contracted with B",
    source="""\
def diag_inner(x: [N], B: [N, N]):
    D[i: N, j: N] = (i == j) * x[i]
    return Sum[i: N, j: N](D[i, j] * B[i, j])
""",
    wrt=("x", "B"),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"]), "B": _normal(rng, s["N"], s["N"])},
    numpy_f=_e3_f,
    numpy_grad=lambda x, B: {"x": np.diag(B).copy(), "B": np.diag(x)},
    default_sizes=_sizes({"N": 64}),
    expected="x_bar[i] = B[i, i]  (O(N), not O(N^2))",
)


# ================================================================================================
# E4: a single read
# ================================================================================================


def _e4_grad(x: np.ndarray) -> dict[str, np.ndarray]:
    g = np.zeros_like(x)
    g[0] = 1.0
    return {"x": g}


E4 = WorkedExample(
    id="E4",
    title="read one element x[0]",
    source="""\
def first(x: [N]):
    return x[0]
""",
    wrt=("x",),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"])},
    numpy_f=lambda x: float(x[0]),
    numpy_grad=_e4_grad,
    default_sizes=_sizes({"N": 64}),
    expected="x_bar[i] = [i == 0]",
)


# ================================================================================================
# E5: k point reads
# ================================================================================================


def k_reads(k: int) -> WorkedExample:
    """E5: ``f = x[0] ** 2 + ... + x[k-1] ** 2`` (reads past the end of x are 0)."""
    if k < 1:
        raise ValueError(f"k_reads needs k >= 1, got {k}")
    ret = " + ".join(f"x[{t}] ** 2" for t in range(k))

    def grad(x: np.ndarray) -> dict[str, np.ndarray]:
        g = np.zeros_like(x)
        g[:k] = 2.0 * x[:k]
        return {"x": g}

    return WorkedExample(
        id="E5",
        title=f"sum of squares of the first k = {k} elements, read one by one",
        source=f"def k_reads(x: [N]):\n    return {ret}\n",
        wrt=("x",),
        make_inputs=lambda s, rng: {"x": _normal(rng, s["N"])},
        numpy_f=lambda x: float(np.sum(x[:k] ** 2)),
        numpy_grad=grad,
        default_sizes=_sizes({"N": 64}),
        expected="x_bar[i] = Sum_t [i == t] * 2 * x[t]  (O(N + k): zero-fill, k point writes)",
    )


# ================================================================================================
# E6: x^T A x through an intermediate y = A x
# ================================================================================================

E6 = WorkedExample(
    id="E6",
    title="y = A x; f = x . y",
    source="""\
def quad_form(A: [N, N], x: [N]):
    y[i: N] = Sum[j: N](A[i, j] * x[j])
    return Sum[i: N](x[i] * y[i])
""",
    wrt=("A", "x"),
    make_inputs=lambda s, rng: {"A": _normal(rng, s["N"], s["N"]), "x": _normal(rng, s["N"])},
    numpy_f=lambda A, x: float(x @ (A @ x)),
    numpy_grad=lambda A, x: {"A": np.outer(x, x), "x": A @ x + A.T @ x},
    default_sizes=_sizes({"N": 64}),
    expected="x_bar = A x + A^T x",
)


# ================================================================================================
# E7: Hessian of x^T A x
# ================================================================================================

E7 = WorkedExample(
    id="E7",
    title="Hessian of x^T A x with respect to x",
    source="""\
def quad(A: [N, N], x: [N]):
    return Sum[i: N, j: N](x[i] * A[i, j] * x[j])
""",
    wrt=("x",),
    make_inputs=lambda s, rng: {"A": _normal(rng, s["N"], s["N"]), "x": _normal(rng, s["N"])},
    numpy_f=lambda A, x: float(x @ A @ x),
    numpy_grad=lambda A, x: {"x": (A + A.T) @ x},
    numpy_hessian=lambda A, x: A + A.T,
    default_sizes=_sizes({"N": 64}),
    expected="H = A + A^T in O(N^2) time and memory",
)


# ================================================================================================
# E8: a shifted stencil (finite differences)
# ================================================================================================


def _e8_grad(x: np.ndarray) -> dict[str, np.ndarray]:
    d = np.diff(x)
    g = np.zeros_like(x)
    g[1:] += 2.0 * d
    g[:-1] -= 2.0 * d
    return {"x": g}


E8 = WorkedExample(
    id="E8",
    title="sum of squared forward differences",
    source="""\
def diff_sq(x: [N]):
    d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
    return Sum[i: N](d[i] ** 2)
""",
    wrt=("x",),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"])},
    numpy_f=lambda x: float(np.sum(np.diff(x) ** 2)),
    numpy_grad=_e8_grad,
    default_sizes=_sizes({"N": 64}),
    expected="x_bar[i] = [i >= 1] * 2 * d[i - 1] - [i + 1 < N] * 2 * d[i]",
)


# ================================================================================================
# E9: a strided read
# ================================================================================================


def _e9_f(x: np.ndarray, w: np.ndarray) -> float:
    y = x[::2]  # y[i] = x[2i] for 2i < N
    return float(w[: y.size] @ y)


def _e9_grad(x: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    m = x[::2].size
    gx = np.zeros_like(x)
    gx[::2] = w[:m]
    gw = np.zeros_like(w)
    gw[:m] = x[::2]
    return {"x": gx, "w": gw}


E9 = WorkedExample(
    id="E9",
    title="even elements x[2i], weighted by w",
    source="""\
def stride(x: [N], w: [N]):
    y[i: N] = (2 * i < N) * x[2 * i]
    return Sum[i: N](w[i] * y[i])
""",
    wrt=("x", "w"),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"]), "w": _normal(rng, s["N"])},
    numpy_f=_e9_f,
    numpy_grad=_e9_grad,
    default_sizes=_sizes({"N": 64}),
    expected="x_bar[k] = [k even] * w[k/2]",
)


# ================================================================================================
# E10: a matrix product weighted elementwise
# ================================================================================================

E10 = WorkedExample(
    id="E10",
    title="C = A B; f = sum(W * C)",
    source="""\
def weighted_matmul(A: [N, N], B: [N, N], W: [N, N]):
    C[i: N, j: N] = Sum[k: N](A[i, k] * B[k, j])
    return Sum[i: N, j: N](W[i, j] * C[i, j])
""",
    wrt=("A", "B"),
    make_inputs=lambda s, rng: {
        name: _normal(rng, s["N"], s["N"]) for name in ("A", "B", "W")
    },
    numpy_f=lambda A, B, W: float(np.sum(W * (A @ B))),
    numpy_grad=lambda A, B, W: {"A": W @ B.T, "B": A.T @ W},
    default_sizes=_sizes({"N": 64}),
    expected="A_bar = W B^T (one GEMM)",
)


# ================================================================================================
# E11: row sum, broadcast and transpose
# ================================================================================================


def _e11_f(A: np.ndarray, u: np.ndarray) -> float:
    r = A.sum(axis=1)                 # row sum
    b = np.outer(u, r)                # b[j, i] = r[i] * u[j]: r broadcast along j
    t = A.T                           # transpose
    return float(np.sum(t * b))


def _e11_grad(A: np.ndarray, u: np.ndarray) -> dict[str, np.ndarray]:
    # f = sum_i r_i (A u)_i with r = A 1: the row sum's adjoint broadcasts (A u) along j.
    r = A.sum(axis=1)
    return {"A": np.outer(r, u) + (A @ u)[:, None], "u": A.T @ r}


E11 = WorkedExample(
    id="E11",
    title="row sum, broadcast and transpose",
    source="""\
def row_bcast_transpose(A: [N, M], u: [M]):
    r[i: N] = Sum[j: M](A[i, j])
    b[j: M, i: N] = r[i] * u[j]
    t[j: M, i: N] = A[i, j]
    return Sum[j: M, i: N](t[j, i] * b[j, i])
""",
    wrt=("A", "u"),
    make_inputs=lambda s, rng: {"A": _normal(rng, s["N"], s["M"]), "u": _normal(rng, s["M"])},
    numpy_f=_e11_f,
    numpy_grad=_e11_grad,
    default_sizes=_sizes({"N": 64, "M": 48}),
    expected="sum <-> broadcast and transpose <-> transpose in the adjoint; same cost as forward",
)


# ================================================================================================
# E12: a relation (data-dependent sparsity)
# ================================================================================================

E12 = WorkedExample(
    id="E12",
    title="y[m] = sum of x[n] over the pairs (m, n) in relation R",
    source="""\
def relation(x: [N], w: [M], R: rel[M, N]):
    y[m: M] = Sum[n: N](R[m, n] * x[n])
    return Sum[m: M](w[m] * y[m])
""",
    wrt=("x", "w"),
    make_inputs=lambda s, rng: {
        "x": _normal(rng, s["N"]),
        "w": _normal(rng, s["M"]),
        "R": rng.random((s["M"], s["N"])) < 0.2,
    },
    numpy_f=lambda x, w, R: float(w @ (R.astype(float) @ x)),
    numpy_grad=lambda x, w, R: {"x": R.T.astype(float) @ w, "w": R.astype(float) @ x},
    default_sizes=_sizes({"N": 64, "M": 40}),
    expected="x_bar[n] = Sum_m [R(m, n)] * w[m]  (O(nnz) when sparse)",
)


# ================================================================================================
# chain: a tall/flat matrix chain whose gradient is O(N R) when reassociated
# ================================================================================================


def _chain_grad(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
    # f = 1^T A B C 1: each gradient is an outer product of two vectors.
    ones_n, ones_r = np.ones(A.shape[0]), np.ones(A.shape[1])
    return {
        "A": np.outer(ones_n, B @ C.sum(axis=1)),
        "B": np.outer(A.sum(axis=0), C.sum(axis=1)),
        "C": np.outer(A.sum(axis=0) @ B, ones_r),
    }


CHAIN = WorkedExample(
    id="chain",
    title="sum of the matrix chain A B C (A: N x R, B: R x N, C: N x R)",
    source="""\
def matrix_chain(A: [N, R], B: [R, N], C: [N, R]):
    return Sum[i: N, k: R, j: N, l: R](A[i, k] * B[k, j] * C[j, l])
""",
    wrt=("A", "B", "C"),
    make_inputs=lambda s, rng: {
        "A": _normal(rng, s["N"], s["R"]),
        "B": _normal(rng, s["R"], s["N"]),
        "C": _normal(rng, s["N"], s["R"]),
    },
    numpy_f=lambda A, B, C: float(np.sum(A @ B @ C)),
    numpy_grad=_chain_grad,
    default_sizes=_sizes({"N": 64, "R": 8}),
    expected="gradients are outer products of row/column sums: O(N R), never an N x N product",
)


# ================================================================================================
# mlp: two-layer tanh network, softmax cross-entropy summed over the batch
# ================================================================================================


def _mlp_forward(X, W1, b1, W2, b2):
    hid = np.tanh(X @ W1.T + b1)
    z = hid @ W2.T + b2
    return hid, z


def _mlp_f(X, W1, b1, W2, b2, Y) -> float:
    _, z = _mlp_forward(X, W1, b1, W2, b2)
    lse = np.log(np.sum(np.exp(z), axis=1))
    return float(np.sum(lse - np.sum(Y * z, axis=1)))


def _mlp_grad(X, W1, b1, W2, b2, Y) -> dict[str, np.ndarray]:
    # Hand-written backprop: d lse / dz = softmax(z), and the linear term gives -Y.
    hid, z = _mlp_forward(X, W1, b1, W2, b2)
    p = np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True)
    dz = p - Y
    dhid = dz @ W2
    dpre = dhid * (1.0 - hid**2)
    return {"W1": dpre.T @ X, "b1": dpre.sum(axis=0), "W2": dz.T @ hid, "b2": dz.sum(axis=0)}


def _mlp_inputs(s: Mapping[str, int], rng: np.random.Generator) -> Inputs:
    B, D, H, K = s["B"], s["D"], s["H"], s["K"]
    Y = np.zeros((B, K))
    Y[np.arange(B), rng.integers(0, K, size=B)] = 1.0  # one-hot labels
    return {
        "X": _normal(rng, B, D),
        "W1": _normal(rng, H, D, scale=1.0 / np.sqrt(D)),
        "b1": _normal(rng, H, scale=0.1),
        "W2": _normal(rng, K, H, scale=1.0 / np.sqrt(H)),
        "b2": _normal(rng, K, scale=0.1),
        "Y": Y,
    }


MLP = WorkedExample(
    id="mlp",
    title="two-layer tanh MLP with softmax cross-entropy (one-hot labels Y)",
    source="""\
def mlp(X: [B, D], W1: [H, D], b1: [H], W2: [K, H], b2: [K], Y: [B, K]):
    hid[n: B, j: H] = tanh(Sum[d: D](X[n, d] * W1[j, d]) + b1[j])
    z[n: B, c: K] = Sum[j: H](hid[n, j] * W2[c, j]) + b2[c]
    lse[n: B] = log(Sum[c: K](exp(z[n, c])))
    return Sum[n: B](lse[n] - Sum[c: K](Y[n, c] * z[n, c]))
""",
    wrt=("W1", "b1", "W2", "b2"),
    make_inputs=_mlp_inputs,
    numpy_f=_mlp_f,
    numpy_grad=_mlp_grad,
    default_sizes=_sizes({"B": 16, "D": 32, "H": 64, "K": 10}),
    expected="the hand-written backprop: two GEMMs per layer",
)


# ================================================================================================
# Registry
# ================================================================================================

E2 = k_traces(4)
E5 = k_reads(4)

PAPER_EXAMPLES: tuple[WorkedExample, ...] = (E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11, E12)
WORKED_EXAMPLES: tuple[WorkedExample, ...] = (*PAPER_EXAMPLES, CHAIN, MLP)


def example(id: str) -> WorkedExample:
    """The worked example called ``id`` (``"E1"`` .. ``"E12"``, ``"chain"``, ``"mlp"``)."""
    for ex in WORKED_EXAMPLES:
        if ex.id.lower() == id.lower():
            return ex
    known = ", ".join(ex.id for ex in WORKED_EXAMPLES)
    raise KeyError(f"no worked example {id!r}; known: {known}")
