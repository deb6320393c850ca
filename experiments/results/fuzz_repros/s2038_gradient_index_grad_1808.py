# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (index program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2038`; minimized in 7 steps (41 candidates run).
output 0: at (2,): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [3], A: [N]):
    t0[i:N] = Sum[j:N](Sum[k:2, l:N](A[l + 1] / x[j + k] ** (-1)))
    t1[i:N, j:N] = t0[i]
    return Sum[i:2](t1[2, i - 1])
'''
CASE = Case('index', SOURCE, shapes={'x': (3,), 'A': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'x': array([-1.051776579005304, 1.4223373809491575, 1e+154], dtype=float64),
    'A': array([1.9118885550174545, -1.8965761055447983], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([ 0., 0., nan], [0., 0.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0., 0., 0.], [0., 0.])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
