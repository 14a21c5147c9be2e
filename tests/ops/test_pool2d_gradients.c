/* Finite-difference checks (float64) of the pools' backward on the CPU and every OpenCL device:
 * overlapping and padded windows, count_include_pad both ways, a non-contiguous input. Inputs
 * are distinct values (a max window never has a tie within the finite-difference step). Also
 * the exact routing of max pooling's gradient to the argmax positions. */
#include "support/gradcheck.h"
#include "test_common.h"
#include "ops/nn_reference.h"

typedef struct pool_args {
    int64_t kernel[2], stride[2], padding[2];
    bool include_pad;
} pool_args;

static ct_tensor *f_max(ct_tensor *const *x, void *context)
{
    const pool_args *a = context;
    return ct_max_pool2d(x[0], a->kernel, a->stride, a->padding);
}

static ct_tensor *f_avg(ct_tensor *const *x, void *context)
{
    const pool_args *a = context;
    return ct_avg_pool2d(x[0], a->kernel, a->stride, a->padding, a->include_pad);
}

/* n distinct values: a shuffled ramp, spaced 0.1 apart. */
static ct_tensor *distinct(const int64_t *shape, ct_device device, uint64_t seed)
{
    int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    double *order = ref_values(n, seed, 0, 1), *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t rank = 0;
        for (int64_t j = 0; j < n; j++) rank += order[j] < order[i] || (order[j] == order[i] && j < i);
        v[i] = 0.1 * (double)rank - 0.05 * (double)n;
    }
    ct_tensor *t = ref_tensor(v, shape, 4, CT_F64, device);
    free(order);
    free(v);
    return t;
}

static void check_on(ct_device device)
{
    ct_scope_push();
    const int64_t s1[4] = {2, 2, 5, 5}, s2[4] = {1, 2, 6, 7};
    const pool_args cases[] = {
        {{2, 2}, {2, 2}, {0, 0}, true},
        {{3, 3}, {1, 1}, {1, 1}, true},  /* overlapping, padded */
        {{3, 3}, {2, 2}, {1, 1}, false},
        {{2, 3}, {1, 2}, {1, 1}, false},
        {{3, 2}, {2, 1}, {0, 1}, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_tensor *x = distinct(i % 2 ? s2 : s1, device, 30 + i);
        char what[64];
        snprintf(what, sizeof what, "max_pool2d case %zu", i);
        ct_gradcheck(what, f_max, &x, NULL, 1, (void *)&cases[i]);
        snprintf(what, sizeof what, "avg_pool2d case %zu", i);
        ct_gradcheck(what, f_avg, &x, NULL, 1, (void *)&cases[i]);
    }
    /* a transposed view: [1, 2, 7, 6] seen as [1, 2, 6, 7] */
    ct_tensor *viewed = ct_transpose(distinct((int64_t[]){1, 2, 7, 6}, device, 40), 2, 3);
    assert_false(ct_is_contiguous(viewed));
    ct_gradcheck("max_pool2d of a view", f_max, &viewed, NULL, 1, (void *)&cases[1]);
    ct_gradcheck("avg_pool2d of a view", f_avg, &viewed, NULL, 1, (void *)&cases[2]);
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

/* With overlapping windows an element that is the maximum of several windows gets all their
 * gradients; the others get none. */
static void max_gradients_go_to_the_argmax(void **state)
{
    (void)state;
    int device_count = 1 + (ct_device_count(CT_OPENCL) > 0 ? 1 : 0);
    ct_device devices[2] = {CT_DEVICE_CPU, {CT_OPENCL, 0}};
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        /* 1x1x3x3, kernel 2, stride 1: windows over rows/cols {0,1} and {1,2}; 9 is in all four */
        double x[9] = {1, 2, 3, 4, 9, 5, 6, 7, 8};
        ct_tensor *input = ref_tensor(x, (int64_t[]){1, 1, 3, 3}, 4, CT_F32, devices[d]);
        ct_requires_grad_(input, true);
        ct_tensor *out = ct_max_pool2d(input, (int64_t[]){2, 2}, (int64_t[]){1, 1}, NULL);
        assert_string_equal(ct_grad_fn_name(out), "MaxPool2DWithIndicesBackward");
        ct_tensor *g = ref_tensor((double[]){1, 10, 100, 1000}, (int64_t[]){1, 1, 2, 2}, 4, CT_F32, devices[d]);
        assert_int_equal(ct_backward_with(out, g, false), CT_OK);
        double *got = ref_read(ct_grad(input));
        double want[9] = {0, 0, 0, 0, 1111, 0, 0, 0, 0};
        ref_compare("routing", got, want, 9, 0);
        free(got);
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_the_cpu),
        cmocka_unit_test(gradients_on_opencl),
        cmocka_unit_test(max_gradients_go_to_the_argmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
