# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 8 steps (74 candidates run).
at (2,): np.float64(-1e+300) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    t1 = np.where(x < 1.0, x, np.einsum('i,i->', x[1:], x[1:]))
    return t1
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([1.0, 1.0, -1e+300], dtype=float64),
}
STAGE = 'compile'
EXPECTED = '[ inf, inf, -1.e+300]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[inf, inf, nan]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
