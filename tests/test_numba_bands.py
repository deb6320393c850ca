"""Band sums in the fused backend: a window of constant width along an index, ``Σ_j [i + a <= j
<= i + b]·f(j)``, run as a block pass (van Herk / Gil-Werman, fused/bands.py) in O(1) a point,
with the interpreter's values and its nan/inf and strong-zero patterns (no subtraction: an inf
in a window is that window's alone)."""

from __future__ import annotations

import numpy as np
import pytest
from numba_inputs import agree

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from eqsat_ad.backend.fused.bands import BAND_MIN, band_form, banded  # noqa: E402
from eqsat_ad.backend.fused.schedule import LOOP_RATIO, loop_price  # noqa: E402
from eqsat_ad.plan.lower import lower_program  # noqa: E402
from eqsat_ad.plan.poly import compare  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")

# (name, source): widths 10 to 128, trailing, leading and centred windows, either side's
# coefficient, bounds by sizes, a band inside a band, strong zeros counted (a data
# comparison) and an interval's (windows past the end), -0.0 terms.
PROGRAMS = {
    "trailing10": "def f(x: [N]):\n"
                  "    y[i: N] = Sum[j: N]((i - 10 < j and j <= i) * x[j])\n    return y\n",
    "leading17_exp": "def f(x: [N]):\n"
                     "    y[i: N] = Sum[j: N]((j >= i + 3 and j < i + 20) * exp(x[j]))\n"
                     "    return y\n",
    "centred33": "def f(x: [N], w: [N]):\n"
                 "    y[i: N] = Sum[j: N]((i - j <= 16 and j - i <= 16) * x[j] * w[j])\n"
                 "    return y\n",
    "sized13": "def f(x: [N]):\n"
               "    y[i: N] = Sum[j: N]((j >= i - 12 and j < i + 1 and j >= 2 and j < N - 3)"
               " * x[j])\n    return y\n",
    "nested": "def f(x: [N]):\n"
              "    y[i: N] = 0.5 * Sum[j: N]((j >= i and j < i + 16 and j >= 0 and N > j) * "
              "Sum[k: N]((k >= j - 11 and k < j + 1) * x[k]))\n    return y\n",
    "nested_counted": "def f(x: [N], m: [N], z: [N]):\n"
                      "    y[i: N] = z[i] * Sum[j: N]((j >= i and j < i + 16) * x[j] * "
                      "Sum[k: N]((k >= j - 11 and k < j + 1) * gt(m[k], 0.0) * x[k]))\n"
                      "    return y\n",
    "triple": "def f(x: [N]):\n"
              "    y[i: N] = Sum[j: N]((j >= i - 5 and j < i + 11) * Sum[k: N]((k >= j - 11 and "
              "k < j + 1) * Sum[l: N]((l > k and l <= k + 30) * x[l])))\n    return y\n",
    "counted": "def f(x: [N], m: [N], z: [N]):\n"
               "    y[i: N] = z[i] * Sum[j: N]((i - 12 < j and j <= i) * gt(m[j], 0.0) * x[j])\n"
               "    return y\n",
    "past_end": "def f(x: [N], z: [N]):\n"
                "    y[i: N] = z[i] * Sum[j: N]((i + 5 < j and j <= i + 20) * x[j])\n"
                "    return y\n",
    "negated": "def f(x: [N]):\n"
               "    y[i: N] = 1.0 / Sum[j: N]((i - 11 < j and j <= i) * -x[j])\n    return y\n",
    "long128": "def f(x: [N]):\n"
               "    y[i: N] = Sum[j: N]((i - 128 < j and j <= i) * x[j]) / 128.0\n    return y\n",
}
SIZES = (1, 3, 9, 12, 40, 300)

MOVING_LONG = """\
def moving_average_long(x: [N]):
    m[i: N] = Sum[j: N]((i - 128 < j and j <= i) * x[j]) / 128.0
    return Sum[i: N](m[i] ** 2)
"""


