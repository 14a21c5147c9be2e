/* Matrix products through oneDNN's matmul primitive: float32, and bfloat16 (float16 where oneDNN
 * has kernels) with float32 accumulation and the result rounded once (on AMX where the CPU has
 * it). A batch is one primitive over 3-D memory at the product's batch strides; a batch with a
 * stride of 0 (one matrix for all, or one C that every product adds into) runs matrix by matrix. */
#include <string.h>

#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "backend/cpu/onednn_engine.h"
#include "core/core_internal.h"

/* Everything a matmul primitive depends on; the pointers and offsets are not part of it. */
typedef struct matmul_key {
    int kind; /* 'M' */
    int dtype, threads;
    int trans_a, trans_b;
    long m, n, k, batch, lda, ldb, ldc, a_batch_stride, b_batch_stride, c_batch_stride;
    double alpha, beta;
} matmul_key;

typedef struct matmul_entry {
    dnnl_primitive_t primitive;
    dnnl_memory_t a, b, c;
} matmul_entry;

static void destroy_matmul(void *value)
{
    matmul_entry *e = value;
    if (!e) return;
    dnnl_memory_destroy(e->a);
    dnnl_memory_destroy(e->b);
    dnnl_memory_destroy(e->c);
    dnnl_primitive_destroy(e->primitive);
    free(e);
}

/* The memory of `rows` x `cols` matrices stored with leading dimension ld (transposed: stored as
 * cols x rows), `batch` of them batch_stride apart (never 0 for a batch: ct_onednn_gemm runs
 * those matrix by matrix). */
static ct_status matrix_md(dnnl_memory_desc_t *md, long batch, long batch_stride, long rows, long cols,
                           long ld, bool transposed, dnnl_data_type_t type)
{
    long row_stride = transposed ? 1 : ld, col_stride = transposed ? ld : 1;
    if (batch == 1) return ct_onednn_plain_md(md, 2, (dnnl_dims_t){rows, cols}, (dnnl_dims_t){row_stride, col_stride}, type);
    dnnl_dims_t dims = {batch, rows, cols};
    dnnl_dims_t strides = {batch_stride, row_stride, col_stride};
    return ct_onednn_plain_md(md, 3, dims, strides, type);
}

static ct_status make_matmul(const void *context, ct_onednn_entry *entry)
{
    const matmul_key *key = context;
    dnnl_data_type_t type;
    if (!ct_onednn_type(key->dtype, &type))
        return ct_error(CT_ERR_DTYPE, "cpu gemm: oneDNN has no product of %s", ct_dtype_name(key->dtype));
    dnnl_engine_t engine = ct_onednn_engine();
    if (!engine) return ct_last_error();
    dnnl_memory_desc_t a_md, b_md, c_md;
    ct_status status = matrix_md(&a_md, key->batch, key->a_batch_stride, key->m, key->k, key->lda,
                                 key->trans_a, type);
    if (status == CT_OK)
        status = matrix_md(&b_md, key->batch, key->b_batch_stride, key->k, key->n, key->ldb,
                           key->trans_b, type);
    if (status == CT_OK)
        status = matrix_md(&c_md, key->batch, key->c_batch_stride, key->m, key->n, key->ldc, false, type);
    if (status != CT_OK) return status;

    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post_ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    matmul_entry *e = calloc(1, sizeof *e);
    dnnl_status_t s = e ? dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md) : dnnl_out_of_memory;
    if (s == dnnl_success) s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success && key->alpha != 1.0) {
        float alpha = (float)key->alpha;
        s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
    }
    if (s == dnnl_success && key->beta != 0.0) {
        s = dnnl_post_ops_create(&post_ops);
        if (s == dnnl_success) s = dnnl_post_ops_append_sum(post_ops, (float)key->beta);
        if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, post_ops);
    }
    if (s == dnnl_success) s = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&e->primitive, pd);
    if (s == dnnl_success) s = dnnl_memory_create(&e->a, &a_md, engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success) s = dnnl_memory_create(&e->b, &b_md, engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success) s = dnnl_memory_create(&e->c, &c_md, engine, DNNL_MEMORY_NONE);
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(post_ops);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
        destroy_matmul(e);
        return ct_onednn_error(s, "to make a matrix product");
    }
    entry->value = e;
    entry->destroy = destroy_matmul;
    return CT_OK;
}

