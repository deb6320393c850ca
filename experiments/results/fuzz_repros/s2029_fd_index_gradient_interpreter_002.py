# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2029`; minimized in 3 steps (17 candidates run).
d/dA[0, 0]: nan vs finite differences 0.0
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, 1], R: rel[N, M]):
    t0[i:N] = A[0, i]
    t1[i:3] = log(t0[i / 2]) * min(0.001, t0[i / 2])
    return -min(t1[3 - 1], -2) * Sum[i:M](t0[N - 1 - i])
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 1), 'R': ('N', 'M')}, sizes={'N': 1, 'M': 0},
            relations=frozenset(['R']))
KIND = 'finite'
INPUTS = {
    'A': array([[-1.4383641848965303]], dtype=float64),
    'R': zeros((1, 0), dtype=bool),
}
STAGE = 'gradient (interpreter)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
