"""The sweep's program catalogue: each program with a NumPy function and a hand-written gradient.

A :class:`SweepProgram` is written either in the index language (``target`` is the source) or
as a NumPy-subset Python function (``target`` is the function, translated by eqsat_ad). Either
way it carries ``f`` (the value computed directly with NumPy), ``hand`` (the gradient written by
hand, never derived by this library), a random-input generator and three size points: ``small``
(correctness checks and finite differences), ``quick`` (smoke runs) and ``bench`` (timings).

The catalogue (issue 10, item 7): the worked examples of eqsat_ad/examples.py, matrix chains of
length 3 to 8 with adversarial sizes, a 3x3 blur written as nine reads and as a window sum, total
variation, conv1d, attention, N-body, NMF, softmax cross-entropy, prefix sums, moving averages,
a NumPy-front-end MLP, layer norm, logsumexp and a stencil loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat_ad.examples import WORKED_EXAMPLES, WorkedExample, k_traces

__all__ = ["CATALOGUE", "SweepProgram", "program"]

Inputs = dict[str, Any]
Grads = dict[str, np.ndarray]


@dataclass(frozen=True)
class SweepProgram:
    """One sweep program: what to differentiate, how to check it and at which sizes to time it."""

    name: str
    family: str
    target: str | Callable[..., Any]
    """Index-language source, or a NumPy-subset function (the "numpy" front end)."""
    wrt: tuple[str, ...]
    make_inputs: Callable[[Mapping[str, int], np.random.Generator], Inputs] = field(compare=False)
    f: Callable[..., float] = field(compare=False)
    hand: Callable[..., Grads] = field(compare=False)
    small: Mapping[str, int] = field(compare=False)
    quick: Mapping[str, int] = field(compare=False)
    bench: Mapping[str, int] = field(compare=False)
    chain: tuple[str, ...] = ()
    """For matrix chains: the size names D0..DL (the chain target compares against einsum)."""
    note: str = ""
    jax_f: Callable[..., Any] | None = field(default=None, compare=False)
    """``f`` without in-place writes, for JAX (sweep_jax; None: ``f`` itself)."""

    @property
    def frontend(self) -> str:
        return "index" if isinstance(self.target, str) else "numpy"

    def inputs(self, sizes: Mapping[str, int], seed: int = 0) -> Inputs:
        return self.make_inputs(sizes, np.random.default_rng(seed))

    def program(self) -> Any:
        """What ``ea.grad`` takes: the parsed Program, or the NumPy-subset function itself."""
        if isinstance(self.target, str):
            import eqsat_ad as ea

            return ea.parse(self.target)
        return self.target


def _normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return scale * rng.standard_normal(shape)


def _scaled(sizes: Mapping[str, int], factor: int, names: tuple[str, ...]) -> dict[str, int]:
    return {k: v * factor if k in names else v for k, v in sizes.items()}


# ================================================================================================
# The worked examples, at benchmark sizes
# ================================================================================================

_EXAMPLE_BENCH: dict[str, dict[str, int]] = {
    "E1": {"N": 2048}, "E2": {"N": 2048}, "E3": {"N": 2048}, "E4": {"N": 2**20},
    "E5": {"N": 2**20}, "E6": {"N": 2048}, "E7": {"N": 2048}, "E8": {"N": 2**20},
    "E9": {"N": 2**20}, "E10": {"N": 512}, "E11": {"N": 1024, "M": 768},
    "E12": {"N": 2048, "M": 1024}, "chain": {"N": 4000, "R": 10},
    "mlp": {"B": 128, "D": 256, "H": 512, "K": 10},
}


def _from_example(ex: WorkedExample, name: str | None = None) -> SweepProgram:
    small = {k: max(2, min(v, 5)) for k, v in ex.default_sizes.items()}
    return SweepProgram(
        name=name or ex.id, family="worked example", target=ex.source, wrt=tuple(ex.wrt),
        make_inputs=ex.make_inputs, f=ex.numpy_f, hand=ex.numpy_grad, small=small,
        quick=dict(ex.default_sizes), bench=_EXAMPLE_BENCH[ex.id],
        note=ex.title + (" (the sweep times the gradient)" if ex.numpy_hessian else ""),
    )


# ================================================================================================
# Matrix chains: f = Σ A0 A1 ... A(L-1) (the sum of all entries of the product)
# ================================================================================================


def _chain(dims_bench: tuple[int, ...], name: str, note: str) -> SweepProgram:
    L = len(dims_bench) - 1
    dnames = tuple(f"D{k}" for k in range(L + 1))
    mats = tuple(f"A{k}" for k in range(L))
    idx = tuple(f"i{k}" for k in range(L + 1))
    params = ", ".join(f"{mats[k]}: [{dnames[k]}, {dnames[k + 1]}]" for k in range(L))
    gens = ", ".join(f"{idx[k]}: {dnames[k]}" for k in range(L + 1))
    body = " * ".join(f"{mats[k]}[{idx[k]}, {idx[k + 1]}]" for k in range(L))
    source = f"def {name}({params}):\n    return Sum[{gens}]({body})\n"

    def make(s: Mapping[str, int], rng: np.random.Generator) -> Inputs:
        return {mats[k]: _normal(rng, s[dnames[k]], s[dnames[k + 1]],
                                 scale=1.0 / np.sqrt(s[dnames[k]])) for k in range(L)}

    def f(**a: np.ndarray) -> float:
        return float(np.sum(np.linalg.multi_dot([a[m] for m in mats])))

    def hand(**a: np.ndarray) -> Grads:
        # left[k] = 1ᵀ A0 .. A(k-1), right[k] = A(k) .. A(L-1) 1: each gradient is an outer
        # product of the two.
        ms = [a[m] for m in mats]
        left = [np.ones(ms[0].shape[0])]
        for m in ms:
            left.append(left[-1] @ m)
        right = [np.ones(ms[-1].shape[1])]
        for m in reversed(ms):
            right.append(m @ right[-1])
        right.reverse()
        return {mats[k]: np.outer(left[k], right[k + 1]) for k in range(L)}

    small = {d: 2 + (k * 3) % 4 for k, d in enumerate(dnames)}
    quick = {d: max(2, v // 8) for d, v in zip(dnames, dims_bench, strict=True)}
    return SweepProgram(
        name=name, family="matrix chain", target=source, wrt=mats, make_inputs=make, f=f,
        hand=hand, small=small, quick=quick, bench=dict(zip(dnames, dims_bench, strict=True)),
        chain=dnames, note=note,
    )


CHAINS = (
    _chain((4000, 10, 4000, 10), "chain3", "tall/flat: reassociation is O(N R) vs O(N² R)"),
    _chain((8, 1024, 8, 1024, 8), "chain4", "thin-thick alternation"),
    _chain((512, 2, 512, 512, 2, 512), "chain5", "two rank-2 bottlenecks"),
    _chain((16, 256, 256, 4, 256, 256, 16), "chain6", "a bottleneck in the middle"),
    _chain((1024, 32, 8, 128, 2, 512, 16, 1024), "chain7", "decreasing then growing"),
    _chain((64, 4, 4, 64, 64, 16, 256, 1024, 64), "chain8", "the issue's 8-chain"),
)


# ================================================================================================
# Images: 3x3 blur (nine reads / window sum) and total variation
# ================================================================================================

_TAPS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 0), (0, 1), (1, -1), (1, 0), (1, 1))


def _box3(x: np.ndarray) -> np.ndarray:
    """The 3x3 box mean of x with zero padding (reads outside x are 0): nine shifted slices."""
    p = np.pad(x, 1)
    H, W = x.shape
    out = p[0:H, 0:W].copy()
    for a, c in _TAPS[1:]:
        out += p[1 + a:1 + a + H, 1 + c:1 + c + W]
    return out / 9.0


def _blur_f(x: np.ndarray) -> float:
    return float(np.sum(_box3(x) ** 2))


def _blur_grad(x: np.ndarray) -> Grads:
    # The box filter is its own transpose (symmetric taps): x_bar = box(2 b), nine taps again.
    return {"x": _box3(2.0 * _box3(x))}




def _offset(var: str, v: int) -> str:
    return var if v == 0 else f"{var} {'+' if v > 0 else '-'} {abs(v)}"


_BLUR9_TERMS = " + ".join(f"x[{_offset('i', a)}, {_offset('j', c)}]" for a, c in _TAPS)

BLUR9 = SweepProgram(
    name="blur9", family="image", target=(
        "def blur9(x: [H, W]):\n"
        f"    b[i: H, j: W] = ({_BLUR9_TERMS}) / 9.0\n"
        "    return Sum[i: H, j: W](b[i, j] ** 2)\n"),
    wrt=("x",), make_inputs=lambda s, rng: {"x": _normal(rng, s["H"], s["W"])},
    f=_blur_f, hand=_blur_grad, small={"H": 5, "W": 4}, quick={"H": 64, "W": 64},
    bench={"H": 1024, "W": 1024}, note="3x3 box blur as nine shifted reads, f = Σ b²",
)

BLUR_WINDOW = SweepProgram(
    name="blur_window", family="image", target="""\
