/* The stand-in cuBLAS on its own: opened as ctorch opens it, with the stand-in driver for its
 * device memory and streams. Products are column-major as cuBLAS's, in order on their stream. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "test_common.h"

#include "backend/cuda/cuda_libraries.h"
#include "standin.h"

static ct_cuda_driver cu;
static ct_cuda_cublas blas;
static CUcontext ctx0, ctx1;

#define CHECK(call) assert_int_equal((call), CUDA_SUCCESS)
#define CHECK_BLAS(call) assert_int_equal((call), CUBLAS_STATUS_SUCCESS)

static void *open_library(const char *variable, const char *fallback)
{
    const char *path = getenv(variable);
    if (!path || !path[0]) path = fallback;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) fail_msg("dlopen %s: %s", path, dlerror());
    return library;
}

#define LOOK_UP_IN(table, f)                                                                     \
    table.f = (__typeof__(table.f))dlsym(library, CT_CUDA_SYMBOL(f));                            \
    if (!table.f) fail_msg("the stand-in has no %s", CT_CUDA_SYMBOL(f));
#define LOOK_UP_DRIVER(f) LOOK_UP_IN(cu, f)
#define LOOK_UP_CUBLAS(f) LOOK_UP_IN(blas, f)

static int setup(void **state)
{
    (void)state;
    void *library = open_library("CTORCH_CUDA_DRIVER", CTORCH_CUDA_STANDIN_DRIVER);
    CT_CUDA_DRIVER_FUNCTIONS(LOOK_UP_DRIVER)
    library = open_library("CTORCH_CUDA_CUBLAS", CTORCH_CUDA_STANDIN_CUBLAS);
    CT_CUDA_CUBLAS_FUNCTIONS(LOOK_UP_CUBLAS)
    CHECK(cu.cuInit(0));
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx0, 0));
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx1, 1));
    return 0;
}

/* C (m x n) = A (m x k) B (k x n), column-major, naively. */
static void reference(int m, int n, int k, const float *a, const float *b, float *c)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double sum = 0;
            for (int l = 0; l < k; l++) sum += (double)a[i + l * m] * b[l + j * k];
            c[i + j * m] = (float)sum;
        }
}

static CUdeviceptr upload(const void *host, size_t bytes)
{
    CUdeviceptr d;
    CHECK(cu.cuMemAlloc(&d, bytes));
    CHECK(cu.cuMemcpyHtoD(d, host, bytes));
    return d;
}

static void test_a_handle_needs_a_current_context(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(NULL));
    cublasHandle_t handle;
    assert_int_equal(blas.cublasCreate(&handle), CUBLAS_STATUS_NOT_INITIALIZED);
}

static void test_products_are_column_major_and_checked(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    enum { m = 5, n = 4, k = 3, batch = 2 };
    float a[batch][m * k], b[batch][k * n], c[batch][m * n], want[m * n];
    for (int s = 0; s < batch; s++) {
        for (int i = 0; i < m * k; i++) a[s][i] = (float)(i + 1 + s);
        for (int i = 0; i < k * n; i++) b[s][i] = (float)(i % 5) - 2.0f * (float)s;
    }
    CUdeviceptr da = upload(a, sizeof a), db = upload(b, sizeof b), dc;
    CHECK(cu.cuMemAlloc(&dc, sizeof c));
    cublasHandle_t handle;
    CHECK_BLAS(blas.cublasCreate(&handle));
    const float one = 1.0f, zero = 0.0f;
    float *A = (float *)(uintptr_t)da, *B = (float *)(uintptr_t)db, *C = (float *)(uintptr_t)dc;
    CHECK_BLAS(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, m, B, k, &zero,
                                C, m));
    CHECK(cu.cuMemcpyDtoH(c, dc, sizeof c[0]));
    reference(m, n, k, a[0], b[0], want);
    assert_memory_equal(c[0], want, sizeof want);
    CHECK_BLAS(blas.cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A,
                                              m, m * k, B, k, k * n, &zero, C, m, m * n, batch));
    CHECK(cu.cuMemcpyDtoH(c, dc, sizeof c));
    for (int s = 0; s < batch; s++) {
        reference(m, n, k, a[s], b[s], want);
        assert_memory_equal(c[s], want, sizeof want);
    }
    /* As cuBLAS checks: leading dimensions below the rows, negative sizes. */
    assert_int_equal(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, m - 1, B,
                                      k, &zero, C, m), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, -1, n, k, &one, A, m, B, k,
                                      &zero, C, m), CUBLAS_STATUS_INVALID_VALUE);
    /* Beyond the allocation: a fault on a GPU, an error here. */
    assert_int_equal(blas.cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one,
                                                    A, m, m * k, B, k, k * n, &zero, C, m, m * n,
                                                    batch + 1), CUBLAS_STATUS_EXECUTION_FAILED);
    /* The handle is device 0's. */
    CHECK(cu.cuCtxSetCurrent(ctx1));
    assert_int_equal(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, m, B, k,
                                      &zero, C, m), CUBLAS_STATUS_EXECUTION_FAILED);
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CHECK_BLAS(blas.cublasDestroy(handle));
    CHECK(cu.cuMemFree(da));
    CHECK(cu.cuMemFree(db));
    CHECK(cu.cuMemFree(dc));
}

