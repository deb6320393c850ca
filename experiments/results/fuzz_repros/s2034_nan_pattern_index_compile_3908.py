# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2034`; minimized in 5 steps (75 candidates run).
at (0,): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N], A: [], B: []):
    t0[i:N] = x[i] ** 2.5
    t1[i:N] = log1p(Sum[j:N, k:3](A) * (i == 1) * (B - t0[i]))
    return t1
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',), 'A': (), 'B': ()}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([-0.6635932088416437], dtype=float64),
    'A': 1.501653457848701,
    'B': -1.3174805625627466,
}
STAGE = 'compile'
EXPECTED = '[0.]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[nan]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