def blur_window(x: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](b[i, j] ** 2)
""",
    wrt=("x",), make_inputs=lambda s, rng: {"x": _normal(rng, s["H"], s["W"])},
    f=_blur_f, hand=_blur_grad, small={"H": 5, "W": 4}, quick={"H": 64, "W": 64},
    bench={"H": 1024, "W": 1024}, note="the same blur as a 3x3 window sum",
)


def _tv_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dx = np.zeros_like(x)
    dx[:-1, :] = x[1:, :] - x[:-1, :]
    dy = np.zeros_like(x)
    dy[:, :-1] = x[:, 1:] - x[:, :-1]
    return dx, dy, np.sqrt(dx**2 + dy**2 + 0.01)


def _tv_functional(x: np.ndarray) -> float:
    """``f`` of total variation without in-place writes (JAX traces it: sweep_jax)."""
    dx = np.pad(x[1:, :] - x[:-1, :], ((0, 1), (0, 0)))
    dy = np.pad(x[:, 1:] - x[:, :-1], ((0, 0), (0, 1)))
    return float(np.sum(np.sqrt(dx**2 + dy**2 + 0.01)))


def _tv_grad(x: np.ndarray) -> Grads:
    dx, dy, t = _tv_parts(x)
    gx, gy = dx / t, dy / t  # zero where dx (dy) is the zero boundary row (column)
    g = np.zeros_like(x)
    g[1:, :] += gx[:-1, :]
    g[:-1, :] -= gx[:-1, :]
    g[:, 1:] += gy[:, :-1]
    g[:, :-1] -= gy[:, :-1]
    return {"x": g}


TV = SweepProgram(
    name="total_variation", family="image", target="""\
