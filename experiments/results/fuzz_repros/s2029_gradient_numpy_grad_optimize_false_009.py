# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2029`; minimized in 3 steps (25 candidates run).
output 0: at (0,): np.float64(inf) vs np.float64(-inf) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, B):
    s1 = 0.0
    return np.mean(x / np.einsum('ij,j->i', np.full((x.shape[0], x[1:].shape[0]), 0.001), x[1:]))
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'B': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([1.139166973513688, -0.0], dtype=float64),
    'B': array([[0.0, -0.0], [0.38597297993407004, 1.7323569814697894]], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([inf, nan], [[0., 0.], [0., 0.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([-inf, nan], [[0., 0.], [0., 0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
