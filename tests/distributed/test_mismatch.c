/* Ranks that disagree (shapes, dtypes, ops, roots, collectives) or that cannot take part (a NULL
 * tensor, a wrong output) make every rank return an error naming both sides, never a hang; and
 * the group works normally afterwards. Run under mpirun with 2 ranks (and 1, where the checks
 * that need another rank are skipped). */
#include "dist_test.h"

static int rank_, world_;

#define NEED_TWO_RANKS()                                                                            \
    do {                                                                                            \
        if (world_ < 2) skip();                                                                     \
    } while (0)

/* The group still works: an all-reduce gives the right sum. */
static void assert_group_still_works(void)
{
    int64_t shape[1] = {5};
    ct_tensor *t = dist_test_tensor(rank_, shape, 1, 1, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_OK);
    double *got = dist_test_read(t);
    for (int i = 0; i < 5; i++) {
        double want = 0;
        for (int r = 0; r < world_; r++) want += dist_test_value(r, i, 1, CT_I64);
        assert_true(got[i] == want);
    }
    free(got);
    ct_release(t);
}

/* The message names this rank's shape and the other rank's. */
static void assert_names_both_shapes(const char *function, const char *mine, const char *theirs)
{
    char expected[256];
    snprintf(expected, sizeof expected, "%s: this rank (%d) passed a float32 tensor of shape %s, rank %d "
             "passed a float32 tensor of shape %s", function, rank_, mine, 1 - rank_, theirs);
    assert_error(CT_ERR_SHAPE, expected);
}

static void unequal_shapes_are_an_error_on_every_rank_for_every_collective(void **state)
{
    (void)state;
    NEED_TWO_RANKS();
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    const char *shapes[2] = {"[4, 3]", "[4, 4]"};
    for (int d = 0; d < device_count; d++) {
        int64_t shape[2] = {4, 3 + rank_}, gathered[2] = {8, 3 + rank_}, scattered[2] = {2, 3 + rank_};
        ct_tensor *t = ct_ones(shape, 2, CT_F32, devices[d]);
        ct_tensor *big = ct_zeros(gathered, 2, CT_F32, devices[d]);
        ct_tensor *small = ct_zeros(scattered, 2, CT_F32, devices[d]);
        assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_ERR_SHAPE);
        assert_names_both_shapes("ct_dist_all_reduce", shapes[rank_], shapes[1 - rank_]);
        assert_int_equal(ct_dist_broadcast(t, 0), CT_ERR_SHAPE);
        assert_names_both_shapes("ct_dist_broadcast", shapes[rank_], shapes[1 - rank_]);
        assert_int_equal(ct_dist_all_gather(big, t), CT_ERR_SHAPE);
        assert_names_both_shapes("ct_dist_all_gather", shapes[rank_], shapes[1 - rank_]);
        assert_int_equal(ct_dist_reduce_scatter(small, t, CT_REDUCE_SUM), CT_ERR_SHAPE);
        assert_names_both_shapes("ct_dist_reduce_scatter", shapes[rank_], shapes[1 - rank_]);
        /* the tensor was left alone */
        double *values = dist_test_read(t);
        for (int64_t i = 0; i < ct_numel(t); i++) assert_true(values[i] == 1.0);
        free(values);
        ct_release(t);
        ct_release(big);
        ct_release(small);
        assert_group_still_works();
    }
}

static void a_different_number_of_dims_is_an_error_too(void **state)
{
    (void)state;
    NEED_TWO_RANKS();
    int64_t shape[2] = {6, 1};
    ct_tensor *t = ct_zeros(shape, rank_ == 0 ? 1 : 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_MAX), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, rank_ == 0 ? "rank 1 passed a float32 tensor of shape [6, 1]"
                                          : "rank 0 passed a float32 tensor of shape [6]");
    ct_release(t);
    assert_group_still_works();
}

