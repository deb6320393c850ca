# Two traces of A: the naive adjoint adds two dense bracket terms; the optimizer merges them.
def f(A: [N, N]):
    t1 = Sum[i: N](A[i, i])
    t2 = Sum[i: N](A[i, i])
    return t1 + t2
