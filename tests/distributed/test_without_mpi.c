/* A ctorch built without MPI (only built then): every distributed call says so, and leaving a
 * group that was never joined is nothing; SyncBatchNorm converts and is plain BatchNorm. */
#include "test_common.h"

static void distributed_calls_say_ctorch_was_built_without_mpi(void **state)
{
    (void)state;
    assert_false(ct_dist_is_available());
    assert_int_equal(ct_dist_init(), CT_ERR_NOT_COMPILED);
    assert_error(CT_ERR_NOT_COMPILED, "ct_dist_init: ctorch was built without MPI");
    assert_int_equal(ct_dist_rank(), -1);
    assert_error(CT_ERR_NOT_COMPILED, "ct_dist_rank: ctorch was built without MPI");
    int64_t shape[1] = {2};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_ERR_NOT_COMPILED);
    assert_error(CT_ERR_NOT_COMPILED, "-DCTORCH_WITH_MPI=ON");
    assert_int_equal(ct_dist_barrier(), CT_ERR_NOT_COMPILED);
    ct_clear_error();
    assert_null(ct_dist_backend_name(CT_CPU));
    assert_false(ct_dist_is_initialized());
    assert_int_equal(ct_dist_finalize(), CT_OK);
    ct_release(t);
}

/* Without a process group SyncBatchNorm is BatchNorm: the same outputs, gradients and running
 * statistics as an unconverted twin (bit for bit: the same layer computes them). */
static void sync_batch_norm_converts_and_is_batch_norm(void **state)
{
    (void)state;
    ct_module *plain = ct_batch_norm2d(3, NULL), *sync = ct_batch_norm2d(3, NULL);
    int converted = -1;
    assert_int_equal(ct_convert_sync_batch_norm(sync, &converted), CT_OK);
    assert_int_equal(converted, 1);
    assert_string_equal(ct_module_kind(sync), "SyncBatchNorm");
    ct_scope_push();
    int64_t shape[4] = {4, 3, 2, 2};
    ct_tensor *x = ct_randn(shape, 4, CT_F32, CT_DEVICE_CPU), *x2 = ct_clone(x);
    ct_requires_grad_(x, true);
    ct_requires_grad_(x2, true);
    ct_tensor *a = ct_module_forward(plain, x), *b = ct_module_forward(sync, x2);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(ct_backward(ct_sum(ct_mul(a, a), NULL, 0, false)), CT_OK);
    assert_int_equal(ct_backward(ct_sum(ct_mul(b, b), NULL, 0, false)), CT_OK);
    const ct_tensor *pairs[][2] = {{a, b}, {ct_grad(x), ct_grad(x2)},
                                   {ct_module_buffer(plain, "running_var"), ct_module_buffer(sync, "running_var")}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        float u[48], v[48];
        int64_t n = ct_numel(pairs[i][0]);
        assert_int_equal(ct_tensor_to_array(pairs[i][0], u, sizeof u), CT_OK);
        assert_int_equal(ct_tensor_to_array(pairs[i][1], v, sizeof v), CT_OK);
        assert_memory_equal(u, v, sizeof(float) * (size_t)n);
    }
    ct_scope_pop();
    ct_module_release(plain);
    ct_module_release(sync);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(distributed_calls_say_ctorch_was_built_without_mpi),
        cmocka_unit_test(sync_batch_norm_converts_and_is_batch_norm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
