# The sum of the matrix chain A B C (A: N x R, B: R x N, C: N x R): its gradients are outer
# products of row and column sums, O(N R); the naive adjoint forms N x N products.
def matrix_chain(A: [N, R], B: [R, N], C: [N, R]):
    return Sum[i: N, k: R, j: N, l: R](A[i, k] * B[k, j] * C[j, l])
