/* A ctorch built without MPI (only built then): every distributed call says so, and leaving a
 * group that was never joined is nothing. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(distributed_calls_say_ctorch_was_built_without_mpi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
