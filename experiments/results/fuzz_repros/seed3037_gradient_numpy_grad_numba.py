# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad[numba] (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 3037 --backend numba`; minimized in 2 steps (20 candidates run).
output 2: at (1, 1): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, y, C):
    s1 = 0.0
    for i in range(len(y)):
        s1 += np.cos(C[:, 0]) @ (np.exp(y) * np.maximum(y, y))
    t2 = C[:, 0] / ((C - np.mean(C, axis=1, keepdims=True)) @ np.where(C[-1] <= C[-1], s1, C[0]))
    return t2[::2] @ y[::2] - np.sum(y) + np.abs(np.log(y[-1]))
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('M',), 'y': ('M',), 'C': ('M', 'N')}, sizes={'N': 4, 'M': 4},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([0.8631899082725634, 1.0627881391020442, -1.9019765616873328, -0.557325008397105], dtype=float64),
    'y': array([-1e+300, 0.5392941541436898, 0.45810564522482544, -0.0], dtype=float64),
    'C': array([[-0.3495802856573383, 0.5461694302501566, 1e+154, 1.8257950503269502],
     [1e+300, -0.8883453863649915, -1.5494256026445976, -1.352302220854847],
     [1.8620169861468572, -0.7009840697377716, 1.8581622541203517, 0.0],
     [-1.0297674739010094, 1e+154, -1e+154, 1.803778486837862]], dtype=float64),
}
STAGE = 'grad[numba]'
BACKEND = 'numba'
EXPECTED = '([0., 0., 0., 0.], [nan, nan, nan, nan], [[nan, 0., 0., 0.], [nan, 0., 0., 0.], [nan, nan, nan, nan], [nan, nan, nan, nan]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0., 0., 0., 0.], [nan, nan, nan, nan], [[nan, 0., 0., 0.], [nan, nan, nan, nan], [nan, 0., 0., 0.], [nan, 0., 0., 0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS}, backend=BACKEND)[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
