# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 3007`; minimized in 12 steps (90 candidates run).
at (): np.float64(0.0) vs np.float64(2.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    t1 = np.sum(np.maximum(2.0, np.full(x[::2].shape, 0.001)), axis=0)
    return t1 - t1
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0, 1.0, 1.0], dtype=float64),
}
STAGE = 'compile'
BACKEND = 'numpy'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '2.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS}, backend=BACKEND)[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
