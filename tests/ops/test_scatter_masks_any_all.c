/* scatter, scatter_add, index_add, masked_select, any / all, equal, isclose / allclose against
 * PyTorch's values (torch 2.15 CPU, written below), on the CPU and every OpenCL device; scatter's
 * duplicates take the last position; and the errors, which name the input. */
#include <math.h>
#include <string.h>

#include "nn/nn_test.h"
#include "support/devices.h"

static ct_tensor *ints_on(const int64_t *values, const int64_t *shape, int ndim, ct_device device)
{
    ct_tensor *c = ct_tensor_from_data(values, CT_I64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to(c, device);
    ct_release(c);
    return t;
}

static void expect_values(const char *what, const ct_tensor *t, const double *want, int64_t n)
{
    if (!t) fail_msg("%s: %s", what, ct_last_error_message());
    double got[16];
    values_of(t, got, n);
    for (int64_t i = 0; i < n; i++)
        if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))))
            fail_msg("%s[%lld]: got %.17g, want %.17g", what, (long long)i, got[i], want[i]);
}

static void check_on(ct_device device, ct_dtype dtype)
{
    ct_scope_push();
    double av[12];
    for (int i = 0; i < 12; i++) av[i] = i / 4.0;
    const int64_t S34[2] = {3, 4}, S24[2] = {2, 4};
    ct_tensor *a = tensor_of(av, S34, 2, dtype, device);
    ct_tensor *src = tensor_of((double[]){1, 2, 3, 4, 5, 6, 7, 8}, S24, 2, dtype, device);
    ct_tensor *idx = ints_on((int64_t[]){2, 0, 2, 1, 2, 1, 0, 1}, S24, 2, device);
    expect_values("scatter_add", ct_scatter_add(a, 0, idx, src),
                  (double[]){0, 2.25, 7.5, 0.75, 1, 7.25, 1.5, 13.75, 8, 2.25, 5.5, 2.75}, 12);
    /* an index smaller than src, along dim 1 */
    ct_tensor *s1 = tensor_of((double[]){10, 20, 30, 40, 50, 60, 70, 80, 90}, (int64_t[]){3, 3}, 2, dtype, device);
    ct_tensor *i1 = ints_on((int64_t[]){3, 0, 1, 3, 0, 0}, (int64_t[]){3, 2}, 2, device);
    expect_values("scatter_add dim 1", ct_scatter_add(a, 1, i1, s1),
                  (double[]){20, 0.25, 0.5, 10.75, 1, 41.25, 1.5, 51.75, 152, 2.25, 2.5, 2.75}, 12);
    ct_tensor *rows = tensor_of((double[]){1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, S34, 2, dtype, device);
    expect_values("index_add", ct_index_add(a, 0, ints_on((int64_t[]){2, 0, 2}, (int64_t[]){3}, 1, device), rows, 0.5),
                  (double[]){1, 1.25, 1.5, 1.75, 1, 1.25, 1.5, 1.75, 4, 4.25, 4.5, 4.75}, 12);
    ct_tensor *first = ct_narrow(src, 0, 0, 1);
    expect_values("scatter", ct_scatter(a, 0, ints_on((int64_t[]){2, 0, 1, 1}, (int64_t[]){1, 4}, 2, device), first),
                  (double[]){0, 2, 0.5, 0.75, 1, 1.25, 3, 4, 1, 2.25, 2.5, 2.75}, 12);
    /* duplicates: column 0 is hit by rows 0 and 1 of src: the last (5) wins, on every device */
    expect_values("scatter, duplicates", ct_scatter(a, 0, ints_on((int64_t[]){0, 0, 0, 0, 0, 1, 1, 1}, S24, 2, device), src),
                  (double[]){5, 2, 3, 4, 1, 6, 7, 8, 2, 2.25, 2.5, 2.75}, 12);
    expect_values("masked_select", ct_masked_select(a, ct_gt_scalar(a, 1.2)),
                  (double[]){1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75}, 7);
    ct_tensor *columns = ct_ne_scalar(tensor_of((double[]){1, 0, 0, 1}, (int64_t[]){4}, 1, dtype, device), 0.0);
    expect_values("masked_select, broadcast mask", ct_masked_select(a, columns),
                  (double[]){0, 0.75, 1, 1.75, 2, 2.75}, 6);
    /* any / all: NaN is nonzero; empty any false, empty all true */
    ct_tensor *x = tensor_of((double[]){0, 1, NAN, 0, 0, 0}, (int64_t[]){2, 3}, 2, dtype, device);
    expect_values("any", ct_any(x), (double[]){1}, 1);
    expect_values("any dim 1", ct_any_dim(x, 1, false), (double[]){1, 0}, 2);
    expect_values("all dim 1", ct_all_dim(x, 1, true), (double[]){0, 0}, 2);
    expect_values("all of nothing", ct_all(ct_narrow(x, 0, 0, 0)), (double[]){1}, 1);
    expect_values("any of nothing", ct_any(ct_narrow(x, 0, 0, 0)), (double[]){0}, 1);
    bool r = false;
    assert_int_equal(ct_equal(a, ct_clone(a), &r), CT_OK);
    assert_true(r);
    assert_int_equal(ct_equal(a, src, &r), CT_OK); /* another shape: false */
    assert_false(r);
    assert_int_equal(ct_equal(x, x, &r), CT_OK); /* NaN != NaN */
    assert_false(r);
    ct_tensor *p = tensor_of((double[]){1.0, INFINITY, NAN, 1e-9, 2.0}, (int64_t[]){5}, 1, CT_F64, device);
    ct_tensor *q = tensor_of((double[]){1 + 1e-6, INFINITY, NAN, 0, 2.1}, (int64_t[]){5}, 1, CT_F64, device);
    expect_values("isclose, equal_nan", ct_isclose(p, q, 1e-5, 1e-8, true), (double[]){1, 1, 1, 1, 0}, 5);
    expect_values("isclose", ct_isclose(p, q, 1e-5, 1e-8, false), (double[]){1, 1, 0, 1, 0}, 5);
    ct_tensor *infs = tensor_of((double[]){INFINITY, INFINITY}, (int64_t[]){2}, 1, CT_F64, device);
    expect_values("isclose to infinity", ct_isclose(ct_narrow(p, 0, 0, 2), infs, 1e-5, 1e-8, false), (double[]){0, 1}, 2);
    assert_int_equal(ct_allclose(ct_narrow(p, 0, 0, 2), ct_narrow(q, 0, 0, 2), 1e-5, 1e-8, false, &r), CT_OK);
    assert_true(r);
    assert_int_equal(ct_allclose(p, q, 1e-5, 1e-8, true, &r), CT_OK);
    assert_false(r);
    assert_int_equal(ct_allclose(p, q, 0.1, 1e-8, true, &r), CT_OK);
    assert_true(r);
    ct_scope_pop();
}

static void values_match_pytorch(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        check_on(devices[d], CT_F64);
        check_on(devices[d], CT_F32);
    }
}

