# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 2 steps (12 candidates run).
output 0: at (0,): np.float64(-inf) vs np.float64(-3.0000000000000003e+307) (-inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    s1 = 0.0
    for i in range(x.shape[0]):
        s1 = np.dot(np.dot(np.full((x[::2].shape[0], x.shape[0]), -1.5), x), np.einsum('ij,j->i', np.full((x[::2].shape[0], x[1:].shape[0]), 0.001), x[:-1]))
    return np.maximum(x[0] + x[0], np.where(s1 < x[0], x[-1], s1)) * np.max(np.einsum('ij,j->i', np.full((x[1:].shape[0], x[::2].shape[0]), 100.0), x[::2]), axis=0)
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([-0.6962876683224406, -0.6589192597070167, 1e+154], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([ -inf, -inf, 8.131241568176743e+153])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([-3.0000000000000003e+307, -3.0000000000000003e+307, 8.1312415681767446e+153])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
