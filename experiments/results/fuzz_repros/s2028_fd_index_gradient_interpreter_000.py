# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2028`; minimized in 8 steps (34 candidates run).
d/dw[]: nan vs finite differences 0.0
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, M], w: []):
    t1[i:N, j:M] = w ** 0.5
    return Sum[i:N](t1[N, i])
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'M'), 'w': ()}, sizes={'N': 1, 'M': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[0.822796499096774]], dtype=float64),
    'w': -1.699857415383729,
}
STAGE = 'gradient (interpreter)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