def total_variation(x: [H, W]):
    dx[i: H, j: W] = (i + 1 < H) * (x[i + 1, j] - x[i, j])
    dy[i: H, j: W] = (j + 1 < W) * (x[i, j + 1] - x[i, j])
    return Sum[i: H, j: W](sqrt(dx[i, j] ** 2 + dy[i, j] ** 2 + 0.01))
""",
    wrt=("x",), make_inputs=lambda s, rng: {"x": _normal(rng, s["H"], s["W"])},
    f=lambda x: float(np.sum(_tv_parts(x)[2])), hand=_tv_grad, small={"H": 4, "W": 5},
    quick={"H": 64, "W": 64}, bench={"H": 1024, "W": 1024},
    note="smoothed isotropic total variation (image gradient)", jax_f=_tv_functional,
)


def total_variation_np(x):
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    return np.sum(np.sqrt(dx * dx + dy * dy + 0.01))


def _tv_np_grad(x: np.ndarray) -> Grads:
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    t = np.sqrt(dx * dx + dy * dy + 0.01)
    gx, gy = dx / t, dy / t
    g = np.zeros_like(x)
    g[1:, :-1] += gx
    g[:-1, 1:] += gy
    g[:-1, :-1] -= gx + gy
    return {"x": g}


TV_NP = SweepProgram(
    name="total_variation_np", family="image", target=total_variation_np, wrt=("x",),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["H"], s["W"])},
    f=lambda x: float(total_variation_np(x)), hand=_tv_np_grad, small={"H": 4, "W": 5},
    quick={"H": 64, "W": 64}, bench={"H": 1024, "W": 1024},
    note="total variation with sliced differences (NumPy front end)",
)


# ================================================================================================
# Signals: conv1d, prefix sums, moving average, a stencil loop (NumPy front end)
# ================================================================================================


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    # y[i] = Σ_k w[k] x[i + k], reads past the end of x are 0
    return np.correlate(np.concatenate([x, np.zeros(w.size - 1)]), w, mode="valid")


def _conv_grad(x: np.ndarray, w: np.ndarray) -> Grads:
    y2 = 2.0 * _conv(x, w)
    # x_bar[m] = Σ_k w[k] y2[m - k]; w_bar[k] = Σ_i y2[i] x[i + k] (x zero-padded at the end)
    xpad = np.concatenate([x, np.zeros(w.size - 1)])
    return {"x": np.convolve(y2, w)[: x.size], "w": np.correlate(xpad, y2, mode="valid")}


CONV1D = SweepProgram(
    name="conv1d", family="signal", target="""\
