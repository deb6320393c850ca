"""The interior of a partitioned loop (:mod:`eqsat_ad.backend.fused.interior`) free of what it
proves, and stepped loops for divisibility guards (:mod:`eqsat_ad.backend.fused.steps`).

E8's interior keeps no select on a bracket that holds there, reads unsigned and computes no
dead strong-zero flag; E9's kernels step over the even points instead of testing ``i % 2``
at each. The values are the NumPy backend's, bit for bit (the same arithmetic), at the edges
(N = 1, 2, 3, odd and even N) and where a bracket's false branch meets inf or nan."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest
from numba_inputs import E8_ADJOINT, random_arguments

import eqsat_ad as ea
from eqsat_ad.examples import E8, E9
from eqsat_ad.ir.expr import Access, Binary, Cmp, Const, Neg, Rel
from eqsat_ad.ir.index import Affine, size
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from eqsat_ad.backend.fused.interior import (  # noqa: E402
    Ceil,
    Index,
    holds_on,
    least_of,
    requirement,
)
from eqsat_ad.backend.fused.steps import zero_off  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")


SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64, 65)
N = size("N")


def _same(got: object, want: object) -> None:
    """Equal bit for bit up to the nan payload: values, nan positions and zeros' signs."""
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got_t, want_t, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)  # nan where nan
        np.testing.assert_array_equal(np.signbit(g[~np.isnan(g)]), np.signbit(w[~np.isnan(w)]))


