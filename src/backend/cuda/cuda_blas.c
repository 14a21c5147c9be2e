/* Matrix products on CUDA through cuBLAS, queued on a stream. ctorch's matrices are row-major and
 * cuBLAS's column-major: a row-major matrix read as column-major is its transpose, so
 * C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands swapped and the same
 * transpose flags. One strided-batched call for a batch at constant strides, single calls
 * otherwise. float32 and float64 in cublasSgemm and cublasDgemm (and their batched forms);
 * float16 and bfloat16 in cublasGemmEx and cublasGemmStridedBatchedEx with 16-bit A, B and C and
 * CUBLAS_COMPUTE_32F: products accumulated in float32 on the tensor cores, C rounded once, as
 * PyTorch multiplies them. Other dtypes are refused with CT_ERR_DTYPE. A cuBLAS handle per
 * device, created on the first product and used under a lock, since its stream and math mode are
 * handle state.
 *
 * TF32: float32 products run in cuBLAS's default math (exact float32) unless
 * ct_set_float32_matmul_precision allowed TF32, as PyTorch's default; then in
 * CUBLAS_TF32_TENSOR_OP_MATH, the mode that lets cublasSgemm* use TF32 tensor cores (what PyTorch
 * sets on its handles). The mode is set before every product, so a change between two products
 * takes effect at the next one; float64, float16 and bfloat16 products always run in the default
 * math (which lets 16-bit products use the tensor cores). */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

static const char *cublas_status_name(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

static ct_status cublas_fail(int index, const char *what, cublasStatus_t status)
{
    if (status == CUBLAS_STATUS_ALLOC_FAILED)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "cuda:%d: %s failed: %s (%d): out of memory for cuBLAS's "
                        "workspace; free memory or use a smaller batch", index, what,
                        cublas_status_name(status), (int)status);
    return ct_error(CT_ERR_BACKEND, "cuda:%d: %s failed: %s (%d)", index, what, cublas_status_name(status),
                    (int)status);
}

/* One cuBLAS call: `count` matrices from matrix `first` of the batch. */
static cublasStatus_t gemm_call(const ct_cuda_cublas *cublas, cublasHandle_t handle,
                                const ct_gemm_args *g, long first, long count)
{
    size_t element = ct_dtype_size(g->dtype);
    CUdeviceptr a = ct_cuda_pointer(g->a) + (size_t)(g->a_offset + first * g->a_batch_stride) * element;
    CUdeviceptr b = ct_cuda_pointer(g->b) + (size_t)(g->b_offset + first * g->b_batch_stride) * element;
    CUdeviceptr c = ct_cuda_pointer(g->c) + (size_t)(g->c_offset + first * g->c_batch_stride) * element;
    /* column-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m) */
    cublasOperation_t op_b = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_a = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)g->n, n = (int)g->m, k = (int)g->k;
    int ldb = (int)g->ldb, lda = (int)g->lda, ldc = (int)g->ldc;
    if (g->dtype == CT_F16 || g->dtype == CT_BF16) {
        float alpha = (float)g->alpha, beta = (float)g->beta;
        cudaDataType type = g->dtype == CT_F16 ? CUDA_R_16F : CUDA_R_16BF;
        const void *first_operand = (const void *)(uintptr_t)b, *second_operand = (const void *)(uintptr_t)a;
        void *result = (void *)(uintptr_t)c;
        if (count == 1)
            return cublas->cublasGemmEx(handle, op_b, op_a, m, n, k, &alpha, first_operand, type, ldb,
                                        second_operand, type, lda, &beta, result, type, ldc,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        return cublas->cublasGemmStridedBatchedEx(handle, op_b, op_a, m, n, k, &alpha, first_operand,
                                                  type, ldb, g->b_batch_stride, second_operand, type,
                                                  lda, g->a_batch_stride, &beta, result, type, ldc,
                                                  g->c_batch_stride, (int)count, CUBLAS_COMPUTE_32F,
                                                  CUBLAS_GEMM_DEFAULT);
    }
    if (g->dtype == CT_F32) {
        float alpha = (float)g->alpha, beta = (float)g->beta;
        const float *first_operand = (const float *)(uintptr_t)b;
        const float *second_operand = (const float *)(uintptr_t)a;
        float *result = (float *)(uintptr_t)c;
        if (count == 1)
            return cublas->cublasSgemm(handle, op_b, op_a, m, n, k, &alpha, first_operand, ldb,
                                       second_operand, lda, &beta, result, ldc);
        return cublas->cublasSgemmStridedBatched(handle, op_b, op_a, m, n, k, &alpha, first_operand,
                                                 ldb, g->b_batch_stride, second_operand, lda,
                                                 g->a_batch_stride, &beta, result, ldc,
                                                 g->c_batch_stride, (int)count);
    }
    double alpha = g->alpha, beta = g->beta;
    const double *first_operand = (const double *)(uintptr_t)b;
    const double *second_operand = (const double *)(uintptr_t)a;
    double *result = (double *)(uintptr_t)c;
    if (count == 1)
        return cublas->cublasDgemm(handle, op_b, op_a, m, n, k, &alpha, first_operand, ldb,
                                   second_operand, lda, &beta, result, ldc);
    return cublas->cublasDgemmStridedBatched(handle, op_b, op_a, m, n, k, &alpha, first_operand,
                                             ldb, g->b_batch_stride, second_operand, lda,
                                             g->a_batch_stride, &beta, result, ldc,
                                             g->c_batch_stride, (int)count);
}

