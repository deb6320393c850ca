# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 8 steps (69 candidates run).
output 1: at (0, 1): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A, B):
    t1 = A
    return A @ np.diag(B) @ t1[0]
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N'), 'B': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[-1e+300, 1e-300], [-1e+300, 1.0]], dtype=float64),
    'B': array([[1.0, 1.0], [1e+154, 1.0]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[-2.e+300, -2.e+300], [ 1.e-300, 1.e-300]], [[inf, nan], [-0., -1.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[-2.e+300, -2.e+300], [ 1.e-300, 1.e-300]], [[inf, 0.], [ 0., -1.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
