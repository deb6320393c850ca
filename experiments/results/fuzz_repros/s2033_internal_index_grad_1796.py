# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at grad (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2033`; minimized in 3 steps (24 candidates run).
IndexError: index 2 is out of bounds for axis 0 with size 2 [<eqsat_ad generated f_grad>:24]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [M], w: []):
    t0[i:M] = w
    t1[i:M] = x[i - 1] * w / logaddexp(t0[i / 2] ** 3, t0[M - 1 - i] ** 0.5) * w
    return Sum[i:M](Sum[j:M, k:M](x[2 * i]) * t1[M - 1 - i])
'''
CASE = Case('index', SOURCE, shapes={'x': ('M',), 'w': ()}, sizes={'M': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([-1.5654977870355873, -1.6369755915959787], dtype=float64),
    'w': 1.3709542497734544,
}
STAGE = 'grad'
EXPECTED = '([-16.33545844543141, 0. ], 15.761159548102194)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'IndexError: index 2 is out of bounds for axis 0 with size 2 [<eqsat_ad generated f_grad>:24]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
