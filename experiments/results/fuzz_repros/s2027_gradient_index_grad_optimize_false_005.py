# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 12 steps (47 candidates run).
output 0: at (1,): np.float64(-0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(B: [2], R: rel[N]):
    t0 = N > 2
    return Sum[i:N](gt0(t0)) / (B[2 - 1] / 0.0)
'''
CASE = Case('index', SOURCE, shapes={'B': (2,), 'R': ('N',)}, sizes={'N': 1},
            relations=frozenset(['R']))
KIND = 'finite'
INPUTS = {
    'B': array([1.0, 1.0], dtype=float64),
    'R': array([False], dtype=bool),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([-0., -0.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([ 0., nan])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
