/* Finite-difference checks (float64) of ct_batch_norm's backward for input, weight and bias, on
 * the CPU and every OpenCL device: training (the batch statistics depend on the input) and
 * evaluation (the running statistics are constants), [N, C], [N, C, L] and [N, C, H, W],
 * without weight and bias, and a non-contiguous input. */
#include "support/gradcheck.h"
#include "test_common.h"
#include "ops/nn_reference.h"

typedef struct bn_args {
    ct_tensor *running_mean, *running_var;
    bool training;
} bn_args;

static ct_tensor *f_bn(ct_tensor *const *x, void *context)
{
    const bn_args *a = context;
    return ct_batch_norm(x[0], a->running_mean, a->running_var, x[1], x[2], a->training, 0.1, 1e-5);
}

static ct_tensor *f_bn_plain(ct_tensor *const *x, void *context)
{
    const bn_args *a = context;
    return ct_batch_norm(x[0], a->running_mean, a->running_var, NULL, NULL, a->training, 0.1, 1e-5);
}

static ct_tensor *values(const int64_t *shape, int ndim, uint64_t seed, double lo, double hi, ct_device device)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *v = ref_values(n, seed, lo, hi);
    ct_tensor *t = ref_tensor(v, shape, ndim, CT_F64, device);
    free(v);
    return t;
}

static void check_shape(const char *what, ct_device device, const int64_t *shape, int ndim)
{
    ct_scope_push();
    int64_t c = shape[1];
    bn_args args = {values(&c, 1, 50, -0.5, 0.5, device), values(&c, 1, 51, 0.5, 2, device), true};
    ct_tensor *inputs[3] = {values(shape, ndim, 52, -2, 2, device), values(&c, 1, 53, 0.5, 1.5, device),
                            values(&c, 1, 54, -1, 1, device)};
    char name[96];
    snprintf(name, sizeof name, "%s, training", what);
    ct_gradcheck(name, f_bn, inputs, NULL, 3, &args);
    snprintf(name, sizeof name, "%s, evaluation", what);
    args.training = false;
    ct_gradcheck(name, f_bn, inputs, NULL, 3, &args);
    ct_scope_pop();
}

static void check_on(ct_device device)
{
    check_shape("[N, C]", device, (int64_t[]){5, 3}, 2);
    check_shape("[N, C, L]", device, (int64_t[]){3, 2, 4}, 3);
    check_shape("[N, C, H, W]", device, (int64_t[]){2, 3, 3, 2}, 4);

    ct_scope_push();
    bn_args no_running = {NULL, NULL, true};
    ct_tensor *x = values((int64_t[]){4, 2, 3}, 3, 60, -1, 3, device);
    ct_gradcheck("without weight and bias", f_bn_plain, &x, NULL, 1, &no_running);
    /* [3, 4] transposed to [4, 3] */
    ct_tensor *viewed[3] = {ct_transpose(values((int64_t[]){3, 4}, 2, 61, -1, 1, device), 0, 1),
                            values((int64_t[]){3}, 1, 62, 0.5, 1.5, device),
                            values((int64_t[]){3}, 1, 63, -1, 1, device)};
    assert_false(ct_is_contiguous(viewed[0]));
    ct_gradcheck("a transposed input", f_bn, viewed, NULL, 3, &no_running);
    bool only_affine[3] = {true, false, false};
    ct_gradcheck("weight and bias alone", f_bn, viewed, only_affine, 3, &no_running);
    ct_scope_pop();
}

static void gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

/* The node's name, and no node (nor a gradient for the running statistics) outside grad mode. */
static void the_graph_records_a_batch_norm_node(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t shape[2] = {4, 2}, c = 2;
    ct_tensor *x = values(shape, 2, 70, -1, 1, CT_DEVICE_CPU), *w = ct_ones(&c, 1, CT_F64, CT_DEVICE_CPU);
    ct_tensor *rm = ct_zeros(&c, 1, CT_F64, CT_DEVICE_CPU), *rv = ct_ones(&c, 1, CT_F64, CT_DEVICE_CPU);
    ct_requires_grad_(w, true);
    ct_tensor *out = ct_batch_norm(x, rm, rv, w, NULL, true, 0.1, 1e-5);
    assert_string_equal(ct_grad_fn_name(out), "NativeBatchNormBackward");
    assert_false(ct_requires_grad(rm));
    assert_true(ct_is_leaf(rm));
    ct_no_grad_push();
    assert_null(ct_grad_fn_name(ct_batch_norm(x, rm, rv, w, NULL, true, 0.1, 1e-5)));
    ct_no_grad_pop();
    /* the gradient of sum(y) for weight is sum(xhat) = 0 per channel */
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    double g[2];
    assert_int_equal(ct_tensor_to_array(ct_grad(w), g, sizeof g), CT_OK);
    assert_float_equal(g[0], 0, 1e-12);
    assert_float_equal(g[1], 0, 1e-12);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_the_cpu),
        cmocka_unit_test(gradients_on_opencl),
        cmocka_unit_test(the_graph_records_a_batch_norm_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
