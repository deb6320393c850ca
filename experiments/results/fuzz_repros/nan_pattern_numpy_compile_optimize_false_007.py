# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 8 steps (68 candidates run).
at (): np.float64(inf) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(B):
    t1 = B.T ** 3
    return (t1[:, 0] * np.sum(B.T, axis=1)).sum()
'''
CASE = Case('numpy', SOURCE, shapes={'B': ('N', 'M')}, sizes={'N': 2, 'M': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'B': array([[1.0, 1e+300, 1e+300], [1.0, 1.0, -1e+300]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = 'inf'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
