# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 2 steps (56 candidates run).
at (3,): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, N], A1: []):
    t0[i:N] = sign(Sum[j:N, k:N](A[k + i, k] * A1))
    return t0
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'N'), 'A1': ()}, sizes={'N': 4},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[5e-324, -0.0, -1.8065364294384851, -0.3665461852211429],
     [1.0186531565748698, 1e+300, 0.9394540431048881, 1.5481798423505273],
     [1e+300, 1e+300, 0.6614333910631831, 1e-300],
     [5e-324, 0.6537947407156337, 1e+300, 0.9520768048149713]], dtype=float64),
    'A1': 0.46018530060663143,
}
STAGE = 'compile'
EXPECTED = '[1., 1., 1., 0.]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[1., 1., 1., 1.]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
