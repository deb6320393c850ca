# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 5 steps (50 candidates run).
output 0: at (0,): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N]):
    return max((N > 1) * x[0] * (x[1] + 0.5), 1.0)
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([inf, -inf], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([0., 0.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([nan, nan])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
