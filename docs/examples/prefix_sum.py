# A weighted sum of prefix sums: y[i] = x[0] + ... + x[i]. The gradient with respect to x is a
# suffix sum of w, x_bar[j] = w[j] + ... + w[N-1]: O(N) as a scan, O(N^2) as written.
def prefix_sum(x: [N], w: [N]):
    y[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](w[i] * y[i])
