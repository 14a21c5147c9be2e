/* The collectives' device path (NCCL's, for CUDA tensors), where there is no GPU and no NCCL: the
 * stand-in accelerator of tests/support takes the "cuda" type (its memory is host memory), and a
 * device backend over MPI stands in for NCCL, counting its calls. What is shown:
 * - when every rank's tensors can take the device backend, it gets the tensors' own memory (no
 *   byte crosses between host and device: no staging) and gives the results of MPI;
 * - when one rank cannot (its library is missing, another device), every rank goes through MPI
 *   with host staging, and the results are the same;
 * - when the communicator cannot be made, every rank goes through MPI too;
 * - an asynchronous all-reduce of a tensor the device backend takes runs at once;
 * - DDP's buckets on such a device are reduced by the device backend, in device memory.
 * Run under mpirun with 2 ranks and with 1. */
#include "dist_test.h"
#include "distributed/dist_internal.h"
#include "support/fake_device.h"

static int rank_, world_;

/* What the stand-in NCCL does: which rank refuses tensors, whether prepare fails, its counts. */
static struct {
    int refusing_rank; /* -1: none */
    bool prepare_fails;
    int prepares, calls;
} fake;

static bool fake_accepts(ct_device device) { return device.type == CT_CUDA && rank_ != fake.refusing_rank; }
static ct_status fake_prepare(ct_device device)
{
    (void)device;
    fake.prepares++;
    return fake.prepare_fails ? CT_ERR_UNAVAILABLE : CT_OK;
}
static void *fake_data_of(const ct_tensor *t)
{
    return (char *)ct_tensor_handle(t) + (size_t)t->offset * ct_dtype_size(t->dtype);
}
static ct_status fake_all_reduce(void *data, int64_t count, ct_dtype dtype, ct_reduce_op op)
{
    fake.calls++;
    return ct_dist_mpi_backend.all_reduce(data, count, dtype, op);
}
static ct_status fake_broadcast(void *data, int64_t count, ct_dtype dtype, int root)
{
    fake.calls++;
    return ct_dist_mpi_backend.broadcast(data, count, dtype, root);
}
static ct_status fake_all_gather(const void *send, void *recv, int64_t count, ct_dtype dtype)
{
    fake.calls++;
    return ct_dist_mpi_backend.all_gather(send, recv, count, dtype);
}
static ct_status fake_reduce_scatter(const void *send, void *recv, int64_t count, ct_dtype dtype, ct_reduce_op op)
{
    fake.calls++;
    assert_non_null(send); /* a device backend always gets separate buffers */
    return ct_dist_mpi_backend.reduce_scatter(send, recv, count, dtype, op);
}

static const ct_dist_backend fake_nccl = {
    .name = "fake-nccl",
    .max_block_count = INT64_MAX,
    .all_reduce = fake_all_reduce,
    .broadcast = fake_broadcast,
    .all_gather = fake_all_gather,
    .reduce_scatter = fake_reduce_scatter,
    .device_memory = true,
    .accepts = fake_accepts,
    .prepare = fake_prepare,
    .data_of = fake_data_of,
};

static const ct_device CUDA0 = {CT_CUDA, 0};

/* Every collective once on cuda:0 tensors, each result checked against what every rank's values
 * give; *moved gets the bytes that crossed between host and device meanwhile. */
