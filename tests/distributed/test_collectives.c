/* The collectives against a reference each rank computes from what every rank contributed:
 * every op and dtype, odd and zero sizes, non-contiguous tensors, CPU and OpenCL tensors, and
 * ranks whose tensors sit on different devices. Run by ctest under mpirun with 2 ranks and 1. */
#include "dist_test.h"

static const ct_dtype DTYPES[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL};
static const ct_reduce_op OPS[] = {CT_REDUCE_SUM, CT_REDUCE_AVG, CT_REDUCE_MAX, CT_REDUCE_MIN};
static const int64_t SIZES[] = {0, 1, 7, 1001};

static int rank_, world_;

/* The reduction of every rank's element i of tensors tagged salt. */
static double reference(int64_t i, int salt, ct_reduce_op op, ct_dtype dtype)
{
    double x[64] = {0};
    assert_in_range(world_, 1, 64);
    for (int r = 0; r < world_; r++) x[r] = dist_test_value(r, i, salt, dtype);
    return dist_test_reduce(x, world_, op, dtype);
}

/* t (this rank's values tagged salt) after an all-reduce holds the reference. */
static void check_all_reduced(ct_tensor *t, int salt, ct_reduce_op op, ct_dtype dtype, const char *what)
{
    int64_t n = ct_numel(t);
    double *got = dist_test_read(t), *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) want[i] = reference(i, salt, op, dtype);
    char label[160];
    snprintf(label, sizeof label, "%s, %s of %s", what, ct_reduce_op_name(op), ct_dtype_name(dtype));
    dist_test_assert_values(got, want, n, dist_test_tolerance(dtype), label);
    free(got);
    free(want);
}

static void all_reduce_gives_the_reduction_of_every_ranks_tensor_for_every_op_dtype_and_size(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int d = 0; d < device_count; d++)
        for (size_t k = 0; k < DIST_TEST_LEN(DTYPES); k++)
            for (size_t o = 0; o < DIST_TEST_LEN(OPS); o++) {
                if (DTYPES[k] == CT_BOOL && OPS[o] == CT_REDUCE_AVG) continue;
                for (size_t s = 0; s < DIST_TEST_LEN(SIZES); s++) {
                    int salt = (int)(k * 5 + o + s);
                    ct_tensor *t = dist_test_tensor(rank_, &SIZES[s], 1, salt, DTYPES[k], devices[d]);
                    assert_int_equal(ct_dist_all_reduce(t, OPS[o]), CT_OK);
                    assert_true(ct_device_equal(ct_tensor_device(t), devices[d]));
                    char what[64];
                    snprintf(what, sizeof what, "%lld elements on %s", (long long)SIZES[s],
                             ct_device_format(devices[d], (char[CT_DEVICE_STRING_MAX]){0}, CT_DEVICE_STRING_MAX));
                    check_all_reduced(t, salt, OPS[o], DTYPES[k], what);
                    ct_release(t);
                }
            }
}

static void all_reduce_of_bool_tensors_has_no_average(void **state)
{
    (void)state;
    int64_t shape[1] = {3};
    ct_tensor *t = dist_test_tensor(rank_, shape, 1, 0, CT_BOOL, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_AVG), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "no average");
    ct_release(t);
}

/* A strided view of a larger tensor: only the view's elements change. */
static void all_reduce_of_a_non_contiguous_view_writes_only_the_view(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int d = 0; d < device_count; d++) {
        int64_t shape[2] = {5, 3};
        ct_tensor *view = dist_test_strided_tensor(rank_, shape, 9, CT_F32, devices[d]);
        /* every other row of a [10, 3] tensor whose odd rows must stay as they are */
        int64_t big_shape[2] = {10, 3};
        ct_tensor *big = ct_full(big_shape, 2, -7.0, CT_F32, devices[d]);
        ct_tensor *rows = ct_slice(big, 0, 0, 10, 2);
        assert_int_equal(ct_copy_(rows, view), CT_OK);
        assert_false(ct_is_contiguous(rows));
        assert_int_equal(ct_dist_all_reduce(rows, CT_REDUCE_SUM), CT_OK);
        assert_int_equal(ct_dist_all_reduce(view, CT_REDUCE_MAX), CT_OK);
        check_all_reduced(rows, 9, CT_REDUCE_SUM, CT_F32, "every other row");
        check_all_reduced(view, 9, CT_REDUCE_MAX, CT_F32, "a transposed view");
        ct_tensor *odd = ct_slice(big, 0, 1, 10, 2);
        double *kept = dist_test_read(odd);
        for (int i = 0; i < 15; i++) assert_true(kept[i] == -7.0);
        free(kept);
        ct_tensor *list[] = {view, big, rows, odd};
        for (int i = 0; i < 4; i++) ct_release(list[i]);
    }
}

