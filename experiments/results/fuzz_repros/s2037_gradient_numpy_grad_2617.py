# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2037`; minimized in 7 steps (81 candidates run).
output 0: at (0,): np.float64(-inf) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    for i in range(x.shape[0]):
        s1 = np.max(x, axis=0)
    t2 = (x @ x - np.exp(s1)) * x[0]
    return t2
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([1e+154], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([-inf])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([nan])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
