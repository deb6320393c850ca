# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 2027`; minimized in 14 steps (66 candidates run).
d/dx[0]: 0.25 vs finite differences 0.0
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    t2 = np.clip(x, 1.0, 1.0)
    return t2[0]
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0], dtype=float64),
}
STAGE = 'gradient (interpreter)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.25'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