/* Ranks may keep their tensors on different devices: even ranks on the CPU, odd ones on OpenCL. */
static void all_reduce_works_when_ranks_hold_their_tensors_on_different_devices(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    ct_device mine = devices[rank_ % device_count];
    int64_t shape[1] = {4099};
    ct_tensor *t = dist_test_tensor(rank_, shape, 1, 3, CT_F64, mine);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_AVG), CT_OK);
    check_all_reduced(t, 3, CT_REDUCE_AVG, CT_F64, "mixed devices");
    ct_release(t);
}

static void broadcast_from_every_root_gives_every_rank_the_roots_tensor(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int d = 0; d < device_count; d++)
        for (size_t k = 0; k < DIST_TEST_LEN(DTYPES); k++)
            for (int root = 0; root < world_; root++)
                for (int strided = 0; strided < 2; strided++) {
                    int64_t shape[2] = {7, 3};
                    int salt = (int)k + root;
                    ct_tensor *t = strided ? dist_test_strided_tensor(rank_, shape, salt, DTYPES[k], devices[d])
                                           : dist_test_tensor(rank_, shape, 2, salt, DTYPES[k], devices[d]);
                    assert_int_equal(ct_dist_broadcast(t, root), CT_OK);
                    double *got = dist_test_read(t), want[21];
                    for (int i = 0; i < 21; i++) want[i] = dist_test_value(root, i, salt, DTYPES[k]);
                    dist_test_assert_values(got, want, 21, 0, strided ? "broadcast of a view" : "broadcast");
                    free(got);
                    ct_release(t);
                }
}

static void broadcast_of_an_empty_tensor_and_a_scalar(void **state)
{
    (void)state;
    int64_t empty_shape[2] = {0, 5};
    ct_tensor *empty = dist_test_tensor(rank_, empty_shape, 2, 0, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_broadcast(empty, 0), CT_OK);
    assert_int_equal(ct_numel(empty), 0);
    ct_tensor *scalar = dist_test_tensor(rank_, NULL, 0, 4, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_broadcast(scalar, world_ - 1), CT_OK);
    int64_t value;
    assert_int_equal(ct_item_int64(scalar, &value), CT_OK);
    assert_int_equal(value, (int64_t)dist_test_value(world_ - 1, 0, 4, CT_I64));
    ct_release(empty);
    ct_release(scalar);
}

/* output [world * d0, ...] holds rank r's input at rows [r * d0, (r + 1) * d0). */
static void check_gathered(const ct_tensor *output, int64_t per_rank, int salt, ct_dtype dtype, const char *what)
{
    double *got = dist_test_read(output);
    double *want = malloc(sizeof(double) * (size_t)(per_rank * world_ + 1));
    for (int r = 0; r < world_; r++)
        for (int64_t i = 0; i < per_rank; i++) want[r * per_rank + i] = dist_test_value(r, i, salt, dtype);
    dist_test_assert_values(got, want, per_rank * world_, 0, what);
    free(got);
    free(want);
}

static void all_gather_stacks_every_ranks_input_in_rank_order(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int di = 0; di < device_count; di++)
        for (int dout = 0; dout < device_count; dout++)
            for (size_t k = 0; k < DIST_TEST_LEN(DTYPES); k++) {
                int64_t shape[2] = {3, 5}, out_shape[2] = {3 * world_, 5};
                int salt = (int)k + 2;
                ct_tensor *input = dist_test_tensor(rank_, shape, 2, salt, DTYPES[k], devices[di]);
                ct_tensor *output = ct_zeros(out_shape, 2, DTYPES[k], devices[dout]);
                assert_int_equal(ct_dist_all_gather(output, input), CT_OK);
                check_gathered(output, 15, salt, DTYPES[k], "all_gather");
                ct_release(input);
                ct_release(output);
            }
}

