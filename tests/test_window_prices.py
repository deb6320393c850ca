"""Short windows run as shifted slices, long ones as running sums, and the prices say why.

Counting only (kernel lists and plan prices, no timing): a running sum is priced at
:data:`RUNNING_SUM_WEIGHT` elementwise passes per element (calibrated by
experiments/calibrate_kernels.py), so the trailing mean over 8 samples keeps its 14 shifted-slice
adds (a scan of a scan, which ran 1.25x slower, is priced above them), while over 128 samples
both the naive and the optimized gradients read running sums; neither is priced above the naive
program's plan.
"""

from __future__ import annotations

from collections import Counter

import pytest

import eqsat_ad as ea
from eqsat_ad.plan.kernels import RUNNING_SUM_WEIGHT, RunningSum
from eqsat_ad.plan.price import program_plan

SIZES = {"N": 10**6}


def _moving(k: int) -> str:
    return f"""
def moving_average(x: [N]):
    m[i: N] = Sum[j: N]((i - {k} < j and j <= i) * x[j]) / {k}.0
    return Sum[i: N](m[i] ** 2)
"""


def _plans(k: int):
    prog = ea.parse(_moving(k))
    opt = ea.grad(prog, wrt="x", sizes=SIZES)
    naive = ea.grad(prog, wrt="x", optimize=False)
    return program_plan(opt.program, SIZES), program_plan(naive.program, SIZES)


def test_running_sums_are_priced_as_calibrated() -> None:
    # the calibration measured np.cumsum at 11..18 elementwise passes per element and a band
    # read by running sums (priced RUNNING_SUM_WEIGHT + 3) at 21..28
    assert 11 <= RUNNING_SUM_WEIGHT <= 25


def test_a_short_window_gradient_is_shifted_slices() -> None:
    opt, naive = _plans(8)
    kinds = Counter(opt.kinds())
    assert kinds["scan"] == 0, str(opt)
    assert kinds["slice-update"] == 14, str(opt)  # 7 shifted adds forward, 7 in the adjoint
    assert opt.value(SIZES) <= naive.value(SIZES)
    # the scan of a scan (two band reads of running sums and a scale) is priced above it
    band_by_scans = 2 * (RUNNING_SUM_WEIGHT + 3) + 1
    assert opt.value(SIZES) < band_by_scans * SIZES["N"]


def test_a_long_window_gradient_is_running_sums() -> None:
    opt, naive = _plans(128)
    running = [k for k in opt.kernels if isinstance(k, RunningSum)]
    assert len(running) == 2, str(opt)
    assert "slice-update" not in opt.kinds(), str(opt)
    assert opt.value(SIZES) <= naive.value(SIZES)
    # 128 shifted-slice adds each way would be priced far above the two running sums
    assert opt.value(SIZES) < 2 * 128 * SIZES["N"]


@pytest.mark.parametrize("k", [8, 128])
def test_window_gradients_are_linear(k: int) -> None:
    opt, _ = _plans(k)
    big = {"N": 2**20}
    assert opt.value(big) <= 64 * big["N"]
