# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 7 steps (79 candidates run).
at (0,): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    return np.einsum('ij,j->i', np.where(1.0 <= np.full((x.shape[0], x[1:].shape[0]), 2.0), 0.0, 1.0), x[1:])
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([nan, nan], dtype=float64),
}
STAGE = 'compile'
EXPECTED = '[nan, nan]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[0., 0.]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
