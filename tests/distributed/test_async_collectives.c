/* Started all-reduces (ct_dist_all_reduce_async): several in flight at once on cpu and opencl
 * tensors give the same results as blocking ones, in the order they were started; a blocking
 * collective after them comes after them; a mismatch between the ranks comes back from the wait
 * on every rank. */
#include "dist_test.h"

static int rank_, world_;

static void check_all_reduced(const ct_tensor *t, int salt, ct_reduce_op op, const char *what)
{
    int64_t n = ct_numel(t);
    double *got = dist_test_read(t);
    double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(want);
    for (int64_t i = 0; i < n; i++) {
        double x[64];
        for (int k = 0; k < world_; k++) x[k] = dist_test_value(k, i, salt, ct_tensor_dtype(t));
        want[i] = dist_test_reduce(x, world_, op, ct_tensor_dtype(t));
    }
    dist_test_assert_values(got, want, n, dist_test_tolerance(ct_tensor_dtype(t)), what);
    free(got);
    free(want);
}

static void several_started_all_reduces_give_the_blocking_results(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    enum { WORKS = 6 };
    static const ct_reduce_op ops[WORKS] = {CT_REDUCE_SUM, CT_REDUCE_AVG, CT_REDUCE_MAX,
                                            CT_REDUCE_MIN, CT_REDUCE_AVG, CT_REDUCE_SUM};
    static const int64_t sizes[WORKS] = {1, 1000, 0, 77, 300007, 5};
    for (int d = 0; d < device_count; d++) {
        ct_tensor *t[WORKS];
        ct_dist_work *w[WORKS];
        for (int i = 0; i < WORKS; i++) {
            t[i] = dist_test_tensor(rank_, &sizes[i], 1, 20 + i, i == 3 ? CT_I32 : CT_F32, devices[d]);
            w[i] = ct_dist_all_reduce_async(t[i], ops[i]);
            assert_non_null(w[i]);
        }
        /* Waited in another order than started. */
        for (int i = WORKS - 1; i >= 0; i--) {
            assert_int_equal(ct_dist_work_wait(w[i]), CT_OK);
            check_all_reduced(t[i], 20 + i, ops[i], "started all-reduce");
            ct_release(t[i]);
        }
    }
}

static void a_blocking_collective_comes_after_the_started_ones(void **state)
{
    (void)state;
    int64_t n = 100003;
    ct_tensor *started = dist_test_tensor(rank_, &n, 1, 31, CT_F32, CT_DEVICE_CPU);
    ct_tensor *blocking = dist_test_tensor(rank_, &n, 1, 32, CT_F32, CT_DEVICE_CPU);
    ct_dist_work *w = ct_dist_all_reduce_async(started, CT_REDUCE_SUM);
    assert_non_null(w);
    assert_int_equal(ct_dist_all_reduce(blocking, CT_REDUCE_MAX), CT_OK);
    /* The blocking call waited for the started one: it is complete now. */
    assert_true(ct_dist_work_is_completed(w));
    assert_int_equal(ct_dist_work_wait(w), CT_OK);
    check_all_reduced(started, 31, CT_REDUCE_SUM, "started before a blocking all-reduce");
    check_all_reduced(blocking, 32, CT_REDUCE_MAX, "blocking after a started all-reduce");
    ct_release(started);
    ct_release(blocking);
}

static void a_shape_mismatch_comes_back_from_the_wait_on_every_rank(void **state)
{
    (void)state;
    if (world_ < 2) skip();
    int64_t n = 3 + rank_;
    ct_tensor *t = dist_test_tensor(rank_, &n, 1, 40, CT_F32, CT_DEVICE_CPU);
    ct_dist_work *w = ct_dist_all_reduce_async(t, CT_REDUCE_SUM);
    assert_non_null(w);
    assert_int_equal(ct_dist_work_wait(w), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "ct_dist_all_reduce");
    /* The group is still usable. */
    assert_int_equal(ct_dist_barrier(), CT_OK);
    ct_release(t);
}

static void bad_arguments(void **state)
{
    (void)state;
    assert_null(ct_dist_all_reduce_async(NULL, CT_REDUCE_SUM));
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_dist_all_reduce_async");
    assert_int_equal(ct_dist_work_wait(NULL), CT_OK);
    assert_true(ct_dist_work_is_completed(NULL));
    /* A bad op is found by the collective itself, on every rank. */
    int64_t n = 4;
    ct_tensor *t = dist_test_tensor(rank_, &n, 1, 41, CT_F32, CT_DEVICE_CPU);
    ct_dist_work *w = ct_dist_all_reduce_async(t, (ct_reduce_op)17);
    assert_non_null(w);
    assert_int_equal(ct_dist_work_wait(w), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "op is 17");
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(several_started_all_reduces_give_the_blocking_results),
        cmocka_unit_test(a_blocking_collective_comes_after_the_started_ones),
        cmocka_unit_test(a_shape_mismatch_comes_back_from_the_wait_on_every_rank),
        cmocka_unit_test(bad_arguments),
    };
    return dist_test_main(tests, DIST_TEST_LEN(tests), &rank_, &world_);
}