def _inputs(prog: ea.Program, n: int, seed: int, case: str, dtype: type
            ) -> dict[str, np.ndarray]:
    """Normal entries; ``case``: "finite", "poison" (inf, -inf and nan at the first, middle
    and last entries and three random ones, both infs within one window somewhere), "zeros"
    (+0.0: the terms of ``negated`` are -0.0), "sparse_inf" (one inf)."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in prog.params:
        v = rng.standard_normal(n)
        if case == "zeros":
            v[:] = 0.0
        elif case == "poison" and p.name != "m":
            v[0], v[n // 2], v[-1] = np.inf, -np.inf, np.nan
            at = rng.integers(0, n, 3)
            v[at] = [np.nan, np.inf, -np.inf][: len(at)]
        elif case == "sparse_inf" and p.name != "m":
            v[rng.integers(0, n)] = np.inf if seed % 2 else -np.inf
        out[p.name] = v.astype(dtype)
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_band_sums_agree_with_the_interpreter(name: str) -> None:
    prog = ea.parse(PROGRAMS[name])
    f = ea.compile(prog, backend="numba", optimize=False)
    assert f.compiled.schedule.placement["y"] == "loop", f.compiled.schedule.why
    kernel = f.source.split("def _k_y(")[1]
    assert "while _bd" in kernel, "the band sum runs as a loop, not a block pass"
    for n in SIZES:
        for seed, case in enumerate(("finite", "poison", "poison", "zeros", "sparse_inf",
                                     "sparse_inf")):
            for dtype in (np.float64, np.float32):
                args = _inputs(prog, n, seed + n, case, dtype)
                got = f(**args)
                assert got.dtype == dtype
                with np.errstate(all="ignore"):
                    want = evaluate(prog, **{k: v.astype(np.float64) for k, v in args.items()})
                agree(got, want, 1e-4 if dtype == np.float32 else 1e-11)


# Bands beside other structure: an output index over another extent than the summed one, a
# band along the row or the column index of a 2-D statement (its pass into a buffer), two
# bands in one body (one fills the output, the other a buffer), a window offset by sizes.
SHAPED = {
    "extents": ("def f(x: [N], z: [M]):\n"
                "    y[i: M] = z[i] * Sum[j: N]((i - 12 < j and j <= i) * x[j])\n    return y\n",
                ({"N": 5, "M": 30}, {"N": 40, "M": 7}, {"N": 100, "M": 100})),
    "rows": ("def f(x: [N], A: [N, K]):\n    y[i: N, k: K] = A[i, k] * "
             "Sum[j: N]((i - 12 < j and j <= i) * x[j])\n    return y\n",
             ({"N": 5, "K": 3}, {"N": 50, "K": 4})),
    "columns": ("def f(x: [K], A: [N, K]):\n    y[i: N, k: K] = A[i, k] * "
                "Sum[j: K]((k - 12 < j and j <= k) * x[j])\n    return y\n",
                ({"N": 5, "K": 3}, {"N": 6, "K": 40})),
    "two": ("def f(x: [N], w: [N]):\n    y[i: N] = Sum[j: N]((i - 12 < j and j <= i) * x[j]) * "
            "Sum[j: N]((i <= j and j < i + 20) * w[j])\n    return y\n",
            ({"N": 5}, {"N": 60})),
    "by_sizes": ("def f(x: [N]):\n    y[i: N] = Sum[j: N]((j >= i + N - 30 and j < i + N - 10)"
                 " * x[j])\n    return y\n", ({"N": 5}, {"N": 25}, {"N": 60})),
}


@pytest.mark.parametrize("name", sorted(SHAPED))
def test_band_sums_beside_other_structure(name: str) -> None:
    src, sizes_list = SHAPED[name]
    prog = ea.parse(src)
    f = ea.compile(prog, backend="numba", optimize=False)
    assert "while _bd" in f.source.split("def _k_y(")[1]
    for sizes in sizes_list:
        for seed, poison in enumerate((False, True)):
            rng = np.random.default_rng(seed)
            args = {}
            for p in prog.params:
                v = rng.standard_normal(tuple(sizes[d.name] for d in p.shape))
                if poison:
                    v.reshape(-1)[rng.integers(0, v.size, 3)] = [np.inf, -np.inf, np.nan]
                args[p.name] = v
            with np.errstate(all="ignore"):
                want = evaluate(prog, **args)
            agree(f(**args), want, 1e-11)


def test_a_window_adds_its_own_terms_only() -> None:
    # An inf leaves every window that holds it inf and no other (a running sum that
    # subtracted the leaving term would make every later window nan); +inf and -inf in one
    # window make it nan; the windows after are finite again.
    f = ea.compile(ea.parse(PROGRAMS["long128"]), backend="numba", optimize=False)
    x = np.ones(1000)
    x[300], x[600], x[640] = np.inf, np.inf, -np.inf
    y = f(x=x)
    hit = np.zeros(1000, dtype=bool)
    hit[300:428] = True
    assert np.all(np.isposinf(y[hit])) and np.all(np.isfinite(y[:300]))
    assert np.all(np.isfinite(y[428:600]))
    assert np.all(np.isposinf(y[600:640])) and np.all(np.isnan(y[640:728]))
    assert np.all(np.isneginf(y[728:768])) and np.all(np.isfinite(y[768:]))
    np.testing.assert_allclose(y[768:], 1.0, rtol=0, atol=1e-15)  # exact: 128 ones / 128
    np.testing.assert_allclose(y[:127], np.arange(1, 128) / 128.0, rtol=0, atol=1e-15)


def test_band_forms_and_widths() -> None:
    # The form: the window's first j relative to i, its width, the other bounds; a width
    # under BAND_MIN stays the loop writer's taps (vectorized: faster, moving_average).
    (y,) = ea.parse(PROGRAMS["sized13"]).statements
    form = band_form(y.body)
    assert form is not None and form.width == 13 and str(form.low) == "-12"
    assert len(form.lows) == 1 and len(form.highs) == 1
    short = ea.parse("def f(x: [N]):\n    y[i: N] = Sum[j: N]((i - 8 < j and j <= i) * x[j])"
                     "\n    return y\n").statements[0]
    assert band_form(short.body) is not None and banded(short.body) is None
    assert BAND_MIN > 8
    # not a band: a bound on j by another index, a window that depends on i inside
    for src in ("Sum[j: N]((j >= i and j < i + 20) * x[j] * x[i])",
                "Sum[j: N]((j >= i and j < 2 * i + 20) * x[j])",
                "Sum[j: N]((j >= i) * x[j])"):
        (s,) = ea.parse(f"def f(x: [N]):\n    y[i: N] = {src}\n    return y\n").statements
        assert band_form(s.body) is None, src


def test_moving_average_long_gradient_runs_in_linear_time() -> None:
    # Its optimized gradient nests a band of 128 inside another (128·128 points a point as
    # loops): priced and run as two block passes, the inner one streamed into the outer's
    # terms, below the NumPy plan's cumulative sums.
    g = ea.grad(ea.parse(MOVING_LONG), "x", backend="numba")
    prog = g.compiled._prog
    (x_bar,) = [s for s in prog.statements if s.name == "x_bar"]
    assert g.compiled.schedule.placement["x_bar"] == "loop", g.compiled.schedule.why
    plan = lower_program(prog).plan
    price = loop_price(x_bar)
    assert price.degree() == 1
    assert compare(price, plan.statement_cost("x_bar") * LOOP_RATIO) < 0
    assert compare(price, plan.statement_cost("x_bar") * 4) < 0, (price, plan.cost)
    kernel = g.source.split("def _k_x_bar(")[1].split("def run(")[0]
    assert kernel.count("while _bd") == 2  # two passes, no loop over a window of 128
    assert "& 255" in kernel or "& 511" in kernel  # the inner pass streams into a ring
    for n, case in ((5, "finite"), (200, "finite"), (1000, "poison"), (130, "sparse_inf")):
        for dtype in (np.float64, np.float32):
            args = _inputs(g.program, n, n, case, dtype)
            got = g(**args)
            assert got.dtype == dtype
            with np.errstate(all="ignore"):
                want = evaluate(g.naive, x=args["x"].astype(np.float64))
            agree(got, want, 1e-4 if dtype == np.float32 else 1e-11)