bool ct_cuda_gemm_takes(int index, ct_dtype dtype)
{
    (void)index;
    return dtype == CT_F32 || dtype == CT_F64 || dtype == CT_F16 || dtype == CT_BF16;
}

/* "Sgemm", "GemmStridedBatchedEx": the cuBLAS routine of a call, for messages. */
static const char *routine_name(ct_dtype dtype, bool strided_batched)
{
    static const char *const names[2][3] = {{"Sgemm", "Dgemm", "GemmEx"},
                                            {"SgemmStridedBatched", "DgemmStridedBatched",
                                             "GemmStridedBatchedEx"}};
    return names[strided_batched][dtype == CT_F32 ? 0 : dtype == CT_F64 ? 1 : 2];
}

ct_status ct_cuda_gemm(int index, void *stream, const ct_gemm_args *g)
{
    if (!ct_cuda_gemm_takes(index, g->dtype))
        return ct_error(CT_ERR_DTYPE, "cuda gemm: dtype %s has no BLAS routine", ct_dtype_name(g->dtype));
    /* ct_backend_gemm has refused negative offsets and sizes above int, and skipped empty outputs */
    if (g->k <= 0) /* the ops layer fills an empty sum itself, as on OpenCL */
        return ct_error(CT_ERR_INVALID_ARGUMENT, "cuda gemm: k is %ld; an empty sum has no product "
                        "to compute", g->k);
    char reason[512];
    ct_status failure = CT_ERR_BACKEND;
    const ct_cuda_cublas *cublas = ct_cuda_cublas_library(reason, sizeof reason, &failure);
    if (!cublas) return ct_error(failure, "cuda:%d: matrix products need cuBLAS: %s", index, reason);
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;

    ct_cuda_device *device = &ct_cuda_devices[index];
    pthread_mutex_lock(&device->blas_lock);
    cublasStatus_t result = CUBLAS_STATUS_SUCCESS;
    if (!device->blas && (result = cublas->cublasCreate(&device->blas)) != CUBLAS_STATUS_SUCCESS) {
        device->blas = NULL;
        pthread_mutex_unlock(&device->blas_lock);
        return cublas_fail(index, "cublasCreate", result);
    }
    result = cublas->cublasSetStream(device->blas, ct_cuda_stream(stream));
    if (result != CUBLAS_STATUS_SUCCESS) {
        pthread_mutex_unlock(&device->blas_lock);
        return cublas_fail(index, "cublasSetStream", result);
    }
    if ((status = ct_cuda_blas_workspace_for_capture(index, ct_cuda_stream(stream))) != CT_OK) {
        pthread_mutex_unlock(&device->blas_lock);
        return status;
    }
    bool tf32 = g->dtype == CT_F32 && ct_float32_matmul_allows_tf32();
    result = cublas->cublasSetMathMode(device->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (result != CUBLAS_STATUS_SUCCESS) {
        pthread_mutex_unlock(&device->blas_lock);
        return cublas_fail(index, tf32 ? "cublasSetMathMode (TF32, as ct_set_float32_matmul_precision allowed)"
                                       : "cublasSetMathMode (default math)", result);
    }
    /* Batch matrices that all write one C would race in a batched call: run them in turn. */
    bool batched = g->batch == 1 || g->c_batch_stride != 0;
    long per_call = batched ? g->batch : 1;
    for (long first = 0; first < g->batch && result == CUBLAS_STATUS_SUCCESS; first += per_call)
        result = gemm_call(cublas, device->blas, g, first, per_call);
    pthread_mutex_unlock(&device->blas_lock);
    if (result == CUBLAS_STATUS_SUCCESS) return CT_OK;
    char what[160];
    snprintf(what, sizeof what, "cuBLAS %s (%s, %ld x %ld x %ld, batch %ld)",
             routine_name(g->dtype, per_call > 1), ct_dtype_name(g->dtype), g->m, g->n, g->k, g->batch);
    return cublas_fail(index, what, result);
}
