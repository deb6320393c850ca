# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 7 steps (65 candidates run).
output 0: at (2, 0): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    for _ in range(2):
        A = A * A
    for i in range(len(A)):
        s1 = A[0]
    return s1[-1]
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'M')}, sizes={'N': 3, 'M': 1},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'A': array([[1.0], [1.0], [1e+300]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[ 4.], [ 0.], [nan]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[4.], [0.], [0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
