# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2031` (program 1513); minimized in 8 steps (52 candidates run).
output 0: at (0, 0): np.float64(6.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    s1 = 0.0
    for i in range(len(A)):
        s1 = s1 + np.minimum(1.0, np.trace(A) * np.trace(A))
    s3 = 0.0
    for i in range(len(A) - 1):
        s3 += s1
    return s3 * np.trace(A)
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[1.0, 1.0, 1.0], [-0.0, 1.0, 5e-324], [1.0, 1.0, -1e+300]], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([[6., 0., 0.], [0., 6., 0.], [0., 0., 6.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[nan, 0., 0.], [ 0., nan, 0.], [ 0., 0., nan]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