def conv1d(x: [N], w: [K]):
    y[i: N] = Sum[k: K](w[k] * x[i + k])
    return Sum[i: N](y[i] ** 2)
""",
    wrt=("x", "w"),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"]), "w": _normal(rng, s["K"])},
    f=lambda x, w: float(np.sum(_conv(x, w) ** 2)), hand=_conv_grad,
    small={"N": 7, "K": 3}, quick={"N": 512, "K": 5}, bench={"N": 2**18, "K": 9},
    note="valid correlation with zero padding at the end, f = Σ y²",
)


def _prefix_grad(x: np.ndarray) -> Grads:
    c2 = 2.0 * np.cumsum(x)
    return {"x": np.cumsum(c2[::-1])[::-1]}


PREFIX = SweepProgram(
    name="prefix_sum", family="signal", target="""\
def prefix_sum(x: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](c[i] ** 2)
""",
    wrt=("x",), make_inputs=lambda s, rng: {"x": _normal(rng, s["N"])},
    f=lambda x: float(np.sum(np.cumsum(x) ** 2)), hand=_prefix_grad,
    small={"N": 6}, quick={"N": 256}, bench={"N": 10**6},
    note="c = cumsum(x) as a triangular bracket sum, f = Σ c²",
)

_WINDOW = 8
_LONG_WINDOW = 128  # past the plan's crossover: running sums, not 128 shifted slices


def _moving(x: np.ndarray, k: int = _WINDOW) -> np.ndarray:
    c = np.cumsum(x)
    out = c.copy()
    out[k:] -= c[:-k]
    return out / k


def _moving_functional(x: np.ndarray, k: int = _WINDOW) -> float:
    """``f`` of a moving average without in-place writes (JAX traces it: sweep_jax)."""
    c = np.cumsum(x)
    m = (c - np.pad(c[:-k], (k, 0))) / k
    return float(np.sum(m**2))


def _moving_grad(x: np.ndarray, k: int = _WINDOW) -> Grads:
    # m = (1/K) B x with the band B[i, j] = [i - K < j <= i]; x_bar = (1/K) Bᵀ (2 m).
    return {"x": _moving(2.0 * _moving(x, k)[::-1], k)[::-1]}


def _moving_program(name: str, k: int) -> SweepProgram:
    return SweepProgram(
        name=name, family="signal", target=f"""\
