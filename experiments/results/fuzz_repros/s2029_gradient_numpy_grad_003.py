# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2029`; minimized in 3 steps (106 candidates run).
output 1: at (0,): np.float64(1.0) vs np.float64(0.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, y):
    return np.max(np.full((x[::2].shape[0], x.shape[0]), 1.0) @ y, axis=0)
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'y': ('N',)}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([-1.246167290733807, -1.3737478824996265, -0.5789867349860904], dtype=float64),
    'y': array([-1.0376563989889909, 1.1103986806648323, 1.873695784677336], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([0., 0., 0.], [1., 1., 1.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0., 0., 0.], [0., 0., 0.])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