static void all_gather_takes_views_scalars_empty_tensors_and_its_own_block(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int d = 0; d < device_count; d++) {
        /* a transposed input into a transposed output */
        int64_t shape[2] = {4, 3}, out_shape[2] = {3, 4 * world_};
        ct_tensor *input = dist_test_strided_tensor(rank_, shape, 5, CT_I32, devices[d]);
        ct_tensor *base = ct_zeros(out_shape, 2, CT_I32, devices[d]);
        ct_tensor *output = ct_transpose(base, 0, 1);
        assert_int_equal(ct_dist_all_gather(output, input), CT_OK);
        check_gathered(output, 12, 5, CT_I32, "all_gather of views");
        /* scalars stack into [world] */
        ct_tensor *scalar = dist_test_tensor(rank_, NULL, 0, 6, CT_F64, devices[d]);
        int64_t world_shape[1] = {world_};
        ct_tensor *stacked = ct_zeros(world_shape, 1, CT_F64, devices[d]);
        assert_int_equal(ct_dist_all_gather(stacked, scalar), CT_OK);
        check_gathered(stacked, 1, 6, CT_F64, "all_gather of scalars");
        /* empty inputs */
        int64_t empty_shape[2] = {0, 4};
        ct_tensor *empty_in = ct_zeros(empty_shape, 2, CT_F32, devices[d]);
        ct_tensor *empty_out = ct_zeros(empty_shape, 2, CT_F32, devices[d]);
        assert_int_equal(ct_dist_all_gather(empty_out, empty_in), CT_OK);
        /* the input is this rank's own block of the output */
        int64_t rows_shape[2] = {2 * world_, 3}, block_shape[2] = {2, 3};
        ct_tensor *gathered = ct_zeros(rows_shape, 2, CT_I64, devices[d]);
        ct_tensor *own = ct_narrow(gathered, 0, 2 * rank_, 2);
        ct_tensor *values = dist_test_tensor(rank_, block_shape, 2, 7, CT_I64, devices[d]);
        assert_int_equal(ct_copy_(own, values), CT_OK);
        assert_int_equal(ct_dist_all_gather(gathered, own), CT_OK);
        check_gathered(gathered, 6, 7, CT_I64, "all_gather in place");
        ct_tensor *list[] = {input, base, output, scalar, stacked, empty_in, empty_out, gathered, own, values};
        for (size_t i = 0; i < DIST_TEST_LEN(list); i++) ct_release(list[i]);
    }
}

static void all_gather_refuses_an_output_of_the_wrong_shape_on_every_rank(void **state)
{
    (void)state;
    int64_t shape[1] = {3}, wrong[1] = {3 * world_ + 1};
    ct_tensor *input = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU), *output = ct_zeros(wrong, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_gather(output, input), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "ct_dist_all_gather: output has shape");
    ct_release(input);
    ct_release(output);
}

/* Rank r's output holds rows [r * d0, (r + 1) * d0) of the reduction of every rank's input. */
static void reduce_scatter_gives_each_rank_its_slice_of_the_reduction(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int d = 0; d < device_count; d++)
        for (size_t k = 0; k < DIST_TEST_LEN(DTYPES); k++)
            for (size_t o = 0; o < DIST_TEST_LEN(OPS); o++)
                for (int strided = 0; strided < 2; strided++) {
                    if (DTYPES[k] == CT_BOOL && OPS[o] == CT_REDUCE_AVG) continue;
                    int64_t in_shape[2] = {3 * world_, 5}, out_shape[2] = {3, 5};
                    int salt = (int)(k + o) + strided;
                    ct_tensor *input = strided ? dist_test_strided_tensor(rank_, in_shape, salt, DTYPES[k], devices[d])
                                               : dist_test_tensor(rank_, in_shape, 2, salt, DTYPES[k], devices[d]);
                    ct_tensor *output = ct_zeros(out_shape, 2, DTYPES[k], devices[d]);
                    double *before = dist_test_read(input);
                    assert_int_equal(ct_dist_reduce_scatter(output, input, OPS[o]), CT_OK);
                    double *got = dist_test_read(output), want[15];
                    for (int i = 0; i < 15; i++) want[i] = reference(rank_ * 15 + i, salt, OPS[o], DTYPES[k]);
                    dist_test_assert_values(got, want, 15, dist_test_tolerance(DTYPES[k]), "reduce_scatter");
                    /* the input is left as it was */
                    double *after = dist_test_read(input);
                    dist_test_assert_values(after, before, 3 * world_ * 5, 0, "reduce_scatter's input");
                    free(before);
                    free(got);
                    free(after);
                    ct_release(input);
                    ct_release(output);
                }
}

