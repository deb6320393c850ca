# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False)[numba] (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 1000 --seed 3018 --backend numba`; minimized in 4 steps (58 candidates run).
at (): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [1]):
    t0 = x[1 - 1] ** (-2) * Sum[i:2, j:1](x[i] * x[j])
    return t0
'''
CASE = Case('index', SOURCE, shapes={'x': (1,)}, sizes={},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([-1e+300], dtype=float64),
}
STAGE = 'compile(optimize=False)[numba]'
BACKEND = 'numba'
EXPECTED = 'nan'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS}, backend=BACKEND)[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
