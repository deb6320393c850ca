# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2033`; minimized in 4 steps (23 candidates run).
IndexError: index 2 is out of bounds for axis 0 with size 2 [<eqsat_ad generated f_grad>:20]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N], R: rel[N], w: []):
    t0[i:N] = exp(x[i - 1]) ** (-1)
    t1[i:N, j:N] = (j <= j) * x[i / 2] ** (-1) * (100.0 ** 0) ** (-2) + (R[j] * (w + t0[i]) + -w)
    return t1[0, 1]
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',), 'R': ('N',), 'w': ()}, sizes={'N': 2},
            relations=frozenset(['R']))
KIND = 'finite'
INPUTS = {
    'x': array([-0.739643208961152, 0.4540089578784584], dtype=float64),
    'R': array([False, True], dtype=bool),
    'w': 1.8751608619723434,
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([-1.8279127062812701, 0. ], 0.0)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'IndexError: index 2 is out of bounds for axis 0 with size 2 [<eqsat_ad generated f_grad>:20]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
