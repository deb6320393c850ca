# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 8 steps (49 candidates run).
output 0: at (0,): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N]):
    t0[i:N] = x[i] ** 2.5
    return t0[1]
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([-0.42648331131341843], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([nan])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0.])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
