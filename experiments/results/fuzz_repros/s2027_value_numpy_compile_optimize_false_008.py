# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile(optimize=False) (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 4 steps (10 candidates run).
at (): np.float64(0.0) vs np.float64(-12.260600492462766)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, z):
    s1 = 0.0
    s2 = 0.0
    return np.where(np.full((x[1:].shape[0], x[1:].shape[0]), 2.0) * np.full((x[1:].shape[0], x[1:].shape[0]), 0.001) <= np.einsum('ik,kj->ij', np.full((x[1:].shape[0], x[1:].shape[0]), -1.5), np.full((x[1:].shape[0], x[1:].shape[0]), 0.0)), np.einsum('ik,kj->ij', np.full((x[1:].shape[0], x[::2].shape[0]), 3.0), np.full((x[::2].shape[0], x[1:].shape[0]), 0.001)), np.full((x[1:].shape[0], x[1:].shape[0]), 3.0) * np.full((x[1:].shape[0], x[1:].shape[0]), -1.5)) @ (np.dot(np.full((x[1:].shape[0], x[1:].shape[0]), 0.5), z[1:]) + np.full((x[::2].shape[0], x[1:].shape[0]), -1.5).sum(axis=0)) @ ((x[:-1] - z[1:] - (x[:-1] + 3.0)) / 2.0)
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'z': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([1e+300, -1.2010396091039315], dtype=float64),
    'z': array([1.661126433515431, -0.6327705162852638], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '-12.260600492462766'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
