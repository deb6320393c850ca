# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 2027`; minimized in 9 steps (40 candidates run).
output 0: at (0, 0): np.float64(inf) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    s1 = 1.0
    for i in range(len(A) - 1):
        s1 = np.tanh(np.min(A[:-1], axis=0))
    t2 = A * A - A
    return t2[0] ** 2 @ np.dot(np.full((A.shape[0], A[1:].shape[0]), 0.5), s1[:-1])
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[-0.5048487148954812, -1e+154], [1.9328070792131071, 0.42724053632057946]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[inf, inf], [ 0., 0.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[nan, inf], [ 0., 0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
