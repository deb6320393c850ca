# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: numpy at translate (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 8 steps (19 candidates run).
at (): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    for _ in range(3):
        A = A ** 0.5
    t1 = 100.0 > A
    return (t1 / t1).sum() >= np.where(np.trace(t1) < np.trace(t1), np.trace(A), np.trace(A))
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.2038718693672033, 0.3509604937227741, -0.4114969282461094],
     [0.41309764730913184, 1.9304786557859273, 0.3569230233653644],
     [1.2451223567811025, -1.397727244325532, 1.0297041430916176]], dtype=float64),
}
STAGE = 'translate'
EXPECTED = 'np.False_'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '1.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