/* One primitive over the whole batch (or one matrix). */
static ct_status run(const ct_gemm_args *g, long a_offset, long b_offset, long c_offset, long batch)
{
    matmul_key key;
    memset(&key, 0, sizeof key);
    key.kind = 'M';
    key.dtype = (int)g->dtype;
    key.trans_a = g->trans_a;
    key.trans_b = g->trans_b;
    key.m = g->m;
    key.n = g->n;
    key.k = g->k;
    key.batch = batch;
    key.lda = g->lda;
    key.ldb = g->ldb;
    key.ldc = g->ldc;
    key.a_batch_stride = batch > 1 ? g->a_batch_stride : 0;
    key.b_batch_stride = batch > 1 ? g->b_batch_stride : 0;
    key.c_batch_stride = batch > 1 ? g->c_batch_stride : 0;
    key.alpha = g->alpha;
    key.beta = g->beta;
    int previous = ct_onednn_threads_for((int64_t)g->m * g->n * g->k * batch, CT_CPU_GEMM_PARALLEL_MIN_WORK);
    key.threads = ct_onednn_threads_now();
    const ct_onednn_entry *found = ct_onednn_lookup(&key, sizeof key, make_matmul, &key);
    ct_status status = found ? CT_OK : ct_last_error();
    if (found) {
        const matmul_entry *e = found->value;
        dnnl_memory_set_data_handle(e->a, ct_onednn_element(g->a, a_offset, g->dtype));
        dnnl_memory_set_data_handle(e->b, ct_onednn_element(g->b, b_offset, g->dtype));
        dnnl_memory_set_data_handle(e->c, ct_onednn_element(g->c, c_offset, g->dtype));
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
        status = ct_onednn_execute(e->primitive, 3, args, "in a matrix product");
    }
    ct_onednn_release();
    ct_onednn_threads_restore(previous);
    return status;
}

ct_status ct_onednn_gemm(const ct_gemm_args *g)
{
    if (g->batch == 1 || (g->a_batch_stride != 0 && g->b_batch_stride != 0 && g->c_batch_stride != 0))
        return run(g, g->a_offset, g->b_offset, g->c_offset, g->batch);
    /* Matrix by matrix: every matrix of the batch adds into the same C in turn (a C stride of 0),
     * or one operand is the same matrix for all (oneDNN 2.6 refused a broadcast batch of A). */
    for (long i = 0; i < g->batch; i++) {
        ct_status status = run(g, g->a_offset + i * g->a_batch_stride, g->b_offset + i * g->b_batch_stride,
                               g->c_offset + i * g->c_batch_stride, 1);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

ct_status ct_onednn_sgemm(const ct_gemm_args *g)
{
    for (long i = 0; i < g->batch; i++) {
        const float *a = (const float *)g->a + g->a_offset + i * g->a_batch_stride;
        const float *b = (const float *)g->b + g->b_offset + i * g->b_batch_stride;
        float *c = (float *)g->c + g->c_offset + i * g->c_batch_stride;
        dnnl_status_t status = dnnl_sgemm(g->trans_a ? 'T' : 'N', g->trans_b ? 'T' : 'N', g->m, g->n, g->k,
                                          (float)g->alpha, a, g->lda, b, g->ldb, (float)g->beta, c, g->ldc);
        if (status != dnnl_success) return ct_onednn_error(status, "in a matrix product (dnnl_sgemm)");
    }
    return CT_OK;
}

/* Whether oneDNN multiplies `type` here in hardware: bfloat16 where the CPU has AVX512-BF16 or
 * AMX (oneDNN 2.6 emulates it on plain AVX-512 at a fifth of its float32 speed, slower than
 * converting to float32; measured on a Xeon model 85: 7-15 against 50-64 GFLOP/s), float16 never
 * in oneDNN 2.6 (its AVX512-FP16 kernels came later). */
static bool has_kernel_for(dnnl_data_type_t type)
{
    if (type != dnnl_bf16) return false;
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) == (unsigned)dnnl_cpu_isa_avx512_core_bf16;
}

bool ct_onednn_gemm_takes(ct_dtype dtype)
{
    static _Atomic int answers[CT_DTYPE_COUNT]; /* 0 not asked yet, 1 yes, 2 no */
    dnnl_data_type_t type;
    if (!ct_onednn_type(dtype, &type)) return false;
    if (dtype == CT_F32) return true;
    if (answers[dtype] == 0) answers[dtype] = has_kernel_for(type) ? 1 : 2;
    return answers[dtype] == 1;
}
