/* Gradients of softmax and log_softmax along any dim (first, middle, last, negative), of
 * strided views, 0-dim and single-element rows, on the CPU and on every OpenCL device. */
#include <math.h>
#include <stdio.h>

#include "support/gradcheck.h"
#include "test_common.h"

static ct_tensor *f_softmax(ct_tensor *const *x, void *c) { return ct_softmax(x[0], *(const int *)c); }
static ct_tensor *f_log_softmax(ct_tensor *const *x, void *c) { return ct_log_softmax(x[0], *(const int *)c); }

/* A composition, so that the incoming gradient is not the gradcheck's random weights alone:
 * log_softmax(softmax(x) * y) along the dim. */
static ct_tensor *f_chained(ct_tensor *const *x, void *c)
{
    int dim = *(const int *)c;
    ct_tensor *p = ct_softmax(x[0], dim);
    ct_tensor *scaled = ct_mul(p, x[1]);
    ct_tensor *out = ct_log_softmax(scaled, dim);
    ct_release(scaled);
    ct_release(p);
    return out;
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
    ct_manual_seed(5);
    int64_t s234[3] = {2, 3, 4}, s34[2] = {3, 4};
    ct_tensor *t = random_input(device, s234, 3);
    char what[96];
    for (int dim = -3; dim < 3; dim++) {
        snprintf(what, sizeof what, "softmax along %d of [2,3,4]", dim);
        ct_gradcheck(what, f_softmax, &t, NULL, 1, &dim);
        snprintf(what, sizeof what, "log_softmax along %d of [2,3,4]", dim);
        ct_gradcheck(what, f_log_softmax, &t, NULL, 1, &dim);
    }

    /* Strided inputs: a transposed view (rows strided) and a sliced one, detached so that they
     * are leaves (views of a tensor that requires grad are part of its graph). */
    ct_tensor *transposed = ct_detach(ct_transpose(t, 0, 2)); /* [4, 3, 2] */
    ct_tensor *sliced = ct_detach(ct_slice(t, 2, 1, 4, 2));   /* [2, 3, 2] */
    for (int dim = 0; dim < 3; dim++) {
        snprintf(what, sizeof what, "softmax along %d of a transposed view", dim);
        ct_gradcheck(what, f_softmax, &transposed, NULL, 1, &dim);
        snprintf(what, sizeof what, "log_softmax along %d of a sliced view", dim);
        ct_gradcheck(what, f_log_softmax, &sliced, NULL, 1, &dim);
    }

    ct_tensor *m = random_input(device, s34, 2), *y = random_input(device, s34, 2);
    ct_tensor *my[2] = {m, y};
    int last = -1, first = 0;
    ct_gradcheck("log_softmax(softmax(x) * y) along -1", f_chained, my, NULL, 2, &last);
    ct_gradcheck("log_softmax(softmax(x) * y) along 0", f_chained, my, NULL, 2, &first);

    /* Rows of one element (softmax is 1, log_softmax 0: zero gradient) and a 0-dim input. */
    int64_t s31[2] = {3, 1};
    ct_tensor *column = random_input(device, s31, 2);
    ct_gradcheck("softmax along a dim of size 1", f_softmax, &column, NULL, 1, &last);
    ct_gradcheck("log_softmax along a dim of size 1", f_log_softmax, &column, NULL, 1, &last);
    ct_tensor *scalar = random_input(device, NULL, 0);
    ct_gradcheck("softmax of a 0-dim tensor", f_softmax, &scalar, NULL, 1, &first);
    ct_gradcheck("log_softmax of a 0-dim tensor", f_log_softmax, &scalar, NULL, 1, &last);
    ct_scope_pop();
}

static void softmax_gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void softmax_gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

/* Known values: for p = softmax(x), d sum(p * w) / dx_i = p_i (w_i - sum_j p_j w_j); the nodes'
 * names; float32 stays float32. */
static void softmax_gradient_matches_the_formula_in_float32(void **state)
{
    (void)state;
    ct_scope_push();
    const float x[3] = {0.5f, -1.0f, 2.0f}, w[3] = {1.0f, 2.0f, -1.0f};
    int64_t shape[1] = {3};
    ct_tensor *t = ct_tensor_from_data(x, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *weights = ct_tensor_from_data(w, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_requires_grad_(t, true);
    ct_tensor *p = ct_softmax(t, 0);
    assert_string_equal(ct_grad_fn_name(p), "SoftmaxBackward");
    assert_string_equal(ct_grad_fn_name(ct_log_softmax(t, -1)), "LogSoftmaxBackward");
    assert_int_equal(ct_backward(ct_sum(ct_mul(p, weights), NULL, 0, false)), CT_OK);
    ct_tensor *g = ct_grad(t);
    assert_int_equal(ct_tensor_dtype(g), CT_F32);
    float got[3];
    assert_int_equal(ct_tensor_to_array(g, got, sizeof got), CT_OK);
    double e[3], total = 0, pw = 0;
    for (int i = 0; i < 3; i++) total += e[i] = exp(x[i]);
    for (int i = 0; i < 3; i++) pw += e[i] / total * w[i];
    for (int i = 0; i < 3; i++) assert_true(fabs(got[i] - e[i] / total * (w[i] - pw)) < 1e-6);
    ct_release(g);
    ct_scope_pop();
}

static void empty_softmax_backpropagates(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t shape[2] = {0, 4};
    ct_tensor *t = ct_zeros(shape, 2, CT_F64, CT_DEVICE_CPU);
    ct_requires_grad_(t, true);
    ct_tensor *y = ct_add(ct_sum(ct_softmax(t, 1), NULL, 0, false), ct_sum(ct_log_softmax(t, 0), NULL, 0, false));
    assert_int_equal(ct_backward(y), CT_OK);
    ct_tensor *g = ct_grad(t);
    assert_non_null(g);
    assert_int_equal(ct_numel(g), 0);
    ct_release(g);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_gradients_on_the_cpu),
        cmocka_unit_test(softmax_gradients_on_opencl),
        cmocka_unit_test(softmax_gradient_matches_the_formula_in_float32),
        cmocka_unit_test(empty_softmax_backpropagates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
