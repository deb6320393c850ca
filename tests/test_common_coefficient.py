"""A coefficient every term of a statement shares is applied once, in the fast code.

An unrolled window (blur's nine taps, a moving average's eight) lowered term by term was one
product by the coefficient per tap, each into a temporary, then added into the array: the
plan now adds the taps' views and multiplies the array by the coefficient once
(``plan/lower/statements.py``), and a sum that starts from +0.0 starts the array from it (no
``+ 0.0`` pass at the end). These tests count (lines and plan prices) and compare with the
interpreter: values, signs of zeros, overflow of the unscaled sum, inf arguments (the strict
code keeps one product per term), float32.
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.plan.price import program_code, program_plan

BLUR = (  # blur's adjoint as the optimizer returns it: the 1/9 inside both window sums
    "def blur(w: [H, W]):\n"
    "    x_bar[i: H, j: W] = Sum[k: H]((k >= i - 1 and k < i + 2) * Sum[l: W]("
    "(l >= j - 1 and l < j + 2) * (0.1111111111111111 * w[k, l])))\n"
    "    return x_bar\n")
MOVING = """
def moving(x: [N]):
    m[i: N] = Sum[j: N]((i - 8 < j and j <= i) * x[j]) / 8.0
    return m
"""
POINTS = """
def points(x: [N]):
    y[i: N] = 2.0 * x[0] * (i == 0) + 2.0 * x[1] * (i == 1) + 2.0 * x[2] * (i == 2)
    return y
"""
SCALAR_SUM = """
def scalar_sum(v: [N]):
    t[i: 2] = Sum[j: 3](0.5 * v[j + 1])
    return t
"""


def _lines(src: str, sizes: dict[str, int]) -> list[str]:
    return [ln.strip() for ln in program_code(ea.parse(src), sizes)]


def test_the_blur_taps_add_views_and_one_pass_scales_them() -> None:
    sizes = {"H": 64, "W": 48}
    lines = _lines(BLUR, sizes)
    taps = [ln for ln in lines if ln.startswith("x_bar[") and "+=" in ln]
    assert len(taps) == 8, lines
    assert not any("*" in ln for ln in taps), taps  # a view added: no product, no temporary
    assert lines.count("x_bar *= 0.1111111111111111") == 1, lines
    assert "x_bar = np.add(w, 0.0, dtype=_dt)" in lines, lines  # the sum's +0.0, at its start
    assert not any(ln.startswith("x_bar = x_bar + 0.0") for ln in lines), lines
    # priced as it runs: 9 slice updates and the scale, against one product per tap before
    image = {"H": 1024, "W": 1024}
    assert program_plan(ea.parse(BLUR), image).value(image) < 17 * 1024 * 1024


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_factored_windows_agree_with_the_interpreter(dtype: type) -> None:
    rng = np.random.default_rng(0)
    for src, args in ((BLUR, {"w": rng.standard_normal((9, 7))}),
                      (MOVING, {"x": rng.standard_normal(30)})):
        args = {k: v.astype(dtype) for k, v in args.items()}
        got = ea.compile(ea.parse(src))(**args)
        want = evaluate(ea.parse(src), **args)
        assert got.dtype == dtype
        tol = 1e-14 if dtype == np.float64 else 1e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_sum_of_negative_zeros_is_positive_zero_as_in_the_interpreter() -> None:
    for src, args in ((BLUR, {"w": np.full((5, 4), -0.0)}), (MOVING, {"x": np.full(12, -0.0)})):
        got = ea.compile(ea.parse(src))(**args)
        want = evaluate(ea.parse(src), **args)
        assert np.array_equal(np.signbit(got), np.signbit(want)), (src, got)
        assert not np.signbit(got).any()


def test_a_sum_that_overflows_before_its_scale_reruns_the_strict_code() -> None:
    # nine taps of 1e308 overflow when added first; the interpreter scales each tap by 1/9
    w = np.full((6, 5), 1e308)
    got = ea.compile(ea.parse(BLUR))(w=w)
    want = evaluate(ea.parse(BLUR), w=w)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_inf_arguments_give_the_interpreters_values_and_nan_pattern() -> None:
    w = np.random.default_rng(1).standard_normal((6, 5))
    w[2, 3], w[0, 0], w[5, 4] = np.inf, -np.inf, np.nan
    got = ea.compile(ea.parse(BLUR))(w=w)
    want = evaluate(ea.parse(BLUR), w=w)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_point_writes_keep_their_products() -> None:
    # terms at points an equality fixes: a pass over the array would cost more than it saves
    lines = _lines(POINTS, {"N": 1000})
    assert not any("*=" in ln for ln in lines), lines
    x = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(ea.compile(ea.parse(POINTS))(x=x),
                                  evaluate(ea.parse(POINTS), x=x))


def test_a_dense_sum_broadcast_to_the_output_is_scaled_before_the_broadcast() -> None:
    # (fuzz seed 3001 case 615: the scale was written into a read-only broadcast)
    lines = _lines(SCALAR_SUM, {"N": 5})
    assert not any("*=" in ln for ln in lines), lines
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    for optimize in (False, True):
        got = ea.compile(ea.parse(SCALAR_SUM), optimize=optimize)(v=v)
        np.testing.assert_allclose(got, evaluate(ea.parse(SCALAR_SUM), v=v), rtol=1e-15)