def {name}(x: [N]):
    m[i: N] = Sum[j: N]((i - {k} < j and j <= i) * x[j]) / {k}.0
    return Sum[i: N](m[i] ** 2)
""",
        wrt=("x",), make_inputs=lambda s, rng: {"x": _normal(rng, s["N"])},
        f=lambda x: float(np.sum(_moving(x, k) ** 2)),
        hand=lambda x: _moving_grad(x, k),
        small={"N": k + 3}, quick={"N": 256 + k}, bench={"N": 10**6},
        note=f"trailing moving average over {k} samples (a band bracket), f = Σ m²",
        jax_f=lambda x: _moving_functional(x, k),
    )


MOVING = _moving_program("moving_average", _WINDOW)
MOVING_LONG = _moving_program("moving_average_long", _LONG_WINDOW)


def stencil_loop(x):
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        r = x[i - 1] - 2.0 * x[i] + x[i + 1]
        s += r * r
    return s


def _stencil_grad(x: np.ndarray) -> Grads:
    r2 = 2.0 * (x[:-2] - 2.0 * x[1:-1] + x[2:])
    g = np.zeros_like(x)
    g[:-2] += r2
    g[1:-1] -= 2.0 * r2
    g[2:] += r2
    return {"x": g}


STENCIL = SweepProgram(
    name="stencil_loop", family="signal", target=stencil_loop, wrt=("x",),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"])}, f=stencil_loop, hand=_stencil_grad,
    small={"N": 7}, quick={"N": 256}, bench={"N": 2**20},
    note="Python loop of a 3-point Laplacian, squared (NumPy front end)",
)


# ================================================================================================
# Learning: attention, NMF, softmax cross-entropy, MLP, layer norm, logsumexp, N-body
# ================================================================================================

_ATT_SCALE = 0.125


def _attention_parts(Q, K, V):
    E = np.exp(_ATT_SCALE * (Q @ K.T))
    P = E / E.sum(axis=1, keepdims=True)
    return P, P @ V


def _attention_grad(Q, K, V, Wo) -> Grads:
    P, _ = _attention_parts(Q, K, V)
    dP = Wo @ V.T
    dS = P * (dP - np.sum(dP * P, axis=1, keepdims=True))
    return {"Q": _ATT_SCALE * dS @ K, "K": _ATT_SCALE * dS.T @ Q, "V": P.T @ Wo}


ATTENTION = SweepProgram(
    name="attention", family="learning", target=f"""\
def attention(Q: [T, D], K: [T, D], V: [T, D], Wo: [T, D]):
    E[t: T, s: T] = exp({_ATT_SCALE} * Sum[d: D](Q[t, d] * K[s, d]))
    Z[t: T] = Sum[s: T](E[t, s])
    O[t: T, d: D] = Sum[s: T](E[t, s] * V[s, d]) / Z[t]
    return Sum[t: T, d: D](Wo[t, d] * O[t, d])
""",
    wrt=("Q", "K", "V"),
    make_inputs=lambda s, rng: {n: _normal(rng, s["T"], s["D"]) for n in ("Q", "K", "V", "Wo")},
    f=lambda Q, K, V, Wo: float(np.sum(Wo * _attention_parts(Q, K, V)[1])),
    hand=_attention_grad, small={"T": 4, "D": 3}, quick={"T": 64, "D": 16},
    bench={"T": 512, "D": 64}, note="softmax attention over T x T scores, f = Σ Wo ∘ O",
)


def _nmf_grad(V, W, H) -> Grads:
    R2 = 2.0 * (W @ H - V)
    return {"W": R2 @ H.T, "H": W.T @ R2}


NMF = SweepProgram(
    name="nmf", family="learning", target="""\
