# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 1 steps (89 candidates run).
output 1: at (0,): np.float64(4.161468365471424e-301) vs np.float64(-0.4161468365471424)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np


def f(x, y):
    return np.dot(y, np.dot(np.cos(np.full((x.shape[0], x[1:].shape[0],), 2.0)), y[:-1]))
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('M',), 'y': ('M',)}, sizes={'M': 4},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([-1e-300, 1.0, 1.0, 1.0], dtype=float64),
    'y': array([1e+154, -1e-300, -1e+154, 1.0], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([0., 0., 0., 0.], [4.161468365471424e-301, 4.161468365471424e-301, 4.161468365471424e-301, 4.161468365471424e-301])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0., 0., 0., 0.], [-0.4161468365471424, -0.4161468365471424, -0.4161468365471424, 0. ])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
