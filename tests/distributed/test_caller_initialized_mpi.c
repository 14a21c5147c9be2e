/* A program that initialises MPI itself (here with MPI_THREAD_FUNNELED) and uses ctorch's group
 * beside its own MPI calls: ct_dist_init takes MPI as it is, ctorch's collectives do not mix
 * with the program's, only the main thread may call them at that thread level, and
 * ct_dist_finalize leaves MPI to the program. Run under mpirun with 2 ranks and with 1. */
#include <mpi.h>
#include <pthread.h>

#include "dist_test.h"

static void ct_dist_init_uses_the_programs_mpi(void **state)
{
    (void)state;
    assert_int_equal(ct_dist_init(), CT_OK);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    assert_int_equal(ct_dist_rank(), rank);
    assert_int_equal(ct_dist_world_size(), world);
}

/* The program's own collective on MPI_COMM_WORLD and ctorch's, one after the other. */
static void the_programs_collectives_and_ctorchs_do_not_mix(void **state)
{
    (void)state;
    int rank = ct_dist_rank(), world = ct_dist_world_size();
    int64_t shape[1] = {3};
    ct_tensor *t = ct_full(shape, 1, rank + 1, CT_F64, CT_DEVICE_CPU);
    int own = rank * 10, own_sum = 0;
    assert_int_equal(MPI_Allreduce(&own, &own_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_OK);
    assert_int_equal(own_sum, 10 * world * (world - 1) / 2);
    double *got = dist_test_read(t);
    for (int i = 0; i < 3; i++) assert_true(got[i] == world * (world + 1) / 2.0);
    free(got);
    ct_release(t);
}

static void *collective_from_a_worker(void *status)
{
    *(ct_status *)status = ct_dist_barrier();
    return NULL;
}

static void at_funneled_level_only_the_main_thread_may_call_collectives(void **state)
{
    (void)state;
    int provided;
    MPI_Query_thread(&provided);
    if (provided >= MPI_THREAD_SERIALIZED) skip();
    /* every rank tries from a worker, so none waits for another */
    ct_status status = CT_OK;
    pthread_t worker;
    assert_int_equal(pthread_create(&worker, NULL, collective_from_a_worker, &status), 0);
    pthread_join(worker, NULL);
    assert_int_equal(status, CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_dist_barrier(), CT_OK);
}

static void ct_dist_finalize_leaves_mpi_to_the_program(void **state)
{
    (void)state;
    assert_int_equal(ct_dist_finalize(), CT_OK);
    int initialized = 0, finalized = 1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    assert_true(initialized);
    assert_false(finalized);
    /* and the group can start again while MPI runs */
    assert_int_equal(ct_dist_init(), CT_OK);
    assert_int_equal(ct_dist_barrier(), CT_OK);
    assert_int_equal(ct_dist_finalize(), CT_OK);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ct_dist_init_uses_the_programs_mpi),
        cmocka_unit_test(the_programs_collectives_and_ctorchs_do_not_mix),
        cmocka_unit_test(at_funneled_level_only_the_main_thread_may_call_collectives),
        cmocka_unit_test(ct_dist_finalize_leaves_mpi_to_the_program),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed;
}
