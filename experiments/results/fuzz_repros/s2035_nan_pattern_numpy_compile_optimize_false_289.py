# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2035`; minimized in 4 steps (41 candidates run).
at (): np.float64(inf) vs np.float64(5e+307) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    return np.mean(A * A[::2])
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[1e+154, 1e+154], [1.0, 0.0]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = 'inf'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '5e+307'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
