/* sort and topk: stable order with ties, NaN as the largest value, int64 indices, every dtype,
 * on every device (the CPU and each OpenCL device); and their errors. */
#include <math.h>

#include "support/devices.h"
#include "support/tensors.h"
#include "test_common.h"

static void read_doubles(const ct_tensor *t, double *out, int64_t n)
{
    ct_tensor *d = ct_to_dtype(t, CT_F64);
    ct_tensor *h = ct_to(d, CT_DEVICE_CPU);
    assert_int_equal(ct_tensor_to_array(h, out, (size_t)n * sizeof *out), CT_OK);
    ct_release(h);
    ct_release(d);
}

static void read_indices(const ct_tensor *t, int64_t *out, int64_t n)
{
    assert_int_equal(ct_tensor_dtype(t), CT_I64);
    ct_tensor *h = ct_to(t, CT_DEVICE_CPU);
    assert_int_equal(ct_tensor_to_array(h, out, (size_t)n * sizeof *out), CT_OK);
    ct_release(h);
}

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void ties_keep_their_order_and_nan_is_largest(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const double x[8] = {3, NAN, 1, 3, NAN, 2, 1, 3};
    /* ascending: 1(2) 1(6) 2(5) 3(0) 3(3) 3(7) nan(1) nan(4); descending: nan(1) nan(4) 3(0)
     * 3(3) 3(7) 2(5) 1(2) 1(6) — PyTorch's stable=True order */
    const int64_t up[8] = {2, 6, 5, 0, 3, 7, 1, 4}, down[8] = {1, 4, 0, 3, 7, 5, 2, 6};
    int64_t shape[1] = {8};
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_tensor *t = ct_test_tensor_from(x, CT_F64, shape, 1, CT_F32, devices[d]);
        for (int descending = 0; descending < 2; descending++) {
            ct_tensor *indices = NULL;
            ct_tensor *values = ct_sort(t, 0, descending, &indices);
            assert_non_null(values);
            double v[8];
            int64_t i[8];
            read_doubles(values, v, 8);
            read_indices(indices, i, 8);
            const int64_t *want = descending ? down : up;
            for (int k = 0; k < 8; k++) {
                assert_int_equal(i[k], want[k]);
                assert_true(same(v[k], x[want[k]]));
            }
        }
        /* topk 4 largest: nan, nan, 3, 3; smallest 3: 1, 1, 2 */
        ct_tensor *indices = NULL;
        ct_tensor *top = ct_topk(t, 4, -1, true, true, &indices);
        int64_t i[4];
        read_indices(indices, i, 4);
        assert_int_equal(ct_tensor_shape(top)[0], 4);
        assert_true(i[0] == 1 && i[1] == 4 && i[2] == 0 && i[3] == 3);
        ct_tensor *low = ct_topk(t, 3, 0, false, true, &indices);
        double v[3];
        read_doubles(low, v, 3);
        read_indices(indices, i, 3);
        assert_true(v[0] == 1 && v[1] == 1 && v[2] == 2);
        assert_true(i[0] == 2 && i[1] == 6 && i[2] == 5);
        ct_scope_pop();
    }
}

/* Rows along every dim of a 3-D tensor, in each dtype, against a sort on the host. */
static void rows_along_any_dim_sort_in_every_dtype(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const ct_dtype dtypes[8] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL, CT_F16, CT_BF16};
    int64_t shape[3] = {3, 5, 37};
    enum { N = 3 * 5 * 37 };
    for (int d = 0; d < count; d++)
        for (int k = 0; k < 8; k++) {
            ct_scope_push();
            ct_tensor *t = ct_test_small_integers(shape, 3, dtypes[k], k, devices[d]);
            double x[N];
            read_doubles(t, x, N);
            for (int dim = 0; dim < 3; dim++) {
                ct_tensor *indices = NULL;
                ct_tensor *values = ct_sort(t, dim, dim == 1, &indices);
                assert_non_null(values);
                assert_int_equal(ct_tensor_dtype(values), dtypes[k]);
                static double v[N];
                static int64_t i[N];
                read_doubles(values, v, N);
                read_indices(indices, i, N);
                int64_t stride = dim == 0 ? 5 * 37 : dim == 1 ? 37 : 1, len = shape[dim];
                for (int64_t e = 0; e < N; e++) {
                    int64_t j = e / stride % len, base = e - j * stride;
                    assert_true(v[e] == x[base + i[e] * stride]);
                    if (j == 0) continue;
                    double before = v[e - stride];
                    /* ordered, and ties in index order */
                    if (dim == 1) assert_true(before >= v[e]);
                    else assert_true(before <= v[e]);
                    if (before == v[e]) assert_true(i[e - stride] < i[e]);
                }
            }
            ct_scope_pop();
        }
}

static void long_rows_sort_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    int64_t shape[1] = {5000};
    ct_manual_seed(3);
    ct_tensor *host = ct_rand(shape, 1, CT_F32, CT_DEVICE_CPU);
    static double x[5000], v[5000];
    read_doubles(host, x, 5000);
    for (int d = 0; d < count; d++) {
        ct_tensor *t = ct_to(host, devices[d]);
        ct_tensor *values = ct_sort(t, 0, false, NULL);
        read_doubles(values, v, 5000);
        for (int k = 1; k < 5000; k++) assert_true(v[k - 1] <= v[k]);
        double sx = 0, sv = 0;
        for (int k = 0; k < 5000; k++) sx += x[k], sv += v[k];
        assert_true(sx == sv || fabs(sx - sv) < 1e-9 * fabs(sx));
        ct_release(values);
        ct_release(t);
    }
    ct_release(host);
}

static void empty_zero_dim_and_k_zero(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t empty[2] = {0, 4}, s[1] = {4};
    ct_tensor *e = ct_zeros(empty, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *indices = NULL;
    ct_tensor *v = ct_sort(e, 1, false, &indices);
    assert_non_null(v);
    assert_int_equal(ct_numel(indices), 0);
    double one = 2.5;
    ct_tensor *scalar = ct_tensor_from_data(&one, CT_F64, NULL, 0, CT_DEVICE_CPU);
    v = ct_sort(scalar, -1, false, &indices);
    assert_int_equal(ct_tensor_ndim(v), 0);
    int64_t i = -1;
    read_indices(indices, &i, 1);
    assert_int_equal(i, 0);
    ct_tensor *t = ct_ones(s, 1, CT_F32, CT_DEVICE_CPU);
    v = ct_topk(t, 0, 0, true, true, &indices);
    assert_int_equal(ct_tensor_shape(v)[0], 0);
    assert_int_equal(ct_tensor_shape(indices)[0], 0);
    ct_scope_pop();
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s[2] = {2, 4};
    ct_tensor *t = ct_ones(s, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *indices = (ct_tensor *)1;
    assert_null(ct_sort(NULL, 0, false, &indices));
    assert_null(indices);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_sort");
    assert_null(ct_sort(t, 2, false, NULL));
    assert_error(CT_ERR_INDEX, "ct_sort");
    assert_null(ct_topk(t, 5, 1, true, true, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "k is 5");
    assert_null(ct_topk(t, -1, 1, true, true, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "k is -1");
    assert_null(ct_topk(t, 1, -3, true, true, NULL));
    assert_error(CT_ERR_INDEX, "ct_topk");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ties_keep_their_order_and_nan_is_largest),
        cmocka_unit_test(rows_along_any_dim_sort_in_every_dtype),
        cmocka_unit_test(long_rows_sort_on_every_device),
        cmocka_unit_test(empty_zero_dim_and_k_zero),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