/* cublasSetMathMode keeps the mode a product is logged with (a new handle: the default math);
 * the arithmetic is exact float32 whatever the mode; a mode cuBLAS does not have is refused. */
static void test_products_log_the_handles_math_mode(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    void *library = open_library("CTORCH_CUDA_CUBLAS", CTORCH_CUDA_STANDIN_CUBLAS);
    ctorch_standin_cublas_gemm_log_fn read_log =
        (ctorch_standin_cublas_gemm_log_fn)dlsym(library, "ctorch_standin_cublas_gemm_log");
    ctorch_standin_cublas_gemm_log_clear_fn clear_log =
        (ctorch_standin_cublas_gemm_log_clear_fn)dlsym(library, "ctorch_standin_cublas_gemm_log_clear");
    assert_non_null(read_log);
    assert_non_null(clear_log);
    float a[4] = {1.0f / 3, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4];
    CUdeviceptr da = upload(a, sizeof a), db = upload(b, sizeof b), dc;
    CHECK(cu.cuMemAlloc(&dc, sizeof c));
    float *A = (float *)(uintptr_t)da, *B = (float *)(uintptr_t)db, *C = (float *)(uintptr_t)dc;
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t handle;
    CHECK_BLAS(blas.cublasCreate(&handle));
    clear_log();
    CHECK_BLAS(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A, 2, B, 2, &zero, C, 2));
    CHECK_BLAS(blas.cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
    CHECK_BLAS(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A, 2, B, 2, &zero, C, 2));
    CHECK(cu.cuMemcpyDtoH(c, dc, sizeof c));
    assert_memory_equal(c, a, sizeof a); /* 1/3 kept to float32's 24 bits, not TF32's 11 */
    assert_int_equal(blas.cublasSetMathMode(handle, (cublasMath_t)5), CUBLAS_STATUS_INVALID_VALUE);
    CHECK_BLAS(blas.cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    CHECK_BLAS(blas.cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A, 2, B, 2, &zero, C, 2));
    ctorch_standin_gemm log[4];
    assert_int_equal(read_log(log, 4), 3);
    assert_int_equal(log[0].math_mode, CUBLAS_DEFAULT_MATH);
    assert_int_equal(log[1].math_mode, CUBLAS_TF32_TENSOR_OP_MATH);
    assert_int_equal(log[2].math_mode, CUBLAS_DEFAULT_MATH);
    assert_string_equal(log[1].call, "cublasSgemm");
    assert_int_equal(log[1].f64, 0);
    CHECK_BLAS(blas.cublasDestroy(handle));
    CHECK(cu.cuMemFree(da));
    CHECK(cu.cuMemFree(db));
    CHECK(cu.cuMemFree(dc));
    dlclose(library);
}

static atomic_int gate;
static void hold_until_open(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate)) nanosleep(&(struct timespec){0, 100000}, NULL);
}

static void test_products_run_in_order_on_the_handles_stream(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    double a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, *c;
    CHECK(cu.cuMemHostAlloc((void **)&c, sizeof a, 0));
    for (int i = 0; i < 4; i++) c[i] = -1.0;
    CUdeviceptr da = upload(a, sizeof a), db = upload(b, sizeof b), dc;
    CHECK(cu.cuMemAlloc(&dc, sizeof a));
    CUstream s;
    CHECK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    cublasHandle_t handle;
    CHECK_BLAS(blas.cublasCreate(&handle));
    CHECK_BLAS(blas.cublasSetStream(handle, s));
    atomic_store(&gate, 0);
    CHECK(cu.cuLaunchHostFunc(s, hold_until_open, NULL));
    double two = 2.0, zero = 0.0;
    CHECK_BLAS(blas.cublasDgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 2, &two,
                                (double *)(uintptr_t)da, 2, (double *)(uintptr_t)db, 2, &zero,
                                (double *)(uintptr_t)dc, 2));
    two = 100.0; /* alpha was read at the call */
    CHECK(cu.cuMemcpyDtoHAsync(c, dc, sizeof a, s));
    nanosleep(&(struct timespec){0, 10000000}, NULL);
    for (int i = 0; i < 4; i++) assert_true(c[i] == -1.0); /* not yet */
    atomic_store(&gate, 1);
    CHECK(cu.cuStreamSynchronize(s));
    /* 2 * A^T, column-major: A = [[1, 3], [2, 4]], A^T = [[1, 2], [3, 4]]. */
    assert_true(c[0] == 2.0 && c[1] == 6.0 && c[2] == 4.0 && c[3] == 8.0);
    CHECK_BLAS(blas.cublasDestroy(handle));
    CHECK(cu.cuStreamDestroy(s));
    CHECK(cu.cuMemFree(da));
    CHECK(cu.cuMemFree(db));
    CHECK(cu.cuMemFree(dc));
    CHECK(cu.cuMemFreeHost(c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_handle_needs_a_current_context),
        cmocka_unit_test(test_products_are_column_major_and_checked),
        cmocka_unit_test(test_products_run_in_order_on_the_handles_stream),
        cmocka_unit_test(test_products_log_the_handles_math_mode),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
