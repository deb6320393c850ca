# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: numpy at translate (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2033`; minimized in 13 steps (36 candidates run).
at (0, 1): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    s1 = 0.0
    t2 = 0.0 * np.log(A)
    return t2 <= (t2 <= t2)
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.5509557158931089, -1.5933771682199964], [1.5106440404475268, -1.6896780752735314]], dtype=float64),
}
STAGE = 'translate'
EXPECTED = '[[ True, False], [ True, False]]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[[1., 1.], [1., 1.]]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
