/* Gradients of tril/triu, masked_fill, cumsum, sort and topk (finite differences), on the CPU
 * and on every OpenCL device: a triangle passes its own triangle of the gradient, masked_fill
 * none where it filled, cumsum the reverse running sum, sort and topk scatter back to where each
 * value came from. */
#include <stdio.h>

#include "support/gradcheck.h"
#include "test_common.h"

typedef struct rows_case {
    int64_t diagonal;
    int dim;
    int64_t k;
    bool flag; /* triu, descending, largest */
    const ct_tensor *mask;
} rows_case;

static ct_tensor *f_triangle(ct_tensor *const *x, void *c)
{
    const rows_case *r = c;
    return r->flag ? ct_triu(x[0], r->diagonal) : ct_tril(x[0], r->diagonal);
}

static ct_tensor *f_masked_fill(ct_tensor *const *x, void *c)
{
    return ct_masked_fill(x[0], ((const rows_case *)c)->mask, -2.5);
}

static ct_tensor *f_cumsum(ct_tensor *const *x, void *c) { return ct_cumsum(x[0], ((const rows_case *)c)->dim); }

/* cumsum of a product, so that the incoming gradient is not the gradcheck's weights alone */
static ct_tensor *f_cumsum_chained(ct_tensor *const *x, void *c)
{
    ct_tensor *p = ct_mul(x[0], x[1]);
    ct_tensor *out = ct_cumsum(p, ((const rows_case *)c)->dim);
    ct_release(p);
    return out;
}

static ct_tensor *f_sort(ct_tensor *const *x, void *c)
{
    const rows_case *r = c;
    return ct_sort(x[0], r->dim, r->flag, NULL);
}

static ct_tensor *f_topk(ct_tensor *const *x, void *c)
{
    const rows_case *r = c;
    return ct_topk(x[0], r->k, r->dim, r->flag, true, NULL);
}

static ct_tensor *random_input(ct_device device, const int64_t *shape, int ndim)
{
    ct_tensor *r = ct_randn(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *out = ct_to(r, device);
    ct_release(r);
    return out;
}

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(11);
    int64_t s234[3] = {2, 3, 4}, s34[2] = {3, 4}, s14[2] = {1, 4};
    ct_tensor *t = random_input(device, s234, 3);
    ct_tensor *transposed = ct_detach(ct_transpose(t, 1, 2)); /* [2, 4, 3], strided */
    char what[96];
    const int64_t diagonals[5] = {-2, -1, 0, 1, 3};
    for (int k = 0; k < 5; k++)
        for (int upper = 0; upper < 2; upper++) {
            rows_case r = {.diagonal = diagonals[k], .flag = upper};
            snprintf(what, sizeof what, "%s of [2,3,4], diagonal %lld", upper ? "triu" : "tril",
                     (long long)diagonals[k]);
            ct_gradcheck(what, f_triangle, &t, NULL, 1, &r);
            snprintf(what, sizeof what, "%s of a transposed view, diagonal %lld",
                     upper ? "triu" : "tril", (long long)diagonals[k]);
            ct_gradcheck(what, f_triangle, &transposed, NULL, 1, &r);
        }

    /* a [1, 4] mask broadcast over [2, 3, 4] */
    ct_tensor *m = ct_gt_scalar(random_input(device, s14, 2), 0);
    rows_case masked = {.mask = m};
    ct_gradcheck("masked_fill with a broadcast mask", f_masked_fill, &t, NULL, 1, &masked);

    ct_tensor *y = random_input(device, s234, 3);
    ct_tensor *ty[2] = {t, y};
    for (int dim = -3; dim < 3; dim++) {
        rows_case r = {.dim = dim};
        snprintf(what, sizeof what, "cumsum along %d of [2,3,4]", dim);
        ct_gradcheck(what, f_cumsum, &t, NULL, 1, &r);
        snprintf(what, sizeof what, "cumsum along %d of a transposed view", dim);
        ct_gradcheck(what, f_cumsum, &transposed, NULL, 1, &r);
        snprintf(what, sizeof what, "cumsum(x * y) along %d", dim);
        ct_gradcheck(what, f_cumsum_chained, ty, NULL, 2, &r);
    }
    ct_tensor *scalar = random_input(device, NULL, 0);
    rows_case zero = {.dim = 0};
    ct_gradcheck("cumsum of a 0-dim tensor", f_cumsum, &scalar, NULL, 1, &zero);

    /* random values are distinct, so the order does not change under the small steps */
    for (int dim = -1; dim < 3; dim++)
        for (int flag = 0; flag < 2; flag++) {
            rows_case r = {.dim = dim, .flag = flag, .k = 2};
            snprintf(what, sizeof what, "sort along %d, %s", dim, flag ? "descending" : "ascending");
            ct_gradcheck(what, f_sort, &t, NULL, 1, &r);
            snprintf(what, sizeof what, "sort of a transposed view along %d", dim);
            ct_gradcheck(what, f_sort, &transposed, NULL, 1, &r);
            snprintf(what, sizeof what, "topk 2 along %d, %s", dim, flag ? "largest" : "smallest");
            ct_gradcheck(what, f_topk, &t, NULL, 1, &r);
        }
    ct_tensor *wide = random_input(device, s34, 2);
    rows_case three = {.dim = 1, .flag = true, .k = 3};
    ct_gradcheck("topk 3 of rows of 4", f_topk, &wide, NULL, 1, &three);
    ct_scope_pop();
}

