# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2042`; minimized in 2 steps (68 candidates run).
output 0: at (0,): np.float64(-144.0) vs np.float64(-4.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, C):
    return ((np.sum(x[:-1], axis=0) + np.sum(C)) / x[0]) ** 2
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'C': ('N', 'N')}, sizes={'N': 4},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([1.0, 1.0, -1e-300, 1.0], dtype=float64),
    'C': array([[1.0, 1.0, 1.0, 5e-324], [1.0, 1e-300, -1e-300, 1e-300], [1.0, 1.0, 1.0, 1.0],
     [1.0, 1e+300, 1e+154, -1e+300]], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([-144., 18., 18., 0.], [[18., 18., 18., 18.], [18., 18., 18., 18.], [18., 18., 18., 18.], [18., 18., 18., 18.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([-4., 4., 4., 0.], [[4., 4., 4., 4.], [4., 4., 4., 4.], [4., 4., 4., 4.], [4., 4., 4., 4.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