static void run_every_collective(size_t *moved)
{
    const int64_t n = 10;
    int64_t shape[1] = {n}, gathered_shape[1] = {n * world_}, scattered_shape[1] = {n};
    ct_tensor *reduced = dist_test_tensor(rank_, shape, 1, 1, CT_F32, CUDA0);
    ct_tensor *averaged = dist_test_tensor(rank_, shape, 1, 2, CT_I64, CUDA0);
    ct_tensor *broadcast = dist_test_tensor(rank_, shape, 1, 3, CT_F64, CUDA0);
    ct_tensor *input = dist_test_tensor(rank_, shape, 1, 4, CT_I32, CUDA0);
    ct_tensor *gathered = ct_zeros(gathered_shape, 1, CT_I32, CUDA0);
    ct_tensor *to_scatter = dist_test_tensor(rank_, gathered_shape, 1, 5, CT_F32, CUDA0);
    ct_tensor *scattered = ct_zeros(scattered_shape, 1, CT_F32, CUDA0);
    assert_non_null(scattered);
    size_t before = ct_test_fake_bytes_copied();
    assert_int_equal(ct_dist_all_reduce(reduced, CT_REDUCE_SUM), CT_OK);
    assert_int_equal(ct_dist_all_reduce(averaged, CT_REDUCE_AVG), CT_OK);
    assert_int_equal(ct_dist_broadcast(broadcast, world_ - 1), CT_OK);
    assert_int_equal(ct_dist_all_gather(gathered, input), CT_OK);
    assert_int_equal(ct_dist_reduce_scatter(scattered, to_scatter, CT_REDUCE_MAX), CT_OK);
    *moved = ct_test_fake_bytes_copied() - before;

    double want[64], x[16];
    for (int64_t i = 0; i < n; i++) {
        for (int r = 0; r < world_; r++) x[r] = dist_test_value(r, i, 1, CT_F32);
        want[i] = dist_test_reduce(x, world_, CT_REDUCE_SUM, CT_F32);
    }
    double *got = dist_test_read(reduced);
    dist_test_assert_values(got, want, n, 1e-6, "all_reduce sum");
    free(got);
    for (int64_t i = 0; i < n; i++) {
        for (int r = 0; r < world_; r++) x[r] = dist_test_value(r, i, 2, CT_I64);
        want[i] = dist_test_reduce(x, world_, CT_REDUCE_AVG, CT_I64);
    }
    got = dist_test_read(averaged);
    dist_test_assert_values(got, want, n, 0, "all_reduce avg");
    free(got);
    for (int64_t i = 0; i < n; i++) want[i] = dist_test_value(world_ - 1, i, 3, CT_F64);
    got = dist_test_read(broadcast);
    dist_test_assert_values(got, want, n, 0, "broadcast");
    free(got);
    for (int r = 0; r < world_; r++)
        for (int64_t i = 0; i < n; i++) want[r * n + i] = dist_test_value(r, i, 4, CT_I32);
    got = dist_test_read(gathered);
    dist_test_assert_values(got, want, n * world_, 0, "all_gather");
    free(got);
    for (int64_t i = 0; i < n; i++) {
        for (int r = 0; r < world_; r++) x[r] = dist_test_value(r, rank_ * n + i, 5, CT_F32);
        want[i] = dist_test_reduce(x, world_, CT_REDUCE_MAX, CT_F32);
    }
    got = dist_test_read(scattered);
    dist_test_assert_values(got, want, n, 0, "reduce_scatter");
    free(got);
    ct_release(reduced);
    ct_release(averaged);
    ct_release(broadcast);
    ct_release(input);
    ct_release(gathered);
    ct_release(to_scatter);
    ct_release(scattered);
}

static void every_rank_able_the_device_backend_takes_the_device_memory_without_staging(void **state)
{
    (void)state;
    fake = (__typeof__(fake)){.refusing_rank = -1};
    assert_string_equal(ct_dist_backend_name(CT_CUDA), "fake-nccl");
    size_t moved = 1;
    run_every_collective(&moved);
    assert_int_equal(fake.calls, 5);
    assert_int_equal(fake.prepares, 5);
    assert_int_equal(moved, 0); /* no byte staged through the host */
}

static void one_rank_unable_every_rank_goes_through_mpi_with_staging(void **state)
{
    (void)state;
    fake = (__typeof__(fake)){.refusing_rank = world_ - 1};
    size_t moved = 0;
    run_every_collective(&moved);
    assert_int_equal(fake.calls, 0);
    assert_int_equal(fake.prepares, 0);
    assert_true(moved > 0); /* through pinned host memory */
}

static void no_communicator_every_rank_goes_through_mpi(void **state)
{
    (void)state;
    fake = (__typeof__(fake)){.refusing_rank = -1, .prepare_fails = true};
    size_t moved = 0;
    run_every_collective(&moved);
    assert_int_equal(fake.calls, 0);
    assert_int_equal(fake.prepares, 5);
    assert_true(moved > 0);
}

