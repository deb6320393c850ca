# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2028`; minimized in 8 steps (37 candidates run).
d/dx[0]: nan vs finite differences 0.0
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, B, C):
    for _ in range(2):
        x = np.sqrt(B[0] / x)
    return np.where(1.0 >= np.sin(x[0]), x[-1], 1.0)
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'B': ('N', 'N'), 'C': ('M', 'N')}, sizes={'N': 1, 'M': 0},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.3919717357761472], dtype=float64),
    'B': array([[-0.7124284167392525]], dtype=float64),
    'C': zeros((0, 1), dtype=float64),
}
STAGE = 'gradient (interpreter)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