static void expect_error(ct_tensor *result, ct_status code, const char *needle)
{
    assert_null(result);
    assert_int_equal(ct_last_error(), code);
    if (!strstr(ct_last_error_message(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), needle);
    ct_clear_error();
}

static void bad_inputs_are_named(void **state)
{
    (void)state;
    ct_scope_push();
    ct_device cpu = CT_DEVICE_CPU;
    ct_tensor *a = ct_zeros((int64_t[]){3, 4}, 2, CT_F32, cpu);
    ct_tensor *src = ct_ones((int64_t[]){2, 4}, 2, CT_F32, cpu);
    ct_tensor *idx = ints_on((int64_t[]){0, 1, 2, 3, 0, 1, 2, 1}, (int64_t[]){2, 4}, 2, cpu);
    expect_error(ct_scatter_add(a, 0, idx, src), CT_ERR_INDEX, "index 3 is out of range for dim 0 of size 3");
    expect_error(ct_scatter(a, 2, idx, src), CT_ERR_INDEX, "dim 2");
    expect_error(ct_scatter(a, 0, ct_ones((int64_t[]){3, 4}, 2, CT_I64, cpu), src), CT_ERR_SHAPE, "index [3, 4]");
    expect_error(ct_scatter(a, 0, ct_ones((int64_t[]){2, 4}, 2, CT_F32, cpu), src), CT_ERR_DTYPE, "index is float32");
    expect_error(ct_scatter(a, 0, idx, ct_ones((int64_t[]){2, 4}, 2, CT_F64, cpu)), CT_ERR_DTYPE, "src float64");
    expect_error(ct_scatter_add(ct_zeros((int64_t[]){3, 4}, 2, CT_I64, cpu), 0, idx,
                                ct_ones((int64_t[]){2, 4}, 2, CT_I64, cpu)),
                 CT_ERR_DTYPE, "self is int64");
    expect_error(ct_index_add(a, 0, ints_on((int64_t[]){0, 1}, (int64_t[]){2}, 1, cpu), ct_ones((int64_t[]){3, 4}, 2, CT_F32, cpu), 1.0),
                 CT_ERR_SHAPE, "one slice per index");
    expect_error(ct_masked_select(a, src), CT_ERR_DTYPE, "mask is float32");
    expect_error(ct_masked_select(a, ct_gt_scalar(ct_ones((int64_t[]){2}, 1, CT_F32, cpu), 0.0)), CT_ERR_SHAPE, "");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_match_pytorch),
        cmocka_unit_test(bad_inputs_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