def nmf(V: [M, N], W: [M, R], H: [R, N]):
    E[i: M, j: N] = V[i, j] - Sum[r: R](W[i, r] * H[r, j])
    return Sum[i: M, j: N](E[i, j] ** 2)
""",
    wrt=("W", "H"),
    make_inputs=lambda s, rng: {"V": rng.random((s["M"], s["N"])),
                                "W": rng.random((s["M"], s["R"])),
                                "H": rng.random((s["R"], s["N"]))},
    f=lambda V, W, H: float(np.sum((V - W @ H) ** 2)), hand=_nmf_grad,
    small={"M": 4, "N": 5, "R": 2}, quick={"M": 64, "N": 48, "R": 4},
    bench={"M": 1024, "N": 768, "R": 16}, note="Frobenius loss of a rank-R factorization",
)


def nmf_np(V, W, H):
    R = V - W @ H
    return np.sum(R * R)


NMF_NP = SweepProgram(
    name="nmf_numpy", family="learning", target=nmf_np, wrt=("W", "H"),
    make_inputs=NMF.make_inputs, f=lambda V, W, H: float(nmf_np(V, W, H)), hand=_nmf_grad,
    small={"M": 4, "N": 5, "R": 2}, quick={"M": 64, "N": 48, "R": 4},
    bench={"M": 1024, "N": 768, "R": 16}, note="the NMF loss written in NumPy",
)


def softmax_xent(z, Y):
    lse = np.log(np.sum(np.exp(z), axis=1))
    return np.sum(lse) - np.sum(Y * z)


def _xent_grad(z, Y) -> Grads:
    e = np.exp(z)
    return {"z": e / e.sum(axis=1, keepdims=True) - Y}


def _onehot(rng: np.random.Generator, B: int, K: int) -> np.ndarray:
    Y = np.zeros((B, K))
    Y[np.arange(B), rng.integers(0, K, size=B)] = 1.0
    return Y


XENT = SweepProgram(
    name="softmax_xent", family="learning", target=softmax_xent, wrt=("z",),
    make_inputs=lambda s, rng: {"z": _normal(rng, s["B"], s["K"]),
                                "Y": _onehot(rng, s["B"], s["K"])},
    f=softmax_xent, hand=_xent_grad, small={"B": 3, "K": 4}, quick={"B": 64, "K": 10},
    bench={"B": 4096, "K": 256}, note="softmax cross-entropy with one-hot labels (NumPy front end)",
)


def mlp_np(X, W1, b1, W2, y):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - y
    return 0.5 * np.sum(r * r)


def _mlp_np_grad(X, W1, b1, W2, y) -> Grads:
    h = np.tanh(X @ W1 + b1)
    dr = h @ W2 - y
    dpre = (dr @ W2.T) * (1.0 - h**2)
    return {"W1": X.T @ dpre, "b1": dpre.sum(axis=0), "W2": h.T @ dr}


MLP_NP = SweepProgram(
    name="mlp_numpy", family="learning", target=mlp_np, wrt=("W1", "b1", "W2"),
    make_inputs=lambda s, rng: {
        "X": _normal(rng, s["B"], s["D"]),
        "W1": _normal(rng, s["D"], s["H"], scale=s["D"] ** -0.5),
        "b1": _normal(rng, s["H"], scale=0.1),
        "W2": _normal(rng, s["H"], s["K"], scale=s["H"] ** -0.5),
        "y": _normal(rng, s["B"], s["K"])},
    f=mlp_np, hand=_mlp_np_grad, small={"B": 3, "D": 4, "H": 5, "K": 2},
    quick={"B": 32, "D": 64, "H": 64, "K": 8}, bench={"B": 256, "D": 512, "H": 1024, "K": 16},
    note="one tanh layer, squared error (NumPy front end)",
)


def layer_norm(x, g, b, c):
    mu = np.mean(x, axis=1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=1, keepdims=True)
    y = xc / np.sqrt(var + 1e-5) * g + b
    return np.sum(c * y)


def _layer_norm_grad(x, g, b, c) -> Grads:
    mu = x.mean(axis=1, keepdims=True)
    xc = x - mu
    inv = 1.0 / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5)
    xhat = xc * inv
    dxhat = c * g
    dx = inv * (dxhat - dxhat.mean(axis=1, keepdims=True)
                - xhat * (dxhat * xhat).mean(axis=1, keepdims=True))
    return {"x": dx, "g": np.sum(c * xhat, axis=0), "b": c.sum(axis=0)}


LAYER_NORM = SweepProgram(
    name="layer_norm", family="learning", target=layer_norm, wrt=("x", "g", "b"),
    make_inputs=lambda s, rng: {
        "x": _normal(rng, s["B"], s["D"]), "g": 1.0 + _normal(rng, s["D"], scale=0.1),
        "b": _normal(rng, s["D"], scale=0.1), "c": _normal(rng, s["B"], s["D"])},
    f=lambda x, g, b, c: float(layer_norm(x, g, b, c)), hand=_layer_norm_grad,
    small={"B": 3, "D": 4}, quick={"B": 32, "D": 64}, bench={"B": 2048, "D": 1024},
    note="layer normalization, f = Σ c ∘ y (NumPy front end)",
)


def _lse_grad(x, w) -> Grads:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return {"x": w[:, None] * p, "w": np.log(np.sum(np.exp(x), axis=1))}


LOGSUMEXP = SweepProgram(
    name="logsumexp", family="learning", target="""\
