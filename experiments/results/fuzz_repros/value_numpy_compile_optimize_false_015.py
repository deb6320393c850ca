# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile(optimize=False) (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 2 steps (22 candidates run).
at (): np.float64(0.0) vs np.float64(1.25e+153)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    return np.mean(A.T)
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 4},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'A': array([[1.0, 1.0, 1.0, 1.0], [-1e+300, 0.0, 1.0, 1.0], [1e+154, 1.0, 1e-300, 0.0],
     [0.0, 1e+300, 1.0, 1e+154]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '1.25e+153'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
