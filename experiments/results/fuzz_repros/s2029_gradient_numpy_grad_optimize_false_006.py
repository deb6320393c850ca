# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2029`; minimized in 10 steps (65 candidates run).
output 0: at (1,): np.float64(1.0) vs np.float64(0.5)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(y):
    return np.maximum(y[1], y[1] + 1.0)
'''
CASE = Case('numpy', SOURCE, shapes={'y': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'y': array([1.0, -1e+300], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([0., 1.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0. , 0.5])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
