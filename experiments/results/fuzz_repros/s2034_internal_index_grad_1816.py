# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at grad (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2034`; minimized in 3 steps (43 candidates run).
IndexError: index 2 is out of bounds for axis 0 with size 2 [<eqsat_ad generated f_grad>:12]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N]):
    t0[i:N] = x[i - 1]
    return Sum[i:N, j:N](x[i + j] ** (-2) - t0[j])
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0, 1.0], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([-4., -4.])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'IndexError: index 2 is out of bounds for axis 0 with size 2 [<eqsat_ad generated f_grad>:12]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
