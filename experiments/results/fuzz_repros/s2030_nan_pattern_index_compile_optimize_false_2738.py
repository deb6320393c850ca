# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2030` (program 2738); minimized in 9 steps (71 candidates run).
at (): np.float64(inf) vs np.float64(-inf) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [3]):
    t0[i:3] = x[i / 2] / x[i]
    t1 = (1 != 1) + t0[1]
    return t1 ** (-1)
'''
CASE = Case('index', SOURCE, shapes={'x': (3,)}, sizes={},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.660425914868553, -1.6311679303800415, -1.9340751757254409], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = 'inf'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '-inf'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
