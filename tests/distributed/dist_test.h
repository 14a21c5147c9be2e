/* What the distributed tests share: rank-dependent tensors whose every rank's contribution each
 * rank can compute locally (the reference), the devices to run on, and reading values back. */
#ifndef CT_TEST_DIST_TEST_H
#define CT_TEST_DIST_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tensors.h"
#include "test_common.h"

#define DIST_TEST_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Element i of rank `rank`'s contribution, for a tensor tagged `salt`: small integers of both
 * signs (0..22 for unsigned dtypes, 0 or 1 for bool) whose largest and smallest come from
 * different ranks at different elements; floats get a fraction too. */
static inline double dist_test_value(int rank, int64_t i, int salt, ct_dtype dtype)
{
    int64_t k = (i * 7 + rank * 13 + salt * 5) % 23;
    if (dtype == CT_BOOL) return (double)((i + rank + salt) % 3 == 0);
    if (dtype == CT_U8) return (double)k;
    double v = (double)(k - 11);
    return ct_dtype_is_floating(dtype) ? v * 0.375 + 0.125 * rank : v;
}

/* A tensor of shape with rank's values (row-major), of dtype, on device; contiguous. */
static inline ct_tensor *dist_test_tensor(int rank, const int64_t *shape, int ndim, int salt, ct_dtype dtype,
                                          ct_device device)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *values = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(values);
    for (int64_t i = 0; i < n; i++) values[i] = dist_test_value(rank, i, salt, dtype);
    ct_tensor *t = ct_test_tensor_from(values, CT_F64, shape, ndim, dtype, device);
    free(values);
    return t;
}

/* The same values in a non-contiguous view: the transpose of a contiguous [cols, rows] tensor,
 * for a 2-d shape [rows, cols]. */
static inline ct_tensor *dist_test_strided_tensor(int rank, const int64_t *shape, int salt, ct_dtype dtype,
                                                  ct_device device)
{
    ct_tensor *t = dist_test_tensor(rank, shape, 2, salt, dtype, device);
    ct_tensor *transposed = ct_transpose(t, 0, 1);
    ct_tensor *base = ct_contiguous(transposed);
    ct_tensor *view = ct_transpose(base, 0, 1);
    assert_non_null(view);
    if (shape[0] > 1 && shape[1] > 1) assert_false(ct_is_contiguous(view));
    ct_release(t);
    ct_release(transposed);
    ct_release(base);
    return view;
}

/* t's values as doubles (malloc'ed; the caller frees). */
static inline double *dist_test_read(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(out);
    ct_tensor *f64 = ct_to_dtype(t, CT_F64);
    ct_tensor *cpu = ct_to(f64, CT_DEVICE_CPU);
    assert_non_null(cpu);
    assert_int_equal(ct_tensor_to_array(cpu, out, sizeof(double) * (size_t)n), CT_OK);
    ct_release(f64);
    ct_release(cpu);
    return out;
}

/* Asserts got[i] == want[i] for i < n, within tolerance relative to max(1, |want|). */
static inline void dist_test_assert_values(const double *got, const double *want, int64_t n, double tolerance,
                                           const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        if (!(fabs(got[i] - want[i]) <= tolerance * scale))
            fail_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
    }
}

/* Tolerance for a dtype: integers exact, floats to their precision (the order of a sum over
 * ranks is MPI's). */
static inline double dist_test_tolerance(ct_dtype dtype)
{
    return dtype == CT_F32 ? 1e-6 : dtype == CT_F64 ? 1e-13 : 0;
}

#define DIST_TEST_MAX_DEVICES 3

/* The devices this rank tests on (at most DIST_TEST_MAX_DEVICES): the CPU, its OpenCL device when there is one, and its CUDA
 * device when there is one (its collectives go through NCCL where NCCL is usable). */
static inline int dist_test_devices(ct_device *devices)
{
    int count = 0;
    devices[count++] = CT_DEVICE_CPU;
    if (ct_device_count(CT_OPENCL) > 0) {
        ct_device d;
        assert_int_equal(ct_dist_device_from("opencl", &d), CT_OK);
        devices[count++] = d;
    }
    if (ct_device_count(CT_CUDA) > 0) {
        ct_device d;
        assert_int_equal(ct_dist_device_from("cuda", &d), CT_OK);
        devices[count++] = d;
    }
    return count;
}

/* The reduction of the world's values x[0..world) as the dtype computes it. */
static inline double dist_test_reduce(const double *x, int world, ct_reduce_op op, ct_dtype dtype)
{
    double r = x[0];
    for (int k = 1; k < world; k++) {
        switch (op) {
        case CT_REDUCE_SUM:
        case CT_REDUCE_AVG: r += x[k]; break;
        case CT_REDUCE_MAX: r = x[k] > r ? x[k] : r; break;
        case CT_REDUCE_MIN: r = x[k] < r ? x[k] : r; break;
        }
    }
    if (dtype == CT_BOOL) return r != 0;
    if (dtype == CT_U8) r = fmod(r, 256);
    if (op == CT_REDUCE_AVG) r = ct_dtype_is_floating(dtype) ? r / world : trunc(r / world);
    return r;
}

/* The main of a test program that runs between ranks: joins the process group, gives the rank
 * and the world size (before any test runs), runs the tests, leaves the group. */
static inline int dist_test_main(const struct CMUnitTest *tests, size_t count, int *rank, int *world)
{
    if (ct_dist_init() != CT_OK) {
        fprintf(stderr, "ct_dist_init: %s\n", ct_last_error_message());
        return 1;
    }
    *rank = ct_dist_rank();
    *world = ct_dist_world_size();
    int failed = _cmocka_run_group_tests("tests", tests, count, NULL, NULL);
    /* Runs on the stand-in CUDA devices say which backend their cuda tensors must have ended on:
     * "nccl", or "mpi" where the communicator could not be made. */
    const char *expected = getenv("CTORCH_TEST_CUDA_COLLECTIVES");
    const char *used = ct_dist_backend_name(CT_CUDA);
    if (expected && (!used || strcmp(expected, used) != 0)) {
        fprintf(stderr, "rank %d: cuda tensors' collectives went through %s; this run expects %s\n", *rank,
                used ? used : "(none)", expected);
        failed++;
    }
    ct_dist_finalize();
    return failed;
}

#endif