static void tensors_of_other_devices_and_views_go_through_mpi(void **state)
{
    (void)state;
    fake = (__typeof__(fake)){.refusing_rank = -1};
    /* Rank 0 holds its tensor on the CPU, the others on cuda:0: MPI for all. */
    int64_t shape[2] = {3, 4};
    ct_tensor *t = dist_test_tensor(rank_, shape, 2, 6, CT_F32, rank_ == 0 ? CT_DEVICE_CPU : CUDA0);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_MIN), CT_OK);
    assert_int_equal(fake.calls, 0);
    /* A non-contiguous view on cuda:0 on every rank: MPI for all. */
    ct_tensor *view = dist_test_strided_tensor(rank_, shape, 7, CT_F32, CUDA0);
    assert_int_equal(ct_dist_all_reduce(view, CT_REDUCE_SUM), CT_OK);
    assert_int_equal(fake.calls, 0);
    double want[12], x[16];
    for (int64_t i = 0; i < 12; i++) {
        for (int r = 0; r < world_; r++) x[r] = dist_test_value(r, i, 6, CT_F32);
        want[i] = dist_test_reduce(x, world_, CT_REDUCE_MIN, CT_F32);
    }
    double *got = dist_test_read(t);
    dist_test_assert_values(got, want, 12, 0, "all_reduce min across devices");
    free(got);
    ct_release(t);
    ct_release(view);
}

static void an_async_all_reduce_the_device_backend_takes_runs_at_once(void **state)
{
    (void)state;
    fake = (__typeof__(fake)){.refusing_rank = -1};
    int64_t shape[1] = {5};
    ct_tensor *t = dist_test_tensor(rank_, shape, 1, 8, CT_F32, CUDA0);
    ct_dist_work *work = ct_dist_all_reduce_async(t, CT_REDUCE_SUM);
    assert_non_null(work);
    assert_true(ct_dist_work_is_completed(work));
    assert_int_equal(fake.calls, 1);
    assert_int_equal(ct_dist_work_wait(work), CT_OK);
    double want[5], x[16];
    for (int64_t i = 0; i < 5; i++) {
        for (int r = 0; r < world_; r++) x[r] = dist_test_value(r, i, 8, CT_F32);
        want[i] = dist_test_reduce(x, world_, CT_REDUCE_SUM, CT_F32);
    }
    double *got = dist_test_read(t);
    dist_test_assert_values(got, want, 5, 1e-6, "async all_reduce");
    free(got);
    ct_release(t);
}

static void ddp_buckets_on_a_device_the_device_backend_takes_are_reduced_in_device_memory(void **state)
{
    (void)state;
    fake = (__typeof__(fake)){.refusing_rank = -1};
    ct_manual_seed(5);
    ct_module *model = ct_sequential((ct_module *[]){ct_linear(4, 8, true), ct_tanh_module(), ct_linear(8, 2, true)}, 3);
    assert_int_equal(ct_module_to(model, CUDA0), CT_OK);
    ct_ddp_options options = ct_ddp_options_default();
    options.bucket_cap_mb = 1e-6; /* a bucket per parameter */
    ct_module *ddp = ct_distributed_data_parallel(model, &options);
    assert_non_null(ddp);
    int64_t shape[2] = {3, 4};
    ct_tensor *x = dist_test_tensor(rank_, shape, 2, 9, CT_F32, CUDA0);
    ct_scope_push();
    ct_tensor *loss = ct_sum(ct_module_forward(ddp, x), NULL, 0, false);
    int calls = fake.calls;
    size_t before = ct_test_fake_bytes_copied();
    assert_int_equal(ct_backward(loss), CT_OK);
    ct_scope_pop();
    assert_int_equal(fake.calls - calls, 4); /* the 4 buckets' all-reduces */
    assert_int_equal(ct_test_fake_bytes_copied() - before, 0);
    ct_release(x);
    ct_module_release(ddp);
    ct_module_release(model);
}

int main(void)
{
    ct_test_install_fake_cuda();
    ct_dist_backend_install_for_testing(CT_CUDA, &fake_nccl);
    if (ct_dist_init() != CT_OK) {
        fprintf(stderr, "ct_dist_init: %s\n", ct_last_error_message());
        return 1;
    }
    rank_ = ct_dist_rank();
    world_ = ct_dist_world_size();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_rank_able_the_device_backend_takes_the_device_memory_without_staging),
        cmocka_unit_test(one_rank_unable_every_rank_goes_through_mpi_with_staging),
        cmocka_unit_test(no_communicator_every_rank_goes_through_mpi),
        cmocka_unit_test(tensors_of_other_devices_and_views_go_through_mpi),
        cmocka_unit_test(an_async_all_reduce_the_device_backend_takes_runs_at_once),
        cmocka_unit_test(ddp_buckets_on_a_device_the_device_backend_takes_are_reduced_in_device_memory),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_dist_backend_install_for_testing(CT_CUDA, NULL);
    ct_dist_finalize();
    return failed;
}
