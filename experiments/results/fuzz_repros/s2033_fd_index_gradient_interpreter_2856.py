# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2033`; minimized in 6 steps (45 candidates run).
d/dw[]: nan vs finite differences 1.0000000000019253
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(w: []):
    return w + (w - w) ** 0.5
'''
CASE = Case('index', SOURCE, shapes={'w': ()}, sizes={},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'w': 1.0,
}
STAGE = 'gradient (interpreter)'
EXPECTED = '1.0000000000019253'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
