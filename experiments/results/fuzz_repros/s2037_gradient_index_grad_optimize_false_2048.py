# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2037`; minimized in 6 steps (39 candidates run).
output 0: at (0,): np.float64(0.0) vs np.float64(0.6931471805599453)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A1: [N], B: [M, 3], w: []):
    return Sum[i:N, j:M](softplus(A1[j]) * (j > 1 and j < M - 1 - i) * A1[i])
'''
CASE = Case('index', SOURCE, shapes={'A1': ('N',), 'B': ('M', 3), 'w': ()}, sizes={'N': 1, 'M': 3},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A1': array([-0.7015709569290477], dtype=float64),
    'B': array([[0.7656375431436816, 1.7107537673338304, 1.9009067065902192],
     [-0.5081447799213445, 0.8265649256027743, -0.3259322878094826],
     [0.7408888296895608, 0.4126403412403945, -1.0791333217925165]], dtype=float64),
    'w': -1.5226786103294687,
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([0.], [[0., 0., 0.], [0., 0., 0.], [0., 0., 0.]], 0.0)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([0.6931471805599453], [[0., 0., 0.], [0., 0., 0.], [0., 0., 0.]], 0.0)'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
