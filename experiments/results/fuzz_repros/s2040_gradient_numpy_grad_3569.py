# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2040`; minimized in 10 steps (104 candidates run).
output 0: at (1,): np.float64(nan) vs np.float64(inf) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    s1 = 0.0
    for i in range(len(x)):
        s1 = s1 + np.minimum(x[1], x[i])
    return np.where(s1 <= 0.0, 1.0, s1 / 0.0)
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([1e+300, 1.0, -0.0], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([nan, nan, inf])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([nan, inf, inf])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