static void unequal_dtypes_are_a_dtype_error_on_every_rank(void **state)
{
    (void)state;
    NEED_TWO_RANKS();
    int64_t shape[1] = {9};
    ct_tensor *t = ct_zeros(shape, 1, rank_ == 0 ? CT_F32 : CT_I32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, rank_ == 0 ? "this rank (0) passed a float32 tensor of shape [9], rank 1 "
                                            "passed a int32 tensor of shape [9]"
                                          : "this rank (1) passed a int32 tensor of shape [9], rank 0 "
                                            "passed a float32 tensor of shape [9]");
    ct_release(t);
    assert_group_still_works();
}

static void different_ops_roots_or_collectives_are_an_error_on_every_rank(void **state)
{
    (void)state;
    NEED_TWO_RANKS();
    int64_t shape[1] = {4};
    ct_tensor *t = ct_zeros(shape, 1, CT_F64, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, rank_ == 0 ? CT_REDUCE_SUM : CT_REDUCE_MAX), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, rank_ == 0 ? "this rank (0) reduces with sum, rank 1 with max"
                                                     : "this rank (1) reduces with max, rank 0 with sum");
    assert_int_equal(ct_dist_broadcast(t, rank_), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "every rank must pass the same root");
    ct_status status = rank_ == 0 ? ct_dist_barrier() : ct_dist_all_reduce(t, CT_REDUCE_SUM);
    assert_int_equal(status, CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, rank_ == 0 ? "ct_dist_barrier: rank 1 called ct_dist_all_reduce"
                                                     : "ct_dist_all_reduce: rank 0 called ct_dist_barrier");
    ct_release(t);
    assert_group_still_works();
}

/* Rank 1 fails before the exchange; rank 0 learns why instead of waiting for it. */
static void a_rank_that_cannot_take_part_gives_its_error_to_every_rank(void **state)
{
    (void)state;
    NEED_TWO_RANKS();
    int64_t shape[1] = {3};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(rank_ == 1 ? NULL : t, CT_REDUCE_SUM), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, rank_ == 1 ? "ct_dist_all_reduce: argument 't' is NULL"
                                                  : "ct_dist_all_reduce: rank 1 could not take part: "
                                                    "ct_dist_all_reduce: argument 't' is NULL");
    /* a wrong output on rank 1 only */
    int64_t good[1] = {3 * world_}, bad[1] = {3 * world_ + 2};
    ct_tensor *output = ct_zeros(rank_ == 1 ? bad : good, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_gather(output, t), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, rank_ == 1 ? "ct_dist_all_gather: output has shape [8]"
                                          : "rank 1 could not take part: ct_dist_all_gather: output has shape [8]");
    ct_release(output);
    ct_release(t);
    assert_group_still_works();
}

/* Errors every rank finds alone (the same arguments everywhere). */
static void wrong_arguments_are_errors_on_every_rank(void **state)
{
    (void)state;
    int64_t shape[1] = {3};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, (ct_reduce_op)7), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_all_reduce: op is 7");
    assert_int_equal(ct_dist_broadcast(t, world_), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_broadcast: root is");
    assert_int_equal(ct_dist_broadcast(t, -1), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "root is -1");
    int64_t gathered[1] = {3 * world_};
    ct_tensor *ints = ct_zeros(gathered, 1, CT_I32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_gather(ints, t), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "output is int32 and input float32");
    assert_int_equal(ct_dist_all_gather(NULL, t), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'output'");
    ct_tensor *scalar = ct_zeros(NULL, 0, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_reduce_scatter(scalar, scalar, CT_REDUCE_SUM), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "its dim 0 must be a multiple of the world size");
    ct_release(t);
    ct_release(ints);
    ct_release(scalar);
    assert_group_still_works();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unequal_shapes_are_an_error_on_every_rank_for_every_collective),
        cmocka_unit_test(a_different_number_of_dims_is_an_error_too),
        cmocka_unit_test(unequal_dtypes_are_a_dtype_error_on_every_rank),
        cmocka_unit_test(different_ops_roots_or_collectives_are_an_error_on_every_rank),
        cmocka_unit_test(a_rank_that_cannot_take_part_gives_its_error_to_every_rank),
        cmocka_unit_test(wrong_arguments_are_errors_on_every_rank),
    };
    return dist_test_main(tests, DIST_TEST_LEN(tests), &rank_, &world_);
}
