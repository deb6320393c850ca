"""The plan's operand groupings that the NumPy backend follows (eqsat_ad/plan/order.py)."""

from __future__ import annotations

from eqsat_ad.plan.order import linked_groups, same_axes_groups


def test_risky_operands_over_equal_axes_are_grouped() -> None:
    ij, jk = frozenset("ij"), frozenset("jk")
    # N-body's two weights over (i, j) form one group; a lone risky operand, a safe one
    # (None) and a 0-d one are left to the contraction
    assert same_axes_groups([ij, None, jk, ij, frozenset()]) == [[0, 3]]
    assert same_axes_groups([ij, jk, ij, jk, ij]) == [[0, 2, 4], [1, 3]]
    assert same_axes_groups([None, None]) == []


def test_factors_are_grouped_by_shared_summed_indices() -> None:
    # Σ_{j, f} A[i, j] H[j, f] W[f, g] with j the relation's index: H and W share f
    frees = [{"i", "j"}, {"j", "f"}, {"f", "g"}]
    assert linked_groups(frees, {"f"}) == [(set(), [0]), ({"f"}, [1, 2])]
    # a chain through two summed indices is one group, in the factors' order
    assert linked_groups([{"a", "b"}, {"x"}, {"b", "c"}, {"c", "d"}], {"b", "c"}) == \
        [(set(), [1]), ({"b", "c"}, [0, 2, 3])]
    assert linked_groups([], {"f"}) == []