def _poisoned(n: int, count: int, seed: int, poison: float | None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n) for _ in range(count)]
    if poison is not None:  # at both ends (the edges) and where a bracket is false
        for a in arrays:
            a[-1] = poison
            a[n // 2] = -poison if poison == np.inf else poison
    return arrays


def _interior_body(source: str, kernel: str) -> list[str]:
    """The lines of the interior loop of kernel ``_k_<kernel>``."""
    lines = source.split(f"def _k_{kernel}(")[1].split("\n@nb.njit")[0].splitlines()
    (at,) = [k for k, line in enumerate(lines) if "# the interior" in line]
    pad = len(lines[at]) - len(lines[at].lstrip())
    body = []
    for line in lines[at + 1:]:
        if len(line) - len(line.lstrip()) <= pad:
            break
        body.append(line)
    return body


# --- the worked examples ---------------------------------------------------------------------
def _e8_adjoint(backend: str):  # type: ignore[no-untyped-def]
    return ea.compile(ea.parse(E8_ADJOINT), optimize=False, backend=backend)


def _e9_gradient(backend: str):  # type: ignore[no-untyped-def]
    return ea.grad(ea.parse(E9.source), wrt=E9.wrt, backend=backend)


@pytest.mark.parametrize("build", [_e8_adjoint, _e9_gradient], ids=["E8", "E9"])
@pytest.mark.parametrize("poison", [None, np.inf, -np.inf, np.nan])
def test_worked_examples_equal_the_numpy_backend(build, poison: float | None) -> None:
    fused, plain = build("numba"), build("numpy")
    for n in SIZES:
        args = _poisoned(n, len(plain.program.params), n, poison)
        with np.errstate(all="ignore"):
            _same(fused(*args), plain(*args))


def test_e8_interior_has_no_select_on_the_brackets_it_implies() -> None:
    g = _e8_adjoint("numba")
    body = _interior_body(g.source, "x_bar")
    text = "\n".join(body)
    # the bracket [i + 1 < N] at i and at i - 1 holds on [1, N - 1): no select, no flag
    assert "N + 1 < 0" not in text and " if " not in text and "none" not in text
    # every read in the interior is unsigned (no wraparound select)
    reads = [r for line in body for r in line.split("x[")[1:]]
    assert len(reads) == 4 and all(r.startswith("np.uintp(") for r in reads)
    assert "none" not in g.source  # no strong-zero flag is read in the whole kernel
    # the edges keep every guard and bracket
    assert g.source.count("N + 1 < 0") >= 4


def test_e9_kernels_step_over_the_even_points() -> None:
    g = ea.grad(ea.parse(E9.source), wrt=E9.wrt, backend="numba")
    x_bar = g.source.split("def _k_x_bar(")[1].split("\n@nb.njit")[0]
    loops = x_bar.split("_Kc = ")[1].split("\n", 1)[1]
    assert "%" not in x_bar and "//" not in loops  # no modulo, no division per point
    assert "_out[np.uintp(2 * i_k)] = w[np.uintp(i_k)]" in _interior_body(g.source, "x_bar")[0]
    # w_bar: the guard 2i < N and the bracket [N > 2i] hold on [0, ceil(N / 2))
    assert [line.strip() for line in _interior_body(g.source, "w_bar")] == [
        "_out[np.uintp(i)] = x[min(np.uintp(2 * i), np.uintp(N - 1))]"]  # (clamped: no gathers)
    # and past ceil(N / 2), where the bracket is false, it stores 0.0 (no guarded reads)
    w_bar = g.source.split("def _k_w_bar(")[1].split("\n@nb.njit")[0]
    assert ("for i in range(_s1, N):  # where a bracket is false: 0\n"
            "        _out[np.uintp(i)] = _cst0"
            in w_bar)
    assert "    _cst0 = F(0)\n" in w_bar  # (the kernel's constants are named at its top)


# --- more programs: strides, relations, two dimensions ---------------------------------------
PROGRAMS = {
    "stride3": ("def f(x: [N], w: [N]):\n"
                "    y[i: N] = (3 * i < N) * x[3 * i]\n"
                "    return Sum[i: N](w[i] * y[i])\n", ("x", "w")),
    "stride2_rows": ("def f(A: [N, M], w: [N, M]):\n"
                     "    y[i: N, j: M] = (2 * j < M) * A[i, 2 * j]\n"
                     "    return Sum[i: N, j: M](w[i, j] * y[i, j])\n", ("A", "w")),
    "shifted_stride": ("def f(x: [N], w: [N]):\n"
                       "    y[i: N] = (2 * i + 1 < N) * x[2 * i + 1] * exp(w[i])\n"
                       "    return Sum[i: N](y[i] ** 2)\n", ("x", "w")),
    "stencil": ("def f(x: [N]):\n"
                "    d[i: N] = (i >= 2) * (i + 2 < N) * (x[i + 2] - 2 * x[i] + x[i - 2])\n"
                "    return Sum[i: N](d[i] ** 2)\n", ("x",)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("poison", [None, np.inf, np.nan])
def test_gradients_equal_the_numpy_backend(name: str, poison: float | None) -> None:
    source, wrt = PROGRAMS[name]
    prog = ea.parse(source)
    fused = ea.grad(prog, wrt=wrt, backend="numba")
    plain = ea.grad(prog, wrt=wrt, backend="numpy")
    for n in (1, 2, 3, 4, 5, 6, 7, 10, 33):
        args = random_arguments(prog, {"N": n, "M": n + 2}, n, poison=poison)
        with np.errstate(all="ignore"):
            _same(fused(**args), plain(**args))


def test_every_store_into_an_output_indexes_its_innermost_point_unsigned() -> None:
    """A signed index whose loop starts at a value known only at run time (an interior's, a
    fill's) takes Numba's wraparound branch, and the store does not vectorize: every store
    into a kernel's output indexes its innermost point unsigned (the loops stay in range)."""
    store = re.compile(r"^\s*_out\d*\[([^\]]*)\] = ", re.M)
    cases = {**PROGRAMS, "E8": (E8.source, E8.wrt), "E9": (E9.source, E9.wrt),
             "logsumexp": ("def f(x: [B, N], w: [B]):\n"
                           "    s[b: B] = log(Sum[n: N](exp(x[b, n])))\n"
                           "    return Sum[b: B](w[b] * s[b])\n", ("x", "w"))}
    for name, (source, wrt) in cases.items():
        g = ea.grad(ea.parse(source), wrt=wrt, backend="numba")
        found = store.findall(g.source)
        assert found, name
        for at in found:
            assert at.split(", ")[-1].startswith("np.uintp("), (name, at)


# Forward programs that read at i/2 themselves: stepped only where the odd points are +0.0.
FORWARD = {
    "read": ("def f(w: [N]):\n    y[i: N] = w[i/2]\n    return y\n", True),
    "sum_of_reads": ("def f(w: [N], v: [N]):\n    y[i: N] = w[i/2] - 2 * v[i/2]\n    return y\n",
                     True),
    "relation": ("def f(x: [N], R: rel[N]):\n    y[i: N] = R[i/2] * x[i]\n    return y\n", True),
    "times_data": ("def f(w: [N], x: [N]):\n    y[i: N] = w[i/2] * x[i]\n    return y\n", False),
    "negated": ("def f(w: [N]):\n    y[i: N] = -w[i/2]\n    return y\n", False),
    "plus_data": ("def f(w: [N], x: [N]):\n    y[i: N] = w[i/2] + x[i]\n    return y\n", False),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
@pytest.mark.parametrize("poison", [None, np.inf, np.nan])
def test_fractional_reads_step_only_where_the_odd_points_are_plus_zero(
        name: str, poison: float | None) -> None:
    source, steps = FORWARD[name]
    prog = ea.parse(source)
    fused = ea.compile(prog, backend="numba", optimize=False)
    assert fused.compiled.schedule.placement["y"] == "loop"
    kernel = fused.source.split("def _k_y(")[1].split("\n@nb.njit")[0]
    assert ("%" not in kernel) == steps, kernel
    for n in (1, 2, 3, 4, 5, 8, 9):
        args = random_arguments(prog, {"N": n}, n, poison=poison)
        with np.errstate(all="ignore"):
            want = evaluate(prog, **args)
            _same(fused(**args), np.asarray(want))


# Products with brackets that bound the point by sizes: 0.0 stored outside the range where
# they hold (their strong zero: inf and nan of the other factors give 0 there), the rest inside.
BRACKETED = {
    "both_ends": "def f(x: [N]):\n    y[i: N] = (i >= 3) * (2 * i < N) * x[i]\n    return y\n",
    "nested": "def f(x: [N]):\n    y[i: N] = x[i] * ((i + 2 < N) * (x[i] * x[i]))\n    return y\n",
    "strided": "def f(x: [N]):\n    y[i: N] = (N - 3 * i > 1) * x[2 * i]\n    return y\n",
    "rows": "def f(A: [N, M]):\n    y[i: N, j: M] = (j + 1 < M) * (A[i, j + 1] - A[i, j])\n"
            "    return y\n",
}


@pytest.mark.parametrize("name", sorted(BRACKETED))
@pytest.mark.parametrize("poison", [None, np.inf, np.nan])
def test_brackets_on_the_point_bound_its_loop(name: str, poison: float | None) -> None:
    prog = ea.parse(BRACKETED[name])
    fused = ea.compile(prog, backend="numba", optimize=False)
    assert fused.compiled.schedule.placement["y"] == "loop"
    kernel = fused.source.split("def _k_y(")[1].split("\n@nb.njit")[0]
    assert "# where a bracket is false: 0" in kernel
    for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 20):
        args = random_arguments(prog, {"N": n, "M": n % 4 + 1}, n, poison=poison)
        with np.errstate(all="ignore"):
            want = evaluate(prog, **args)
            _same(fused(**args), np.asarray(want))


# --- the proofs ------------------------------------------------------------------------------
def test_zero_off_keeps_the_strong_zero_apart_from_the_ordinary_one() -> None:
    half = (Affine.var("i").scale(Fraction(1, 2)),)
    w, x, r = Access("w", half), Access("x", (Affine.var("i"),)), Access("R", half)
    assert zero_off(w, "i", ()) == (2, False)
    assert zero_off(r, "i", ("R",)) == (2, True)
    assert zero_off(Binary("*", r, x), "i", ("R",)) == (2, True)  # 0 whatever x is
    assert zero_off(Binary("*", w, x), "i", ()) is None  # 0 * inf is nan
    assert zero_off(Binary("*", Const(3.0), w), "i", ()) == (2, False)
    assert zero_off(Binary("*", Const(-3.0), w), "i", ()) is None  # -0.0
    assert zero_off(Neg(w), "i", ()) is None
    third = Access("w", (Affine.var("i").scale(Fraction(1, 3)),))
    assert zero_off(Binary("+", w, third), "i", ()) is None  # not the same multiples
    # (i + j)/2 is integral at odd i for odd j: not zero off the even points
    mixed = Access("w", ((Affine.var("i") + Affine.var("j")).scale(Fraction(1, 2)),))
    assert zero_off(mixed, "i", ()) is None


def test_a_strided_guard_holds_on_a_range_with_ceiling_ends() -> None:
    # 0 <= 2i + 1 < N  <=>  0 <= i < ceil((N - 1) / 2)
    two_i = Affine.var("i").scale(2) + 1
    low, high = requirement("i", two_i, two_i, N)
    assert low == Affine.constant(0) and high == Ceil(Affine.of_dim(N) - 1, 2)
    for n in range(1, 12):
        end = -(-(n - 1) // 2)
        assert all(0 <= 2 * i + 1 < n for i in range(end)) and not 2 * end + 1 < n
    # 0 <= N - 1 - 3i < N  <=>  0 <= i < floor((N - 1) / 3) + 1 = ceil(N / 3)
    rev = Affine.of_dim(N) - 1 - Affine.var("i").scale(3)
    low, high = requirement("i", rev, rev, N)
    assert low == Affine.constant(0) and high == Ceil(Affine.of_dim(N), 3)


def test_a_bracket_is_proven_only_by_the_bounds_that_imply_it() -> None:
    env = {"i": Index("i", N, exact=Affine.var("i")),
           "j": Index("j", exact=Affine.var("i") - 1)}
    below = Cmp("<", Affine.var("j") + 1, Affine.of_dim(N))  # j + 1 < N, j = i - 1: i < N
    least = least_of("i", below, env)
    assert least is not None
    assert holds_on(least, [Affine.constant(0)], [Affine.of_dim(N)])
    assert holds_on(least, [Affine.constant(1)], [Affine.of_dim(N) - 1])
    assert not holds_on(least, [Affine.constant(0)], [Affine.of_dim(N) + 1])
    above = Cmp(">=", Affine.var("j"), Affine.constant(0))  # i >= 1
    least = least_of("i", above, env)
    assert least is not None
    assert holds_on(least, [Affine.constant(1)], [Affine.of_dim(N)])
    assert not holds_on(least, [Affine.constant(0)], [Affine.of_dim(N)])
    # 2i < N on [0, ceil(N / 2)); not on [0, ceil((N + 1) / 2))
    strided = least_of("i", Cmp("<", Affine.var("i").scale(2), Affine.of_dim(N)), env)
    assert strided is not None
    assert holds_on(strided, [Affine.constant(0)], [Ceil(Affine.of_dim(N), 2)])
    assert not holds_on(strided, [Affine.constant(0)], [Ceil(Affine.of_dim(N) + 1, 2)])
    assert least_of("i", Rel("R", (Affine.var("i"),)), env) is None  # type: ignore[arg-type]


def test_taps_of_a_solved_equality_leave_the_interior_unguarded() -> None:
    """The window sum's naive adjoint, Σ_{i1, j1, a, c} [i == a + i1 - 1 and j == c + j1 - 1]
    b_bar[i1, j1] / 9: each equality solves to a tap (i1 = i - a + 1) whose bounds the interior
    proves as it proves a shifted read's, so there it is read unsigned and unguarded (the
    kernel ran 2.4x slower guarded at every point); the edges keep every guard."""
    src = ("def blur_window(x: [H, W]):\n"
           "    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0\n"
           "    return Sum[i: H, j: W](b[i, j] ** 2)\n")
    g = ea.grad(ea.parse(src), wrt="x", optimize=False, backend="numba")
    kernel = g.source.split("def _k_x_bar(")[1].split("\n@nb.njit")[0]
    # (the interior rows, then in each the interior points, then the row's edges)
    body = kernel.split("# the interior rows")[1].split("# the interior:")[1].split(
        "# the edges")[0]
    assert "if 0 <= " not in body and "b_bar[np.uintp(" in body, body
    assert kernel.count("if 0 <= ") >= 2  # the edges
    for n, poison in ((1, None), (2, None), (5, np.inf), (17, np.nan), (33, None)):
        x = np.random.default_rng(n).standard_normal((n, n + 3))
        if poison is not None:
            x[n // 2, 1] = poison
        with np.errstate(all="ignore"):
            got, want = g(x), evaluate(g.program, x=x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