def logsumexp(x: [B, N], w: [B]):
    s[b: B] = log(Sum[n: N](exp(x[b, n])))
    return Sum[b: B](w[b] * s[b])
""",
    wrt=("x", "w"),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["B"], s["N"]), "w": _normal(rng, s["B"])},
    f=lambda x, w: float(w @ np.log(np.sum(np.exp(x), axis=1))), hand=_lse_grad,
    small={"B": 3, "N": 4}, quick={"B": 32, "N": 64}, bench={"B": 1024, "N": 2048},
    note="row-wise logsumexp, weighted",
)


def nbody(x, m):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d * d, axis=2) + 0.01
    return np.sum(m[:, None] * m[None, :] / np.sqrt(r2))


def _nbody_grad(x, m) -> Grads:
    # f = Σ_ij m_i m_j r_ij^-1 (softened): ∂f/∂x_i = -2 Σ_j m_i m_j r_ij^-3 (x_i - x_j).
    sq = np.sum(x * x, axis=1)
    r2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0) + 0.01
    C = np.outer(m, m) * r2**-1.5
    return {"x": -2.0 * (C.sum(axis=1)[:, None] * x - C @ x)}


NBODY = SweepProgram(
    name="nbody", family="physics", target=nbody, wrt=("x",),
    make_inputs=lambda s, rng: {"x": _normal(rng, s["N"], 3), "m": rng.random(s["N"]) + 0.5},
    f=lambda x, m: float(nbody(x, m)), hand=_nbody_grad, small={"N": 5}, quick={"N": 64},
    bench={"N": 1000}, note="softened gravitational potential of N bodies (NumPy front end)",
)


# ================================================================================================
# The catalogue
# ================================================================================================

CATALOGUE: tuple[SweepProgram, ...] = (
    *(_from_example(ex) for ex in WORKED_EXAMPLES),
    _from_example(k_traces(32), name="E2-k32"),
    *CHAINS,
    BLUR9, BLUR_WINDOW, TV, TV_NP,
    CONV1D, PREFIX, MOVING, MOVING_LONG, STENCIL,
    ATTENTION, NMF, NMF_NP, XENT, MLP_NP, LAYER_NORM, LOGSUMEXP, NBODY,
)


def program(name: str) -> SweepProgram:
    """The catalogue program called ``name``."""
    for p in CATALOGUE:
        if p.name == name:
            return p
    raise KeyError(f"no sweep program {name!r}; known: {', '.join(p.name for p in CATALOGUE)}")
