/* The stand-in cuBLAS: the cuBLAS calls ctorch makes (CT_CUDA_CUBLAS_FUNCTIONS of
 * src/backend/cuda/cuda_libraries.h) over OpenBLAS, column-major as cuBLAS is. Built only for the
 * tests, beside the stand-in driver (standin_*.c), whose device memory and streams it uses:
 * - a handle belongs to the device whose context was current at cublasCreate (none current:
 *   CUBLAS_STATUS_NOT_INITIALIZED), as a real handle does; a product with another device's
 *   context current, or on a stream of another device, fails (EXECUTION_FAILED, with a line on
 *   stderr) where a real GPU would misbehave;
 * - cublasSetStream sets the stream the products are queued on (NULL: the NULL stream); each
 *   product runs on that stream's worker, in order with the driver's other work there, and
 *   reads alpha and beta at the call (host pointer mode, cuBLAS's default);
 * - cublasSetMathMode sets the handle's math mode, which each product records in the gemm log
 *   (standin.h: ctorch_standin_cublas_gemm_log) as it was at the call, so that a test can tell
 *   whether a float32 product was allowed TF32; the arithmetic stays exact float32 (OpenBLAS's
 *   sgemm) in every mode, since TF32 rounding is not what the stand-in is for;
 * - arguments are checked as cuBLAS checks them (CUBLAS_STATUS_INVALID_VALUE), and every matrix
 *   must lie in live device memory of the handle's device (EXECUTION_FAILED otherwise).
 * - a product queued on a capturing stream (a graph capture) is recorded into the graph with its
 *   alpha and beta, and needs a workspace of the caller's set by cublasSetWorkspace since the last
 *   cublasSetStream (which resets it, as cuBLAS's does): without, CUBLAS_STATUS_NOT_SUPPORTED,
 *   where a cuBLAS would allocate its own during the capture.
 * Not modelled: other pointer modes, the math modes' arithmetic, what a workspace holds, and any
 * call not in the list. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>
#include <cublas_v2.h>

#include "standin.h"

struct cublasContext {
    int device;
    cudaStream_t stream;
    bool workspace_set; /* cublasSetWorkspace since the last cublasSetStream, which resets it */
    cublasMath_t math_mode; /* CUBLAS_DEFAULT_MATH (0) from calloc, as a new handle's */
};

/* The gemm log (standin.h): the last CTORCH_STANDIN_GEMM_LOG_CAPACITY products accepted. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static ctorch_standin_gemm gemm_log[CTORCH_STANDIN_GEMM_LOG_CAPACITY];
static size_t gemm_log_count; /* since the last clear */

static void log_gemm(const char *call, const struct cublasContext *handle, bool f64)
{
    pthread_mutex_lock(&log_lock);
    gemm_log[gemm_log_count % CTORCH_STANDIN_GEMM_LOG_CAPACITY] =
        (ctorch_standin_gemm){call, handle->device, f64, (int)handle->math_mode};
    gemm_log_count++;
    pthread_mutex_unlock(&log_lock);
}

size_t ctorch_standin_cublas_gemm_log(ctorch_standin_gemm *out, size_t capacity)
{
    pthread_mutex_lock(&log_lock);
    size_t held = gemm_log_count < CTORCH_STANDIN_GEMM_LOG_CAPACITY ? gemm_log_count
                                                                   : CTORCH_STANDIN_GEMM_LOG_CAPACITY;
    size_t oldest = gemm_log_count - held;
    for (size_t i = 0; i < held && i < capacity; i++)
        out[i] = gemm_log[(oldest + i) % CTORCH_STANDIN_GEMM_LOG_CAPACITY];
    pthread_mutex_unlock(&log_lock);
    return held;
}

void ctorch_standin_cublas_gemm_log_clear(void)
{
    pthread_mutex_lock(&log_lock);
    gemm_log_count = 0;
    pthread_mutex_unlock(&log_lock);
}

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    int device = ctorch_standin_current_device();
    if (device < 0) {
        fprintf(stderr, "ctorch CUDA stand-in: cublasCreate without a current context\n");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    cublasHandle_t h = calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->device = device;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    handle->workspace_set = false;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t bytes)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && (!workspace || !ctorch_standin_host_address((CUdeviceptr)(uintptr_t)workspace, bytes, NULL)))
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->workspace_set = bytes > 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* The modes of cublasMath_t (numbers, since older headers lack the emulation modes 4 and 8),
 * with or without CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION; anything else is refused. */
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base < 0 || (base > 4 && base != 8)) return CUBLAS_STATUS_INVALID_VALUE;
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

