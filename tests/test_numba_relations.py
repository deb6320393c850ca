"""Sums over a dense relation mask in the Numba backend (E12: y[m] = Σ_n [R(m, n)]·x[n]).

Both gradients run as loop nests: ``w_bar[i] = Σ_j [R(i, j)]·x[j]`` along R's rows, a select
per term (no branch around the read), and ``x_bar[i] = Σ_j [R(j, i)]·w[j]`` tiled along ``i``
(R walked by rows). A relation keeps its strong zero: an inf or nan of ``x`` where R is false
contributes 0, not nan; where R holds, IEEE arithmetic (inf - inf is nan)."""

from __future__ import annotations

import numpy as np
import pytest
from numba_inputs import agree

import eqsat_ad as ea
from eqsat_ad.examples import WORKED_EXAMPLES
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")


pytestmark = pytest.mark.usefixtures("numba_cache")


def _e12() -> ea.Program:
    return next(e for e in WORKED_EXAMPLES if e.id == "E12").program()


def _inputs(m: int, n: int, dtype: type, seed: int, density: float = 0.3
            ) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(n).astype(dtype), "w": rng.standard_normal(m).astype(dtype),
            "R": rng.random((m, n)) < density}


def test_both_relation_sums_run_as_loop_nests_without_a_branch() -> None:
    g = ea.grad(_e12(), ("x", "w"), backend="numba")
    placement = g.compiled.schedule.placement
    assert placement == {"y_bar": "numpy", "x_bar": "loop", "w_bar": "loop"}
    assert "_np_" not in g.source  # no statement falls back to NumPy code
    assert "for _v0 in range(" in g.source  # x_bar tiled along i
    # every term is added (a select), none behind an `if` on the mask
    assert "if not not (R[" not in g.source
    assert "= x[" in g.source  # w_bar's read taken before the select


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("m", "n"), [(1, 1), (3, 5), (7, 40), (33, 300)])
def test_values_equal_the_interpreter(dtype: type, m: int, n: int) -> None:
    g = ea.grad(_e12(), ("x", "w"), backend="numba")
    args = _inputs(m, n, dtype, seed=m * n)
    got = g(**args)
    want = evaluate(g.program, **{k: (v.astype(np.float64) if v.dtype != bool else v)
                                  for k, v in args.items()})
    assert all(np.asarray(a).dtype == dtype for a in got)
    agree(got, want, 1e-12 if dtype == np.float64 else 1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_finite_values_off_the_relation_contribute_nothing(dtype: type) -> None:
    g = ea.grad(_e12(), ("x", "w"), backend="numba")
    m, n = 37, 300  # x_bar's interior (tiles of i) and its edges
    args = _inputs(m, n, dtype, seed=5)
    x, w, r = args["x"], args["w"], args["R"]
    x[::7], x[3::11], x[5::13] = np.inf, -np.inf, np.nan
    w[::5], w[2::9] = np.inf, np.nan
    r[:, 0] = False  # an inf column nobody reads: 0 in every w_bar
    x[0] = np.inf
    r[1, :] = False  # a row with no pair: w_bar 0, its w (inf) never read by x_bar
    w[1] = np.inf
    r[2, :] = True  # a row reading every non-finite x: nan
    with np.errstate(all="ignore"):
        got = g(**args)
        want = evaluate(g.program, **{k: (v.astype(np.float64) if v.dtype != bool else v)
                                      for k, v in args.items()})
    x_bar, w_bar = got
    assert w_bar[1] == 0 and np.isnan(w_bar[2])
    assert np.isfinite(w_bar).any() and np.isnan(x_bar).any()
    agree(got, want, 1e-12 if dtype == np.float64 else 1e-4)


def test_an_empty_relation_gives_zeros_not_nan() -> None:
    g = ea.grad(_e12(), ("x", "w"), backend="numba")
    args = _inputs(20, 50, np.float64, seed=1)
    args["R"][:] = False
    args["x"][:] = np.inf
    args["w"][:] = np.nan
    x_bar, w_bar = g(**args)
    assert not np.signbit(x_bar).any() and not np.signbit(w_bar).any()
    np.testing.assert_array_equal(x_bar, np.zeros(50))
    np.testing.assert_array_equal(w_bar, np.zeros(20))
