# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2030` (program 537); minimized in 10 steps (72 candidates run).
at (2,): np.float64(-inf) vs np.float64(inf) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    for _ in range(3):
        x = -np.where(x <= x, x, x)
    return x ** (-1)
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('M',)}, sizes={'M': 3},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([1.0, 1.0, -0.0], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '[ -1., -1., -inf]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[-1., -1., inf]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