static void reduce_scatter_of_empty_tensors_and_into_another_device(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    int64_t empty_in[2] = {0, 3}, empty_out[2] = {0, 3};
    ct_tensor *input = ct_zeros(empty_in, 2, CT_F32, CT_DEVICE_CPU), *output = ct_zeros(empty_out, 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_reduce_scatter(output, input, CT_REDUCE_SUM), CT_OK);
    ct_release(input);
    ct_release(output);
    /* a CPU input scattered into a tensor on the other device */
    int64_t in_shape[1] = {11 * world_}, out_shape[1] = {11};
    input = dist_test_tensor(rank_, in_shape, 1, 8, CT_F32, CT_DEVICE_CPU);
    output = ct_zeros(out_shape, 1, CT_F32, devices[device_count - 1]);
    assert_int_equal(ct_dist_reduce_scatter(output, input, CT_REDUCE_AVG), CT_OK);
    double *got = dist_test_read(output), want[11];
    for (int i = 0; i < 11; i++) want[i] = reference(rank_ * 11 + i, 8, CT_REDUCE_AVG, CT_F32);
    dist_test_assert_values(got, want, 11, 1e-6, "reduce_scatter to another device");
    free(got);
    ct_release(input);
    ct_release(output);
}

static void reduce_scatter_needs_a_dim_0_that_the_ranks_divide(void **state)
{
    (void)state;
    int64_t in_shape[1] = {world_ * 2 + 1}, out_shape[1] = {2};
    ct_tensor *input = ct_zeros(in_shape, 1, CT_F32, CT_DEVICE_CPU), *output = ct_zeros(out_shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_status status = ct_dist_reduce_scatter(output, input, CT_REDUCE_SUM);
    if (world_ == 1) {
        /* one rank divides everything: then it is the output's shape that is wrong */
        assert_int_equal(status, CT_ERR_SHAPE);
        assert_error(CT_ERR_SHAPE, "output has shape [2]");
    } else {
        assert_int_equal(status, CT_ERR_SHAPE);
        assert_error(CT_ERR_SHAPE, "must be a multiple of the world size");
    }
    ct_release(input);
    ct_release(output);
}

/* A large odd-sized tensor grows the staging buffer, and the next smaller one reuses it. */
static void collectives_on_a_large_device_tensor_then_a_small_one(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    ct_device device = devices[device_count - 1];
    int64_t sizes[2] = {300007, 5};
    for (int s = 0; s < 2; s++) {
        ct_tensor *t = dist_test_tensor(rank_, &sizes[s], 1, 11, CT_F32, device);
        assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_OK);
        check_all_reduced(t, 11, CT_REDUCE_SUM, CT_F32, "large then small");
        ct_release(t);
    }
}

static void barrier_returns_on_every_rank(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) assert_int_equal(ct_dist_barrier(), CT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_reduce_gives_the_reduction_of_every_ranks_tensor_for_every_op_dtype_and_size),
        cmocka_unit_test(all_reduce_of_bool_tensors_has_no_average),
        cmocka_unit_test(all_reduce_of_a_non_contiguous_view_writes_only_the_view),
        cmocka_unit_test(all_reduce_works_when_ranks_hold_their_tensors_on_different_devices),
        cmocka_unit_test(broadcast_from_every_root_gives_every_rank_the_roots_tensor),
        cmocka_unit_test(broadcast_of_an_empty_tensor_and_a_scalar),
        cmocka_unit_test(all_gather_stacks_every_ranks_input_in_rank_order),
        cmocka_unit_test(all_gather_takes_views_scalars_empty_tensors_and_its_own_block),
        cmocka_unit_test(all_gather_refuses_an_output_of_the_wrong_shape_on_every_rank),
        cmocka_unit_test(reduce_scatter_gives_each_rank_its_slice_of_the_reduction),
        cmocka_unit_test(reduce_scatter_of_empty_tensors_and_into_another_device),
        cmocka_unit_test(reduce_scatter_needs_a_dim_0_that_the_ranks_divide),
        cmocka_unit_test(collectives_on_a_large_device_tensor_then_a_small_one),
        cmocka_unit_test(barrier_returns_on_every_rank),
    };
    return dist_test_main(tests, DIST_TEST_LEN(tests), &rank_, &world_);
}
