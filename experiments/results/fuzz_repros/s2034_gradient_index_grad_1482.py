# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2034`; minimized in 4 steps (62 candidates run).
output 0: at (): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [], B: [M]):
    t0[i:M] = 1.0 / x ** 3
    return t0[M - 1]
'''
CASE = Case('index', SOURCE, shapes={'x': (), 'B': ('M',)}, sizes={'M': 1},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': 1e+154,
    'B': array([-0.0], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '(nan, [0.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '(0.0, [0.])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
