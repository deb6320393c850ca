# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 3 steps (38 candidates run).
output 0: at (0,): np.float64(1.0) vs np.float64(0.5)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    s1 = 0.0
    for i in range(len(x)):
        s1 += np.maximum(x[0] + 1.0, x[0])
    return s1
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([-1e+300], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([1.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0.5])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
