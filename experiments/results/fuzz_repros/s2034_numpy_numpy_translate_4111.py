# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: numpy at translate (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2034`; minimized in 26 steps (175 candidates run).
at (0, 0): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(B):
    for _ in range(3):
        z = np.log(np.full(B.shape, 0.001))
    t1 = 0.0
    return 1.0 < 1.0 / (t1 * z)
'''
CASE = Case('numpy', SOURCE, shapes={'B': ('N', 'M')}, sizes={'N': 1, 'M': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'B': array([[1.0]], dtype=float64),
}
STAGE = 'translate'
EXPECTED = '[[False]]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[[1.]]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
