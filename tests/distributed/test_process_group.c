/* The process group: clear errors before ct_dist_init; after it, rank, world size and local rank
 * agree with what the launcher says; the device of each rank; and no second start after MPI has
 * been finalised. Run under mpirun with 2 ranks and with 1. */
#include "dist_test.h"

/* The launcher's own account of this process (OpenMPI's variables), or -1 when it has none. */
static int launcher_value(const char *variable)
{
    const char *text = getenv(variable);
    return text ? atoi(text) : -1;
}

static void calls_before_init_are_clear_errors(void **state)
{
    (void)state;
    assert_false(ct_dist_is_initialized());
    assert_int_equal(ct_dist_rank(), -1);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_rank: the process group is not initialised; call ct_dist_init first");
    assert_int_equal(ct_dist_world_size(), -1);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_world_size");
    assert_int_equal(ct_dist_local_rank(), -1);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_local_rank");
    int64_t shape[1] = {2};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_all_reduce: the process group is not initialised");
    assert_int_equal(ct_dist_broadcast(t, 0), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_broadcast");
    assert_int_equal(ct_dist_barrier(), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_barrier");
    ct_device device;
    assert_int_equal(ct_dist_device(&device), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "ct_dist_device");
    /* leaving a group that was never joined is nothing */
    assert_int_equal(ct_dist_finalize(), CT_OK);
    ct_release(t);
}

static void the_launcher_announces_the_world_size(void **state)
{
    (void)state;
    int announced = launcher_value("OMPI_COMM_WORLD_SIZE");
    if (announced < 0) skip();
    assert_int_equal(ct_dist_launcher_world_size(), announced);
}

static void rank_and_sizes_agree_with_the_launcher(void **state)
{
    (void)state;
    assert_int_equal(ct_dist_init(), CT_OK);
    assert_true(ct_dist_is_initialized());
    int rank = ct_dist_rank(), world = ct_dist_world_size();
    assert_in_range(rank, 0, world - 1);
    assert_int_equal(world, ct_dist_launcher_world_size());
    if (launcher_value("OMPI_COMM_WORLD_RANK") >= 0) {
        assert_int_equal(rank, launcher_value("OMPI_COMM_WORLD_RANK"));
        assert_int_equal(ct_dist_local_rank(), launcher_value("OMPI_COMM_WORLD_LOCAL_RANK"));
        assert_int_equal(ct_dist_local_world_size(), launcher_value("OMPI_COMM_WORLD_LOCAL_SIZE"));
    }
    /* every rank is one machine's here */
    assert_int_equal(ct_dist_local_world_size(), world);
    assert_int_equal(ct_dist_local_rank(), rank);
    /* the ranks are 0..world-1, each once: gather them */
    int64_t one[1] = {1}, all[1] = {world};
    ct_tensor *mine = ct_full(one, 1, rank, CT_I32, CT_DEVICE_CPU), *ranks = ct_zeros(all, 1, CT_I32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_gather(ranks, mine), CT_OK);
    double *got = dist_test_read(ranks);
    for (int r = 0; r < world; r++) assert_true(got[r] == r);
    free(got);
    ct_release(mine);
    ct_release(ranks);
    /* a second init changes nothing */
    assert_int_equal(ct_dist_init(), CT_OK);
    assert_int_equal(ct_dist_rank(), rank);
    assert_string_equal(ct_dist_backend_name(CT_CPU), "mpi");
    assert_string_equal(ct_dist_backend_name(CT_OPENCL), "mpi");
}

static void each_rank_gets_the_device_of_its_local_rank(void **state)
{
    (void)state;
    unsetenv("CTORCH_DIST_DEVICE");
    ct_device device;
    assert_int_equal(ct_dist_device(&device), CT_OK);
    int opencl = ct_device_count(CT_OPENCL), local = ct_dist_local_rank();
    if (ct_device_count(CT_CUDA) > 0) {
        assert_int_equal(device.type, CT_CUDA);
    } else if (opencl > 0) {
        assert_int_equal(device.type, CT_OPENCL);
        assert_int_equal(device.index, local % opencl);
    } else {
        assert_true(ct_device_equal(device, CT_DEVICE_CPU));
    }
}

static void a_device_map_overrides_the_choice(void **state)
{
    (void)state;
    int local = ct_dist_local_rank();
    ct_device device;
    assert_int_equal(ct_dist_device_from("cpu", &device), CT_OK);
    assert_true(ct_device_equal(device, CT_DEVICE_CPU));
    /* local rank r takes entry r modulo the entries */
    assert_int_equal(ct_dist_device_from("cpu, cpu:0 ,cpu", &device), CT_OK);
    assert_true(ct_device_equal(device, CT_DEVICE_CPU));
    setenv("CTORCH_DIST_DEVICE", "cpu", 1);
    assert_int_equal(ct_dist_device(&device), CT_OK);
    assert_true(ct_device_equal(device, CT_DEVICE_CPU));
    if (ct_device_count(CT_OPENCL) >= 2) {
        assert_int_equal(ct_dist_device_from("opencl:1,opencl:0", &device), CT_OK);
        assert_int_equal(device.type, CT_OPENCL);
        assert_int_equal(device.index, local % 2 == 0 ? 1 : 0);
        setenv("CTORCH_DIST_DEVICE", "opencl", 1);
        assert_int_equal(ct_dist_device(&device), CT_OK);
        assert_int_equal(device.type, CT_OPENCL);
        assert_int_equal(device.index, local % ct_device_count(CT_OPENCL));
    }
    /* entries that are no device here */
    setenv("CTORCH_DIST_DEVICE", "gpu:0", 1);
    assert_int_equal(ct_dist_device(&device), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "CTORCH_DIST_DEVICE='gpu:0'");
    unsetenv("CTORCH_DIST_DEVICE");
    assert_int_equal(ct_dist_device_from("opencl:99", &device), ct_is_available(CT_OPENCL) ? CT_ERR_DEVICE : CT_ERR_UNAVAILABLE);
    assert_true(strstr(ct_last_error_message(), "entry 'opencl:99'") != NULL);
    ct_clear_error();
    assert_int_equal(ct_dist_device_from(local == 0 ? ",cpu" : ",", &device), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "is empty");
    if (ct_device_count(CT_CUDA) == 0) {
        assert_int_equal(ct_dist_device_from("cuda", &device), CT_ERR_UNAVAILABLE);
        assert_error(CT_ERR_UNAVAILABLE, "entry 'cuda' of the device map asks for a cuda device, but there is none");
    }
    assert_int_equal(ct_dist_device_from(NULL, &device), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'map'");
}

/* MPI cannot start twice in a process: after ct_dist_finalize a new ct_dist_init says so. */
static void after_finalize_the_group_cannot_start_again(void **state)
{
    (void)state;
    assert_int_equal(ct_dist_finalize(), CT_OK);
    assert_false(ct_dist_is_initialized());
    assert_int_equal(ct_dist_finalize(), CT_OK);
    assert_int_equal(ct_dist_init(), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "MPI has been finalised in this process and cannot start again");
    assert_int_equal(ct_dist_rank(), -1);
    ct_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calls_before_init_are_clear_errors),
        cmocka_unit_test(the_launcher_announces_the_world_size),
        cmocka_unit_test(rank_and_sizes_agree_with_the_launcher),
        cmocka_unit_test(each_rank_gets_the_device_of_its_local_rank),
        cmocka_unit_test(a_device_map_overrides_the_choice),
        cmocka_unit_test(after_finalize_the_group_cannot_start_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
