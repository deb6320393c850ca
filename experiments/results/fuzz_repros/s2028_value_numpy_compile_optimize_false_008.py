# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2028`; minimized in 9 steps (34 candidates run).
at (): np.float64(0.0) vs np.float64(-2.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(B):
    s1 = 0.0
    t2 = B[1:]
    return np.sum(B - B)
'''
CASE = Case('numpy', SOURCE, shapes={'B': ('N', 'N')}, sizes={'N': 4},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'B': array([[-0.0, 1e-300, 1.0, 1e+300], [1.0, 0.0, 1.0, -1e+300], [1.0, 1.0, -1e+300, -1e+300],
     [-1e-300, 5e-324, 1.0, 1.0]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '-2.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
