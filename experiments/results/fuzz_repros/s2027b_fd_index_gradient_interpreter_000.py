# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 2027`; minimized in 6 steps (23 candidates run).
d/dw[]: nan vs finite differences 0.0
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N], w: []):
    t0[i:N] = i <= 1
    t1[i:N] = 1.0 / (i > i / 2 and i >= i / 2) * w
    return t1[N]
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',), 'w': ()}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.6480885362786202], dtype=float64),
    'w': 0.8419825981772626,
}
STAGE = 'gradient (interpreter)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