static void row_op_gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void row_op_gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

/* The nodes' names, and float32 gradients that stay float32 with the values the rules give. */
static void row_op_gradients_have_known_values(void **state)
{
    (void)state;
    ct_scope_push();
    const float x[4] = {3.0f, 1.0f, 4.0f, 1.5f};
    int64_t shape[1] = {4};
    ct_tensor *t = ct_tensor_from_data(x, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_requires_grad_(t, true);
    ct_tensor *c = ct_cumsum(t, 0);
    assert_string_equal(ct_grad_fn_name(c), "CumsumBackward");
    /* d sum(cumsum(x) * [1, 2, 3, 4]) / dx_i = sum_{j >= i} w_j: 10, 9, 7, 4 */
    const float w[4] = {1, 2, 3, 4};
    ct_tensor *weights = ct_tensor_from_data(w, CT_F32, shape, 1, CT_DEVICE_CPU);
    assert_int_equal(ct_backward(ct_sum(ct_mul(c, weights), NULL, 0, false)), CT_OK);
    float got[4];
    ct_tensor *g = ct_grad(t);
    assert_int_equal(ct_tensor_dtype(g), CT_F32);
    assert_int_equal(ct_tensor_to_array(g, got, sizeof got), CT_OK);
    assert_true(got[0] == 10 && got[1] == 9 && got[2] == 7 && got[3] == 4);
    ct_zero_grad(t);
    /* topk 2 largest: 4 (index 2) and 3 (index 0) take weights 1 and 2 */
    ct_tensor *top = ct_topk(t, 2, 0, true, true, NULL);
    int64_t two[1] = {2};
    ct_tensor *w2 = ct_tensor_from_data(w, CT_F32, two, 1, CT_DEVICE_CPU);
    assert_int_equal(ct_backward(ct_sum(ct_mul(top, w2), NULL, 0, false)), CT_OK);
    g = ct_grad(t);
    assert_int_equal(ct_tensor_to_array(g, got, sizeof got), CT_OK);
    assert_true(got[0] == 2 && got[1] == 0 && got[2] == 1 && got[3] == 0);
    ct_zero_grad(t);
    int64_t s22[2] = {2, 2};
    ct_tensor *square = ct_reshape(t, s22, 2);
    assert_string_equal(ct_grad_fn_name(ct_tril(square, 0)), "TrilBackward");
    assert_string_equal(ct_grad_fn_name(ct_triu(square, 0)), "TriuBackward");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(row_op_gradients_on_the_cpu),
        cmocka_unit_test(row_op_gradients_on_opencl),
        cmocka_unit_test(row_op_gradients_have_known_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
