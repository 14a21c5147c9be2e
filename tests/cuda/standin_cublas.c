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
 *   where a cuBLAS would allocate its own during the capture;
 * - cublasGemmEx and cublasGemmStridedBatchedEx take float16 or bfloat16 A, B and C (all three
 *   of one type) with CUBLAS_COMPUTE_32F (float alpha and beta), as ctorch calls them; they
 *   multiply in float32 (OpenBLAS's sgemm over float32 copies) and round C to nearest even, and
 *   the log records the data and compute types.
 * - a product is refused with CUBLAS_STATUS_ALLOC_FAILED when OpenBLAS, which runs it on a stream's
 *   worker, may need a work buffer the process cannot map (below: openblas_buffer_reserve), where
 *   a real cuBLAS fails to allocate its workspace; OpenBLAS itself retries such a mapping forever.
 * Not modelled: other pointer modes, the math modes' arithmetic, what a workspace holds, other
 * GemmEx type combinations, and any call not in the list. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/mman.h>

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

static void log_gemm(const char *call, const struct cublasContext *handle, cudaDataType type,
                     int compute_type)
{
    pthread_mutex_lock(&log_lock);
    gemm_log[gemm_log_count % CTORCH_STANDIN_GEMM_LOG_CAPACITY] =
        (ctorch_standin_gemm){call, handle->device, type == CUDA_R_64F, (int)handle->math_mode,
                              (int)type, compute_type};
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
    cudaDataType type; /* of A, B and C */
    cublasOperation_t transa, transb;
    int m, n, k, lda, ldb, ldc, batch;
    long long stride_a, stride_b, stride_c;
    double alpha, beta;
    void *a, *b, *c; /* host addresses */
} gemm_call;

/* float16 and bfloat16 bits to and from float (round to nearest even; NaN stays NaN). */
static float half_to_float(uint16_t h, bool bf16)
{
    uint32_t bits;
    if (bf16) {
        bits = (uint32_t)h << 16;
    } else {
        uint32_t sign = (uint32_t)(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
        if (exponent == 0x1f) {
            bits = sign | 0x7f800000u | (mantissa << 13);
        } else if (exponent != 0) {
            bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
        } else if (mantissa == 0) {
            bits = sign;
        } else { /* subnormal: m * 2^-24 */
            float value = (float)mantissa * 0x1p-24f;
            memcpy(&bits, &value, sizeof bits);
            bits |= sign;
        }
    }
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint16_t float_to_half(float value, bool bf16)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    if (bf16) {
        if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40);
        return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
    }
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    float magnitude = fabsf(value);
    if (magnitude != magnitude) return sign | 0x7e00;
    if (magnitude >= 65520.0f) return sign | 0x7c00; /* rounds past the largest, 65504 */
    if (magnitude < 0x1p-14f) /* subnormal: a multiple of 2^-24, rounded by the float addition */
        return sign | (uint16_t)lrintf(magnitude * 0x1p24f);
    uint32_t m;
    memcpy(&m, &magnitude, sizeof m);
    m += 0xfffu + ((m >> 13) & 1);
    return sign | (uint16_t)(((m >> 23) - 112) << 10 | ((m >> 13) & 0x3ff));
}

/* A column-major rows x cols 16-bit matrix (leading dim ld) as float32 (leading dim ld too). */
static float *widen(const uint16_t *from, long rows, long cols, long ld, bool bf16)
{
    float *to = malloc(sizeof(float) * (size_t)(ld * (cols - 1) + rows));
    for (long j = 0; to && j < cols; j++)
        for (long i = 0; i < rows; i++) to[j * ld + i] = half_to_float(from[j * ld + i], bf16);
    return to;
}

/* A 16-bit product: float32 copies, sgemm, C rounded once. */
static void run_half_gemm(const gemm_call *g, int i)
{
    bool bf16 = g->type == CUDA_R_16BF;
    long a_rows = g->transa == CUBLAS_OP_N ? g->m : g->k, a_cols = g->transa == CUBLAS_OP_N ? g->k : g->m;
    long b_rows = g->transb == CUBLAS_OP_N ? g->k : g->n, b_cols = g->transb == CUBLAS_OP_N ? g->n : g->k;
    uint16_t *c = (uint16_t *)g->c + i * g->stride_c;
    float *a32 = g->k > 0 ? widen((const uint16_t *)g->a + i * g->stride_a, a_rows, a_cols, g->lda, bf16) : NULL;
    float *b32 = g->k > 0 ? widen((const uint16_t *)g->b + i * g->stride_b, b_rows, b_cols, g->ldb, bf16) : NULL;
    float *c32 = widen(c, g->m, g->n, g->ldc, bf16);
    if (c32 && (g->k == 0 || (a32 && b32))) {
        if (g->k > 0)
            cblas_sgemm(CblasColMajor, cblas_operation(g->transa), cblas_operation(g->transb), g->m,
                        g->n, g->k, (float)g->alpha, a32, g->lda, b32, g->ldb, (float)g->beta, c32,
                        g->ldc);
        else
            for (long j = 0; j < g->n; j++)
                for (long r = 0; r < g->m; r++)
                    c32[j * g->ldc + r] = g->beta == 0 ? 0.0f : (float)g->beta * c32[j * g->ldc + r];
        for (long j = 0; j < g->n; j++)
            for (long r = 0; r < g->m; r++) c[j * g->ldc + r] = float_to_half(c32[j * g->ldc + r], bf16);
    } else {
        fprintf(stderr, "ctorch CUDA stand-in: cublasGemmEx: out of host memory\n");
    }
    free(c32);
    free(b32);
    free(a32);
}

/* OpenBLAS maps a work buffer of 128 MiB for each thread that calls it at once (and keeps it for
 * reuse), and retries a mapping that fails forever: a stand-in run under ulimit -v hung in its
 * worker's sgemm. So a product is queued only when the process can map a buffer for each product
 * that may then run at once beyond those OpenBLAS already holds (as ctorch's own
 * cpu_blas_workspace.c checks before its products). */
#define OPENBLAS_BUFFER_BYTES ((size_t)128 << 20)
static atomic_int products_running;     /* in the workers, now */
static atomic_int openblas_buffers_held; /* the most products that have run at once */

static bool openblas_buffer_reserve(void)
{
    int at_once = atomic_load(&products_running) + 1, held = atomic_load(&openblas_buffers_held);
    if (at_once <= held) return true;
    size_t bytes = (size_t)(at_once - held) * OPENBLAS_BUFFER_BYTES;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    munmap(p, bytes);
    return true;
}

static void run_gemm(void *arg)
{
    const gemm_call *g = arg;
    int at_once = atomic_fetch_add(&products_running, 1) + 1, held = atomic_load(&openblas_buffers_held);
    while (at_once > held && !atomic_compare_exchange_weak(&openblas_buffers_held, &held, at_once)) {
    }
    for (int i = 0; i < g->batch; i++) {
        if (g->type == CUDA_R_16F || g->type == CUDA_R_16BF) {
            run_half_gemm(g, i);
        } else if (g->type == CUDA_R_64F) {
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
    atomic_fetch_sub(&products_running, 1);
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

static cublasStatus_t gemm(const char *call, cublasHandle_t handle, cudaDataType type,
                           int compute_type, cublasOperation_t transa,
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
    size_t element = type == CUDA_R_64F ? sizeof(double) : type == CUDA_R_32F ? sizeof(float) : 2;
    gemm_call *g = calloc(1, sizeof *g);
    if (!g) return CUBLAS_STATUS_ALLOC_FAILED;
    *g = (gemm_call){type, transa, transb, m, n, k, lda, ldb, ldc, batch, stride_a, stride_b,
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
    if (!openblas_buffer_reserve()) {
        fprintf(stderr, "ctorch CUDA stand-in: %s: out of host memory for OpenBLAS's work buffer "
                "(128 MiB)\n", call);
        free(g);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    if (ctorch_standin_enqueue(handle->stream, run_gemm, free, g) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_gemm(call, handle, type, compute_type);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc)
{
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasSgemm", handle, CUDA_R_32F, -1, transa, transb, m, n, k, *alpha, A, lda, 0, B, ldb,
                0, *beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const double *alpha, const double *A, int lda,
                           const double *B, int ldb, const double *beta, double *C, int ldc)
{
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasDgemm", handle, CUDA_R_64F, -1, transa, transb, m, n, k, *alpha, A, lda, 0, B, ldb, 0,
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
    return gemm("cublasSgemmStridedBatched", handle, CUDA_R_32F, -1, transa, transb, m, n, k, *alpha, A,
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
    return gemm("cublasDgemmStridedBatched", handle, CUDA_R_64F, -1, transa, transb, m, n, k, *alpha, A,
                lda, strideA, B, ldb, strideB, *beta, C, ldc, strideC, batchCount);
}

/* The types ctorch multiplies with GemmEx: A, B and C all float16 or all bfloat16, accumulated in
 * float32 (float alpha and beta); anything else is refused as cuBLAS refuses a combination it
 * does not have. */
static bool half_types(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t compute)
{
    return (a == CUDA_R_16F || a == CUDA_R_16BF) && b == a && c == a &&
           (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_16F ||
            compute == CUBLAS_COMPUTE_32F_FAST_16BF);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                            int lda, const void *B, cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (!half_types(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm("cublasGemmEx", handle, Ctype, (int)computeType, transa, transb, m, n, k,
                *(const float *)alpha, A, lda, 0, B, ldb, 0, *(const float *)beta, C, ldc, 0, 1);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    (void)algo;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (!half_types(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm("cublasGemmStridedBatchedEx", handle, Ctype, (int)computeType, transa, transb, m,
                n, k, *(const float *)alpha, A, lda, strideA, B, ldb, strideB, *(const float *)beta,
                C, ldc, strideC, batchCount);
}
