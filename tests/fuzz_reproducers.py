"""The reproducers of the fuzzer's recorded runs (experiments/results/fuzz_repros/) and what
became of each: the data of tests/test_fuzz.py's ``test_known_reproducer``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Reproducers the large run wrote (experiments/results/fuzz.md), one per defect class not
# covered by KNOWN_DEFECTS in tests/test_fuzz.py; each file holds the program, its inputs and what
# it found.
REPROS = ROOT / "experiments" / "results" / "fuzz_repros"
KNOWN_REPRODUCERS = {
    "seed3037_gradient_numpy_grad_numba.py":
        "fuzz classifier: a row of C centred on its mean and weighed, t5[1] = Σ_j (C[1, j] - "
        "mean)·s1 with C[1, 0] = 1e300, cancels to exactly 0 in the compiled order (the mean "
        "as Σ 0.25·C, terms added in order) and to -2.97e284 in the interpreter's, so "
        "0 · C[1, 0] / t5[1]² is nan against 0 (both backends, and before 4 Dec's changes): "
        "rounding docs/semantics.md allows, but no draw of fuzz/rounding.py (moves of 1e-13) "
        "lands on the exact 0",
    "s3007_value_numpy_compile_000.py":
        "optimizer: t1 = Sum[i: 2](max(2, 0.001)); t1 - t1 was optimized to max(2, 0.001) "
        "(2.0, not 0): a cyclic e-class grew like-term coefficients to 2**64, where a + 1 "
        "rounds to a, and the like-terms rules then put e and 2e in one class; they fire "
        "only where the coefficients add exactly now",
    "fd_numpy_gradient_interpreter_014.py":
        "AD/semantics: sqrt(x) * 0 is 0 under strong zero but its interpreted gradient is nan "
        "(sqrt'(x < 0) * 0); finite differences give 0",
    "gradient_index_grad_026.py":
        "backend: max((N > 1) * x[0] * (x[1] + 0.5), 1.0) at x = [inf, -inf]: the strict code "
        "distributed x[0] over x[1] + 0.5 (-inf + inf = nan), the interpreter gives 1",
    "gradient_numpy_grad_006.py":
        "backend: gradient of A @ np.diag(B) @ A[0] on huge inputs: nan interpreted, 0 compiled",
    "gradient_numpy_grad_021.py":
        "backend: the gradient of np.min at a tie (x / x) with a 1e154 trace: t * (1 / a) "
        "was emitted as t * 1 / a, a different rounding of a cancelling sum (-7e137 vs 0)",
    "internal_index_compile_018.py":
        "backend: a constant (-1.5) ** 0.5 is computed with Python floats (a complex number, "
        "TypeError); the interpreter gives nan",
    "internal_index_grad_012.py":
        "backend: the gradient's generated code reads outside a tensor (IndexError) where the "
        "interpreter reads 0",
    "internal_numpy_compile_optimize_false_013.py":
        "backend: np.sign(A @ A) generates code that uses _t1 before defining it (NameError)",
    "nan_pattern_index_compile_004.py":
        "backend: the sign of zero: Sum[j: 1](w) at w = -0.0 is +0.0 interpreted (the sum "
        "starts at +0.0) and -0.0 compiled, so ** -1 gives inf against -inf",
    "nan_pattern_index_compile_023.py":
        "backend: sqrt((-1.5) ** 0.5) is 0.78 compiled (a complex intermediate), nan "
        "interpreted: a silent wrong value",
    "nan_pattern_numpy_compile_002.py":
        "optimizer: np.where(x < 1, x, einsum(...)) where the other branch overflows: optimized "
        "gives nan (0 * inf), the interpreter the selected value",
    "nan_pattern_numpy_compile_optimize_false_007.py":
        "optimizer (statement inlining, open in docs/semantics.md): the gradient of "
        "(B.T ** 3)[:, 0] * np.sum(B.T, axis=1) on huge inputs: the interpreter multiplies the "
        "adjoint's stored 0.0 by inf (nan), the optimized code inlines its bracket (inf)",
    "s2027_nan_pattern_index_compile_007.py":
        "optimizer (statement inlining): t0[N] * t1[1, 1] with t1 nan (a negative base to the "
        "power 0.5): the stored out-of-range 0.0 times nan is nan, the inlined bracket 0",
    "s2027_nan_pattern_numpy_compile_000.py":
        "optimizer (statement inlining): an einsum of np.where(..., 0.0, 1.0) with x[1:]",
    "s2027_gradient_index_grad_001.py":
        "optimizer (statement inlining): the gradient of (x ** 2.5)[1] at N = 1, x < 0: the "
        "adjoint's stored 0.0 times 2.5 x ** 1.5 (nan) is nan, the optimized gradient 0",
    "s2027_gradient_numpy_grad_002.py":
        "optimizer (statement inlining): the gradient of A ** 4 read at one row, A holding "
        "1e300: the stored adjoint 0.0 times an overflowed local derivative",
    "s2027b_nan_pattern_index_compile_010.py":
        "optimizer (statement inlining) at N = 0: t1[N] / 0.0 with t1 empty: the empty call "
        "evaluated the optimized program (the inlined bracket's 0 / 0.0 = 0), not the original",
    "s2027b_gradient_index_grad_optimize_false_005.py":
        "backend strict code (class 6): [i != 0] ((N >= 1) + B) times B = -inf lost the "
        "bracket's strong zero (the factor masked alone, then multiplied)",
    "s2027b_gradient_index_grad_006.py":
        "backend strict code (class 6): as 005, the diagonal read A[i, i]",
    "s2027b_numpy_numpy_translate_011.py":
        "front end: np.sign was (x > 0) - (x < 0), 0 at nan where NumPy gives nan",
    "s2033_numpy_numpy_translate_2055.py":
        "front end: NumPy's 0.0 * log(A) became the literal 0 (a strong zero): 0 where NumPy "
        "gives nan (log of a negative entry)",
    "s2034_numpy_numpy_translate_4111.py":
        "front end: NumPy's 0.0 * z at z < 0 became the strong zero +0.0 where NumPy gives "
        "-0.0: 1 / it was +inf against -inf",
    # the 10,000-program run (seeds 2028, 2029, experiments/results/fuzz.md)
    "s2028_fd_index_gradient_interpreter_000.py":
        "class 2 (ieee-gradient): a stored adjoint 0.0 times an infinite local derivative",
    "s2028_fd_numpy_gradient_interpreter_003.py":
        "class 2 (ieee-gradient): a stored adjoint 0.0 times an infinite local derivative",
    "s2029_fd_index_gradient_interpreter_002.py":
        "class 2 (ieee-gradient): a stored adjoint 0.0 times an infinite local derivative",
    "s2028_gradient_index_grad_007.py":
        "backend strict code: a sum of guarded terms lost its strong zero (sem5)",
    "s2028_gradient_index_grad_optimize_false_006.py":
        "backend strict code: as gradient_index_grad_007 (sem5)",
    "s2029_gradient_index_grad_008.py":
        "backend strict code: log(R[2, N] tanh(w)), a relation's strong zero (sem5)",
    "s2029_gradient_index_grad_optimize_false_007.py":
        "backend strict code: as gradient_index_grad_008 (sem5)",
    "s2028_internal_numpy_compile_005.py":
        "backend: np.max of a broadcast integer literal with initial=-inf raised OverflowError",
    "s2028_internal_numpy_compile_optimize_false_004.py":
        "backend: as internal_numpy_compile_005",
    "s2029_gradient_numpy_grad_003.py":
        "backend: a max tie flattened into one sum (a - t - a + t) rounded to a step of 0 or 1 "
        "(sem6)",
    "s2029_gradient_numpy_grad_optimize_false_006.py":
        "backend: np.maximum(y, y + 1) at 1e300, the step's argument kept as written (sem6)",
    "s2029_gradient_numpy_grad_optimize_false_009.py":
        "backend: an unrolled window of -0.0 terms is +0.0 (sem6)",
    "s2029_value_index_compile_005.py":
        "class 4 (ill-conditioned): sums of +-1e300 entries",
    "s2029_value_index_compile_optimize_false_004.py":
        "class 4 (ill-conditioned): as value_index_compile_005",
    "s2028_gradient_numpy_grad_002.py":
        "class 4 (ill-conditioned, sem7): np.sum(B[:1] - B[:-1]) * B.sum() at +-1e300, the sum "
        "distributed over -: rounding of two reads of one entry (fuzz/rounding.py)",
    "s2028_gradient_numpy_grad_optimize_false_001.py":
        "class 4 (ill-conditioned, sem7): as gradient_numpy_grad_002",
    "s2028_value_numpy_compile_009.py":
        "class 4 (ill-conditioned, sem7): np.sum(B - B) at +-1e300 is -2.0 compiled (the sum "
        "distributed over -), 0.0 interpreted: within the rounding of each read",
    "s2028_value_numpy_compile_optimize_false_008.py":
        "class 4 (ill-conditioned, sem7): as value_numpy_compile_009",
    "s2029_gradient_numpy_grad_001.py":
        "backend fast code (sem7): x[0] ** 2 * np.minimum(x[1], x[i]) at +-1e300: x[0] ** 2 "
        "overflowed and was taken out of a sum as finite (inf, the interpreter nan); an "
        "overflow now reruns the strict code",
    "s2029_gradient_numpy_grad_optimize_false_000.py":
        "backend fast code (sem7): as s2029_gradient_numpy_grad_001",
    # the 10,000-program run at 4bff926 (seeds 2030, 2031), triaged on branch sem8
    "s2030_nan_pattern_numpy_compile_optimize_false_537.py":
        "backend strict code: -(a + b) distributed into -a - b (+0.0 where a + b is +0.0, "
        "-0.0 negated: the select's -0.0 + strong zero), so x ** -1 gave +inf against -inf",
    "s2030_nan_pattern_index_compile_optimize_false_400.py":
        "backend strict code: a quotient in a sum by the subnormal Σ A1 taken apart into "
        "t0 * (Σ A1) ** -1: 0 * inf = nan against 0 / 5e-324 = 0",
    "s2031_gradient_index_grad_optimize_false_1396.py":
        "backend fast code: a small array read outside it (t1[3, N - 1]) recomputed behind a "
        "false bracket, which removed the term and its log(0) = -inf: gradient 0 against nan",
    "s2030_nan_pattern_index_compile_optimize_false_2738.py":
        "backend: (1 != 1) + t0[1] with t0[1] = -0.0: the false bracket's term dropped, -0.0 "
        "kept, where the strong zero's +0.0 makes +0.0 (t1 ** -1: -inf against +inf)",
    "s2030_nan_pattern_index_compile_optimize_false_2802.py":
        "backend (not fixed, class 5: a sum of strong zeros): Sum[i: M](i > 2) / (M < 2) at "
        "M = 3: the sum's range narrows to nothing (a strong zero), divided by a false bracket: "
        "0 interpreted, 0 / 0 = nan compiled",
    "s2030_nan_pattern_numpy_compile_optimize_false_349.py":
        "class 4 (not fixed): a sum of +-1e154 entries that cancel, times a product near "
        "1e308: finite interpreted, -inf compiled (the order of an overflow)",
    "s2031_value_index_compile_optimize_false_3854.py":
        "backend: a data comparison free of the summed index (ne(0, [i > i])) dropped from "
        "the sum, which counted its terms: N against 0 (finite inputs)",
    "s2031_gradient_numpy_grad_1377.py":
        "class 4 (ill-conditioned, sem9): np.max(A[:-1] + 100.0) at A[0] = [1e-300, 5e-324]: "
        "the sums tie (100 absorbs both), the optimizer cancels the 100s in step(a + 100 - "
        "(b + 100)), so the tie is broken: gradient [1, 0] against [0.5, 0.5]; within the "
        "rounding of each sum (fuzz/rounding.py)",
    "s2031_gradient_numpy_grad_optimize_false_1513.py":
        "class 4 (not fixed): s1_bar * (t * step(1 - t * t)) at t = -1e300 flattened into "
        "s1_bar * t * step(...): (2e300 * 1e300) * 0 = nan against 0 (an overflow's order)",
    "s2033_internal_index_grad_1796.py":
        "a point read the scalar write's guard proves in range, evaluated by np.where where "
        "the guard is false (a small-axis loop's last trip)",
    "s2033_internal_index_grad_optimize_false_2880.py":
        "a point read the scalar write's guard proves in range, evaluated by np.where where "
        "the guard is false (a small-axis loop's last trip)",
    "s2034_internal_index_grad_1816.py":
        "a point read the scalar write's guard proves in range, evaluated by np.where where "
        "the guard is false (a small-axis loop's last trip)",
    "s2034_nan_pattern_index_compile_3908.py":
        "x ** 2.5 at x < 0: a nan without an overflow or division flag, multiplied by the "
        "fast code's bracket as an ordinary 0",
    "s2033_gradient_index_grad_1244.py":
        "a stored bracketed array recomputed where it is read: its 0 became a strong zero",
    "s2033_fd_index_gradient_interpreter_2856.py":
        "inf - inf of the chain rule after an exact cancellation, beside a finite term",
    "s2034_gradient_index_grad_1482.py":
        "1 / x ** 3 at x = 1e154: where the cube overflows depends on the product's order",
    "s2035_nan_pattern_index_compile_optimize_false_120.py":
        "-Σ of relation reads none of which holds: the strong zero's +0.0, negated",
    "s2035_nan_pattern_index_compile_120.py":
        "-Σ of relation reads none of which holds: the strong zero's +0.0, negated",
    "s2035_nan_pattern_numpy_compile_optimize_false_289.py":
        "a mean whose Σ overflows as written, not with the 1/n in its terms",
    "s2035_nan_pattern_numpy_compile_289.py":
        "a mean whose Σ overflows as written, not with the 1/n in its terms",
    "s2035_gradient_index_grad_optimize_false_4922.py":
        "a window term narrowed by an out-of-range read despite a pole in another factor",
    "s2035_gradient_index_grad_4922.py":
        "a window term narrowed by an out-of-range read despite a pole in another factor",
    "s2036_gradient_index_grad_optimize_false_1914.py":
        "a Σ's summed reads multiplied first overflow before a factor that is 0",
    "s2036_gradient_index_grad_1914.py":
        "a Σ's summed reads multiplied first overflow before a factor that is 0",
    "s2037_gradient_index_grad_optimize_false_2048.py":
        "a running-sum scan over a narrowed range read its bounds from 0",
    "s2037_gradient_index_grad_2048.py":
        "a running-sum scan over a narrowed range read its bounds from 0",
    "s2038_nan_pattern_index_compile_optimize_false_442.py":
        "-1e300 absorbs 1e154 once a Σ of a difference is split into two Σs",
    "s2038_nan_pattern_index_compile_442.py":
        "-1e300 absorbs 1e154 once a Σ of a difference is split into two Σs",
    # an overflow of a finite intermediate that depends on the order of evaluation: rounding
    # draws since (experiments/results/fuzz.md, the fifth run)
    "s2037_gradient_numpy_grad_optimize_false_2617.py":
        "like terms merged first: 1e308 + 1e308 overflows and meets -inf (nan, not -inf)",
    "s2037_gradient_numpy_grad_2617.py":
        "like terms merged first: 1e308 + 1e308 overflows and meets -inf (nan, not -inf)",
    "s2038_gradient_index_grad_optimize_false_1808.py":
        "a quotient taken as a reciprocal factor outside the sum: no overflow (0, not nan)",
    "s2038_gradient_index_grad_1808.py":
        "a quotient taken as a reciprocal factor outside the sum: no overflow (0, not nan)",
    "s2040_gradient_numpy_grad_optimize_false_3569.py":
        "a masked quotient (np.where) taken for finite: inf · Σ step(..) out of the sum (inf, "
        "not nan)",
    "s2040_gradient_numpy_grad_3569.py":
        "a masked quotient (np.where) taken for finite: inf · Σ step(..) out of the sum (inf, "
        "not nan)",
    "s2042_value_numpy_compile_optimize_false_4141.py":
        "np.sum(C) with 1e300, 1e154 and -1e300: pairwise keeps the ordinary terms, the "
        "unrolled chain of adds loses them (rounding)",
    "s2042_value_numpy_compile_4141.py":
        "np.sum(C) with 1e300, 1e154 and -1e300: pairwise keeps the ordinary terms, the "
        "unrolled chain of adds loses them (rounding)",
    "s2042_gradient_numpy_grad_optimize_false_4141.py":
        "np.sum(C) with 1e300, 1e154 and -1e300: pairwise keeps the ordinary terms, the "
        "unrolled chain of adds loses them (rounding)",
    "s2042_gradient_numpy_grad_4141.py":
        "np.sum(C) with 1e300, 1e154 and -1e300: pairwise keeps the ordinary terms, the "
        "unrolled chain of adds loses them (rounding)",
    "s3018_nan_pattern_index_compile_numba_832.py":
        "x[0] ** -2 * Sum(x[i] x[j]) at x = -1e300: nan as written (0 * inf), 0 in the fast "
        "code, which multiplies the factor into each term first (0 * x * x; rounding)",
    "s3018_nan_pattern_index_compile_optimize_false_numba_832.py":
        "x[0] ** -2 * Sum(x[i] x[j]) at x = -1e300: nan as written (0 * inf), 0 in the fast "
        "code, which multiplies the factor into each term first (0 * x * x; rounding)",
}


# fixed since the run (semantics, plan and sem branches): plain regression tests now
FIXED_REPRODUCERS = frozenset({
    "s3007_value_numpy_compile_000.py",
    "fd_numpy_gradient_interpreter_014.py",
    "gradient_index_grad_026.py",
    "gradient_numpy_grad_006.py",
    "gradient_numpy_grad_021.py",
    "internal_index_compile_018.py",
    "internal_index_grad_012.py",
    "internal_numpy_compile_optimize_false_013.py",
    "nan_pattern_index_compile_004.py",
    "nan_pattern_index_compile_023.py",
    "nan_pattern_numpy_compile_002.py",
    # class 1 (statement inlining): optimized code is a fast path, trusted only where the
    # unoptimized program is proven finite (backend/guard.py), else that program reruns
    "nan_pattern_numpy_compile_optimize_false_007.py",
    "s2027_nan_pattern_index_compile_007.py",
    "s2027_nan_pattern_numpy_compile_000.py",
    "s2027_gradient_index_grad_001.py",
    "s2027_gradient_numpy_grad_002.py",
    "s2027b_nan_pattern_index_compile_010.py",
    # class 6 (strict code): a factor's brackets guard the whole product (plan/lower/reduce.py)
    "s2027b_gradient_index_grad_optimize_false_005.py",
    "s2027b_gradient_index_grad_006.py",
    "s2027b_numpy_numpy_translate_011.py",  # np.sign is the IEEE built-in sign
    # a NumPy 0 times (or over) a computed value is an ordinary 0.0, stored (numpy_ops.py)
    "s2033_numpy_numpy_translate_2055.py",
    "s2034_numpy_numpy_translate_4111.py",
    # the 10,000-program run: fixed since (or allowed outcomes: ieee-gradient, ill-conditioned)
    "s2028_fd_index_gradient_interpreter_000.py",
    "s2028_fd_numpy_gradient_interpreter_003.py",
    "s2029_fd_index_gradient_interpreter_002.py",
    "s2028_gradient_index_grad_007.py",
    "s2028_gradient_index_grad_optimize_false_006.py",
    "s2029_gradient_index_grad_008.py",
    "s2029_gradient_index_grad_optimize_false_007.py",
    "s2028_internal_numpy_compile_005.py",
    "s2028_internal_numpy_compile_optimize_false_004.py",
    "s2029_gradient_numpy_grad_003.py",
    "s2029_gradient_numpy_grad_optimize_false_006.py",
    "s2029_gradient_numpy_grad_optimize_false_009.py",
    "s2029_value_index_compile_005.py",
    "s2029_value_index_compile_optimize_false_004.py",
    # branch sem7: rounding of two reads of one entry (ill-conditioned); an overflow in the
    # fast code reruns the strict code
    "s2028_gradient_numpy_grad_002.py",
    "s2028_gradient_numpy_grad_optimize_false_001.py",
    "s2028_value_numpy_compile_009.py",
    "s2028_value_numpy_compile_optimize_false_008.py",
    "s2029_gradient_numpy_grad_001.py",
    "s2029_gradient_numpy_grad_optimize_false_000.py",
    # the run at 4bff926 (branch sem8, tests/test_fuzz_2030.py)
    "s2030_nan_pattern_numpy_compile_optimize_false_537.py",
    "s2030_nan_pattern_index_compile_optimize_false_400.py",
    "s2031_gradient_index_grad_optimize_false_1396.py",
    "s2030_nan_pattern_index_compile_optimize_false_2738.py",
    # pass after the merge of sem7 and sem8: a Σ quotient masked by its count of live terms
    # (2802); rounding of each read and the strict code keeping sums as written (349, 1513)
    "s2030_nan_pattern_index_compile_optimize_false_2802.py",
    "s2030_nan_pattern_numpy_compile_optimize_false_349.py",
    "s2031_gradient_numpy_grad_optimize_false_1513.py",
    # a comparison free of the summed index dropped from the sum (tests/test_fuzz_2030.py)
    "s2031_value_index_compile_optimize_false_3854.py",
    # a tie made by absorption, broken by the optimizer's exact algebra: rounding of each
    # sum (branch sem9, tests/test_fuzz_orders.py)
    "s2031_gradient_numpy_grad_1377.py",
    # the run at d6ad598: a scalar write's guard is a conditional expression (lazy), not
    # np.where (plan/lower/statements.py; tests/test_fuzz_2033.py)
    "s2033_internal_index_grad_1796.py",
    "s2033_internal_index_grad_optimize_false_2880.py",
    "s2034_internal_index_grad_1816.py",
    # the fast code reruns the strict code on an invalid operation; arrays with brackets are
    # not recomputed where read; a moderate saturation diagnosis of the IEEE gradient; the
    # product orders of the rounding model (tests/test_fuzz_2033_gradients.py)
    "s2034_nan_pattern_index_compile_3908.py",
    "s2033_gradient_index_grad_1244.py",
    "s2033_fd_index_gradient_interpreter_2856.py",
    "s2034_gradient_index_grad_1482.py",
    # the run at ec56296: a negated Σ of guarded terms keeps the strong zero's +0.0
    # (plan/lower/reads.py, reduce.py); the rounding model's constants-first scales a Σ's terms
    # and its summed-first order (ir/labeled.py); a window term with a pole is not narrowed by
    # its reads' ranges (plan/windows.py; all in tests/test_fuzz_2035.py)
    "s2035_nan_pattern_index_compile_optimize_false_120.py",
    "s2035_nan_pattern_index_compile_120.py",
    "s2035_nan_pattern_numpy_compile_optimize_false_289.py",
    "s2035_nan_pattern_numpy_compile_289.py",
    "s2035_gradient_index_grad_optimize_false_4922.py",
    "s2035_gradient_index_grad_4922.py",
    "s2036_gradient_index_grad_optimize_false_1914.py",
    "s2036_gradient_index_grad_1914.py",
    # the run at f6d926c: a scan over a narrowed range (plan/lower/reduce.py); a Σ split into its
    # terms' Σs (the rounding model's every_sum_split; tests/test_fuzz_2037.py)
    "s2037_gradient_index_grad_optimize_false_2048.py",
    "s2037_gradient_index_grad_2048.py",
    "s2038_nan_pattern_index_compile_optimize_false_442.py",
    "s2038_nan_pattern_index_compile_442.py",
    # the rounding model's finite-first sums and quotients as reciprocal factors
    # (ir/draws.py; tests/test_fuzz_2037.py)
    "s2037_gradient_numpy_grad_optimize_false_2617.py",
    "s2037_gradient_numpy_grad_2617.py",
    "s2038_gradient_index_grad_optimize_false_1808.py",
    "s2038_gradient_index_grad_1808.py",
    # the run at 8908cbe: a masked value is as risky as what it masks (plan/lower/emit.py;
    # tests/test_fuzz_2039.py)
    "s2040_gradient_numpy_grad_optimize_false_3569.py",
    "s2040_gradient_numpy_grad_3569.py",
    # the run at b88077f: the rounding model's sums added in index order (ir/draws.py;
    # tests/test_fuzz_2039.py)
    "s2042_value_numpy_compile_optimize_false_4141.py",
    "s2042_value_numpy_compile_4141.py",
    "s2042_gradient_numpy_grad_optimize_false_4141.py",
    "s2042_gradient_numpy_grad_4141.py",
    # Numba seed 3018: the rounding model's distributed order, the fast code's w · Σ_J Π
    # factors (ir/draws.py; tests/test_fuzz_orders.py)
    "s3018_nan_pattern_index_compile_numba_832.py",
    "s3018_nan_pattern_index_compile_optimize_false_numba_832.py",
})


# Reproducers whose interpreted gradient is nan where finite differences are finite: a stored
# adjoint 0.0 times an infinite or nan local derivative (class 2 of experiments/results/fuzz.md,
# specified by docs/semantics.md); every compiled stage agrees with the interpreter.
IEEE_GRADIENTS = frozenset({"s2027_gradient_index_grad_001.py",
                            "s2035_gradient_index_grad_optimize_false_4922.py",
                            "s2035_gradient_index_grad_4922.py"})
