/* ct_where(cond, a, b) picks a where cond is true and b elsewhere, broadcasting all three, in
 * the promoted dtype of a and b; over dtypes, strided views, 0-d and empty tensors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ops/elementwise_check.h"

static const double cond_values[6] = {1, 0, 0, 1, 1, 0};
static const double a_values[6] = {1, 2, 3, 4, 5, 6};
static const double b_values[6] = {-1, -2, -3, -4, -5, -6};

/* ct_where on tensors whose logical values are cv, av, bv; checks dtype, shape and values. */
static void check_where(const ct_tensor *cond, const double *cv, const ct_tensor *a,
                        const double *av, const ct_tensor *b, const double *bv)
{
    const ct_tensor *inputs[3] = {cond, a, b};
    const double *values[3] = {cv, av, bv};
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    for (int k = 0; k < 3; k++)
        if (ct_tensor_ndim(inputs[k]) > ndim) ndim = ct_tensor_ndim(inputs[k]);
    for (int d = 0; d < ndim; d++) {
        shape[d] = 1;
        for (int k = 0; k < 3; k++) {
            int kd = d - ndim + ct_tensor_ndim(inputs[k]);
            if (kd >= 0 && ct_tensor_shape(inputs[k])[kd] != 1) shape[d] = ct_tensor_shape(inputs[k])[kd];
        }
    }
    ct_dtype dtype = ct_promote_types(ct_tensor_dtype(a), ct_tensor_dtype(b));
    ct_tensor *out = ct_where(cond, a, b);
    if (!out) fail_msg("ct_where failed: %s", ct_last_error_message());
    assert_geometry(out, dtype, shape, ndim);
    int64_t n = ct_numel(out);
    double *got = values_of(out), *want = calloc((size_t)(n > 0 ? n : 1), sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        int64_t index[3];
        for (int k = 0; k < 3; k++)
            index[k] = broadcast_index(i, shape, ndim, ct_tensor_shape(inputs[k]), ct_tensor_ndim(inputs[k]));
        want[i] = values[0][index[0]] ? check_round(dtype, check_round(ct_tensor_dtype(a), values[1][index[1]]))
                                      : check_round(dtype, check_round(ct_tensor_dtype(b), values[2][index[2]]));
    }
    assert_values("ct_where", got, want, n, dtype);
    free(got);
    free(want);
    ct_release(out);
}

static void where_picks_elementwise_for_every_dtype_pair(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    for (int i = 0; i < CHECK_DTYPE_COUNT; i++)
        for (int j = 0; j < CHECK_DTYPE_COUNT; j++) {
            ct_tensor *cond = tensor_of(CT_BOOL, s23, 2, cond_values);
            ct_tensor *a = tensor_of(check_all_dtypes[i], s23, 2, a_values);
            ct_tensor *b = tensor_of(check_all_dtypes[j], s3, 1, b_values);
            check_where(cond, cond_values, a, a_values, b, b_values);
            check_where(cond, cond_values, b, b_values, a, a_values);
            ct_release(cond);
            ct_release(a);
            ct_release(b);
        }
}

static void where_broadcasts_all_three_operands(void **state)
{
    (void)state;
    int64_t s21[2] = {2, 1}, s13[2] = {1, 3}, s3[1] = {3}, s23[2] = {2, 3}, s4x1[3] = {4, 1, 1};
    ct_tensor *c21 = tensor_of(CT_BOOL, s21, 2, cond_values + 3), *c3 = tensor_of(CT_BOOL, s3, 1, cond_values);
    ct_tensor *a13 = tensor_of(CT_F32, s13, 2, a_values), *a21 = tensor_of(CT_I64, s21, 2, a_values);
    ct_tensor *b0 = tensor_of(CT_F32, NULL, 0, b_values), *b23 = tensor_of(CT_I32, s23, 2, b_values);
    ct_tensor *c0 = tensor_of(CT_BOOL, NULL, 0, cond_values), *c4 = tensor_of(CT_BOOL, s4x1, 3, cond_values);
    check_where(c21, cond_values + 3, a13, a_values, b0, b_values);     /* [2, 1] [1, 3] [] */
    check_where(c3, cond_values, a21, a_values, b23, b_values);         /* [3] [2, 1] [2, 3] */
    check_where(c0, cond_values, b0, b_values, a13, a_values);          /* all 0-d but one */
    check_where(c0, cond_values, b0, b_values, b0, b_values);           /* all 0-d */
    check_where(c4, cond_values, a13, a_values, b23, b_values);         /* [4, 1, 1] lifts the rank */
    ct_release(c21);
    ct_release(c3);
    ct_release(a13);
    ct_release(a21);
    ct_release(b0);
    ct_release(b23);
    ct_release(c0);
    ct_release(c4);
}

static void where_reads_transposed_and_sliced_views(void **state)
{
    (void)state;
    for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
        ct_dtype dtype = check_all_dtypes[i];
        ct_tensor *cond = transposed_of(CT_BOOL, 2, 3, cond_values);
        ct_tensor *a = sliced_of(dtype, 2, 3, a_values), *b = transposed_of(dtype, 2, 3, b_values);
        check_where(cond, cond_values, a, a_values, b, b_values);
        ct_release(cond);
        ct_release(a);
        ct_release(b);
    }
}

static void where_on_empty_tensors_gives_an_empty_result(void **state)
{
    (void)state;
    int64_t s0[1] = {0}, s1[1] = {1};
    ct_tensor *cond = tensor_of(CT_BOOL, s0, 1, cond_values);
    ct_tensor *a = tensor_of(CT_F64, s0, 1, a_values), *b = tensor_of(CT_F32, s1, 1, b_values);
    check_where(cond, cond_values, a, a_values, b, b_values);
    ct_release(cond);
    ct_release(a);
    ct_release(b);
}

static void where_matches_on_the_parallel_path(void **state)
{
    (void)state;
    const int64_t n = 120000;
    double *cv = malloc((size_t)n * sizeof *cv), *av = malloc((size_t)n * sizeof *av);
    for (int64_t k = 0; k < n; k++) {
        cv[k] = (k % 3) == 0;
        av[k] = (double)k;
    }
    int64_t shape[1] = {n};
    ct_tensor *cond = tensor_of(CT_BOOL, shape, 1, cv), *a = tensor_of(CT_F32, shape, 1, av);
    ct_tensor *b = tensor_of(CT_F32, NULL, 0, b_values);
    check_where(cond, cv, a, av, a, av);
    check_where(cond, cv, a, av, b, b_values);
    ct_release(cond);
    ct_release(a);
    ct_release(b);
    free(cv);
    free(av);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(where_picks_elementwise_for_every_dtype_pair),
        cmocka_unit_test(where_broadcasts_all_three_operands),
        cmocka_unit_test(where_reads_transposed_and_sliced_views),
        cmocka_unit_test(where_on_empty_tensors_gives_an_empty_result),
        cmocka_unit_test(where_matches_on_the_parallel_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