static bool valid_operation(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static enum CBLAS_TRANSPOSE cblas_operation(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans; /* real types: C is T */
}

/* One product (or a strided batch), as queued on the stream. */
typedef struct gemm_call {
    bool f64;
    cublasOperation_t transa, transb;
    int m, n, k, lda, ldb, ldc, batch;
    long long stride_a, stride_b, stride_c;
    double alpha, beta;
    void *a, *b, *c; /* host addresses */
} gemm_call;

static void run_gemm(void *arg)
{
    const gemm_call *g = arg;
    for (int i = 0; i < g->batch; i++) {
        if (g->f64) {
            const double *a = (const double *)g->a + i * g->stride_a;
            const double *b = (const double *)g->b + i * g->stride_b;
            double *c = (double *)g->c + i * g->stride_c;
            cblas_dgemm(CblasColMajor, cblas_operation(g->transa), cblas_operation(g->transb), g->m,
                        g->n, g->k, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
        } else {
            const float *a = (const float *)g->a + i * g->stride_a;
            const float *b = (const float *)g->b + i * g->stride_b;
            float *c = (float *)g->c + i * g->stride_c;
            cblas_sgemm(CblasColMajor, cblas_operation(g->transa), cblas_operation(g->transb), g->m,
                        g->n, g->k, (float)g->alpha, a, g->lda, b, g->ldb, (float)g->beta, c, g->ldc);
        }
    }
}

/* The host address of a column-major rows x cols matrix (leading dim ld) and its batch, when it
 * lies in device memory of `device`; NULL with a line on stderr otherwise. */
static void *matrix(const char *call, const char *which, const void *pointer, long rows, long cols,
                    long ld, long long stride, int batch, size_t element, int device)
{
    long long last = (long long)ld * (cols - 1) + rows; /* elements of one matrix */
    long long first = 0;
    if (batch > 1) {
        if (stride >= 0)
            last += stride * (batch - 1);
        else
            first = stride * (batch - 1);
    }
    CUdeviceptr start = (CUdeviceptr)(uintptr_t)pointer + (CUdeviceptr)(first * (long long)element);
    int found_device = -2;
    void *host = ctorch_standin_host_address(start, (size_t)(last - first) * element, &found_device);
    if (!host) {
        fprintf(stderr, "ctorch CUDA stand-in: %s: %s (%p, %ld x %ld, ld %ld, %d matrices) is not "
                "in live device memory\n", call, which, pointer, rows, cols, ld, batch);
        return NULL;
    }
    if (found_device >= 0 && found_device != device) {
        fprintf(stderr, "ctorch CUDA stand-in: %s: %s is memory of device %d, the handle's device "
                "is %d\n", call, which, found_device, device);
        return NULL;
    }
    return (char *)host - first * (long long)element;
}

static cublasStatus_t gemm(const char *call, cublasHandle_t handle, bool f64, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, double alpha,
                           const void *A, int lda, long long stride_a, const void *B, int ldb,
                           long long stride_b, double beta, void *C, int ldc, long long stride_c,
                           int batch)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    long a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
    long b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
    if (!valid_operation(transa) || !valid_operation(transb) || m < 0 || n < 0 || k < 0 ||
        batch < 0 || lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    int current = ctorch_standin_current_device();
    if (current != handle->device) {
        fprintf(stderr, "ctorch CUDA stand-in: %s: a handle of device %d used with %s%d's context "
                "current\n", call, handle->device, current < 0 ? "no context (device " : "device ",
                current);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    int stream_device = ctorch_standin_stream_device(handle->stream);
    if (stream_device != handle->device) {
        fprintf(stderr, "ctorch CUDA stand-in: %s: the handle's stream is %s (device %d), the "
                "handle's device is %d\n", call, stream_device < 0 ? "not a live stream" : "another "
                "device's", stream_device, handle->device);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cuStreamIsCapturing(handle->stream, &capturing) == CUDA_SUCCESS &&
        capturing != CU_STREAM_CAPTURE_STATUS_NONE && !handle->workspace_set) {
        fprintf(stderr, "ctorch CUDA stand-in: %s: a product captured into a graph needs a workspace of "
                "the caller's (cublasSetWorkspace after cublasSetStream)\n", call);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    size_t element = f64 ? sizeof(double) : sizeof(float);
    gemm_call *g = calloc(1, sizeof *g);
    if (!g) return CUBLAS_STATUS_ALLOC_FAILED;
    *g = (gemm_call){f64, transa, transb, m, n, k, lda, ldb, ldc, batch, stride_a, stride_b,
                     stride_c, alpha, beta, NULL, NULL, NULL};
    bool ok = true;
    if (k > 0) {
        g->a = matrix(call, "A", A, a_rows, a_cols, lda, stride_a, batch, element, handle->device);
        g->b = matrix(call, "B", B, b_rows, b_cols, ldb, stride_b, batch, element, handle->device);
        ok = g->a && g->b;
    }
    g->c = matrix(call, "C", C, m, n, ldc, stride_c, batch, element, handle->device);
    if (!ok || !g->c) {
        free(g);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (ctorch_standin_enqueue(handle->stream, run_gemm, free, g) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_gemm(call, handle, f64);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc)
{
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasSgemm", handle, false, transa, transb, m, n, k, *alpha, A, lda, 0, B, ldb,
                0, *beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const double *alpha, const double *A, int lda,
                           const double *B, int ldb, const double *beta, double *C, int ldc)
{
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasDgemm", handle, true, transa, transb, m, n, k, *alpha, A, lda, 0, B, ldb, 0,
                *beta, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb,
                                         long long int strideB, const float *beta, float *C,
                                         int ldc, long long int strideC, int batchCount)
{
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasSgemmStridedBatched", handle, false, transa, transb, m, n, k, *alpha, A,
                lda, strideA, B, ldb, strideB, *beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda,
                                         long long int strideA, const double *B, int ldb,
                                         long long int strideB, const double *beta, double *C,
                                         int ldc, long long int strideC, int batchCount)
{
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasDgemmStridedBatched", handle, true, transa, transb, m, n, k, *alpha, A,
                lda, strideA, B, ldb, strideB, *beta, C, ldc, strideC, batchCount);
}
