# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at compile(optimize=False) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2028`; minimized in 2 steps (52 candidates run).
OverflowError: cannot convert float infinity to integer [fromnumeric.py:83]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    s1 = 0.0
    for _ in range(3):
        x = np.min(np.full((x.shape[0], x.shape[0]), 3.0), axis=0)
    return s1
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0, 1.0], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'OverflowError: cannot convert float infinity to integer [fromnumeric.py:83]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
