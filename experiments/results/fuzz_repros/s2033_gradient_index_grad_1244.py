# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (index program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2033`; minimized in 5 steps (45 candidates run).
output 0: at (): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [], R: rel[N, 1]):
    t0[i:N, j:3] = sqrt(x)
    return t0[1, 3]
'''
CASE = Case('index', SOURCE, shapes={'x': (), 'R': ('N', 1)}, sizes={'N': 1},
            relations=frozenset(['R']))
KIND = 'nonfinite'
INPUTS = {
    'x': -1e+300,
    'R': array([[False]], dtype=bool),
}
STAGE = 'grad'
EXPECTED = '(nan)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '(0.0)'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
