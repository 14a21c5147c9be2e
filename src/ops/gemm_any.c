/* Matrix products of any floating dtype on any device. float16 and bfloat16 go to the device's
 * own 16-bit product where its BLAS has one (cuBLAS's GemmEx, CLBlast's Hgemm on a device with
 * cl_khr_fp16, OpenBLAS's sbgemm/shgemm where it was built with them); elsewhere the elements the
 * product reads are converted to float32 on the device, multiplied by the float32 gemm and the
 * result rounded once to the 16-bit dtype: the same float32 accumulation the 16-bit libraries do,
 * at the cost of two conversions (O(n^2) beside the product's O(n^3)). */
#include "ops/ops_internal.h"
#include "backend/backend.h"

/* Elements from an operand's offset to the last one a product reads: `batch` matrices of rows x
 * cols as stored, rows `ld` apart, matrices `batch_stride` apart. */
static int64_t span(long rows, long cols, long ld, long batch, long batch_stride)
{
    return (int64_t)(batch - 1) * batch_stride + (int64_t)(rows - 1) * ld + cols;
}

/* The float32 copy of `count` elements of t's storage from `offset`, or NULL. */
static ct_tensor *float32_span(const char *function, const ct_tensor *t, int64_t offset, int64_t count)
{
    ct_tensor *part = ct_tensor_view_of(t, 1, &count, (const int64_t[]){1}, offset);
    ct_tensor *wide = part ? ct_tensor_alloc(function, t->storage->device, CT_F32, &count, 1) : NULL;
    if (wide && ct_tensor_copy_into(wide, part) != CT_OK) {
        ct_release(wide);
        wide = NULL;
    }
    ct_release(part);
    return wide;
}

ct_status ct_gemm_of(const char *function, const ct_gemm_args *g, const ct_tensor *a,
                     const ct_tensor *b, ct_tensor *c)
{
    ct_device device = c->storage->device;
    if (g->m <= 0 || g->n <= 0 || g->batch <= 0 || ct_backend_gemm_takes(device, g->dtype))
        return ct_backend_gemm(device, g);
    if (g->dtype != CT_F16 && g->dtype != CT_BF16)
        return ct_error(CT_ERR_DTYPE, "%s: dtype %s has no matrix product (use float32, float64, "
                        "float16 or bfloat16)", function, ct_dtype_name(g->dtype));
    int64_t a_count = g->trans_a ? span(g->k, g->m, g->lda, g->batch, g->a_batch_stride)
                                 : span(g->m, g->k, g->lda, g->batch, g->a_batch_stride);
    int64_t b_count = g->trans_b ? span(g->n, g->k, g->ldb, g->batch, g->b_batch_stride)
                                 : span(g->k, g->n, g->ldb, g->batch, g->b_batch_stride);
    int64_t c_count = span(g->m, g->n, g->ldc, g->batch, g->c_batch_stride);
    /* Elements of C's span the product does not write (between rows or matrices) go through
     * float32 and back unchanged (exactly: float32 holds every 16-bit value), as do all of C
     * when the product adds beta C. */
    bool c_read = g->beta != 0.0 || c_count != (int64_t)g->batch * g->m * g->n;
    ct_tensor *a32 = float32_span(function, a, g->a_offset, a_count);
    ct_tensor *b32 = a32 ? float32_span(function, b, g->b_offset, b_count) : NULL;
    ct_tensor *c32 = NULL;
    if (b32)
        c32 = c_read ? float32_span(function, c, g->c_offset, c_count)
                     : ct_tensor_alloc(function, device, CT_F32, &c_count, 1);
    ct_status status = c32 ? CT_OK : ct_last_error();
    if (status == CT_OK) {
        ct_gemm_args wide = *g;
        wide.dtype = CT_F32;
        wide.a = ct_tensor_handle(a32);
        wide.b = ct_tensor_handle(b32);
        wide.c = ct_tensor_handle(c32);
        wide.a_offset = wide.b_offset = wide.c_offset = 0;
        status = ct_backend_gemm(device, &wide);
    }
    if (status == CT_OK) {
        ct_tensor *c_part = ct_tensor_view_of(c, 1, &c_count, (const int64_t[]){1}, g->c_offset);
        status = c_part ? ct_tensor_copy_into(c_part, c32) : ct_last_error();
        ct_release(c_part);
    }
    ct_release(c32);
    ct_release(b32);
    ct_release(a32);
    return status;
}
