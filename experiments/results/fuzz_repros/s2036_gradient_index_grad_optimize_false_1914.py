# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2036`; minimized in 4 steps (36 candidates run).
output 0: at (): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [], A: [], B: [1, N]):
    t1[i:N] = 3 / (x * x) * B[i, N - 1 - i]
    return t1[0]
'''
CASE = Case('index', SOURCE, shapes={'x': (), 'A': (), 'B': (1, 'N')}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': 1e+154,
    'A': 1.5555813431353849,
    'B': array([[0.5566344039101011, 1.0741646099927673, -1e+300]], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '(0.0, 0.0, [[0.0000000000000000e+000, 0.0000000000000000e+000, 2.9999999999999997e-308]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '(nan, 0.0, [[0.0000000000000000e+000, 0.0000000000000000e+000, 2.9999999999999997e-308]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
