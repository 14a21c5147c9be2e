/* The CPU's fused attention (FlashAttention-2 over the BLAS), shaped like PyTorch's CPU flash
 * attention (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp): a query block of BLOCK rows walks
 * the key blocks up to its causal limit; each tile's products are single-threaded sgemm calls
 * (S = scale q k^T, o += p v), the softmax between them an online one (running max and sum per
 * row, the log-sum-exp saved for the backward), its exp cpu_exp.h's vectorised one. The portable
 * kernels (kernels/attention.ct) compiled for the CPU ran at a quarter of PyTorch's speed; this
 * runs faster than PyTorch's (docs/cpu-peer-benchmark.md).
 *
 * Extra memory is linear in T: each thread holds two tiles of BLOCK x BLOCK floats and BLOCK
 * rows of accumulator. The forward parallelises over (batch * head, query block); the backward
 * gives each batch * head to one thread, which owns its dq, dk and dv and sums into them in a
 * fixed order: the same bits for any thread count. float32 only: float64 and the 16-bit dtypes
 * keep the portable kernels. */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/cpu_blas_workspace.h"
#include "backend/cpu/cpu_exp.h"
#include "core/core_internal.h"

/* Rows of a query block and of a key block. B = 8, H = 12, D = 64, causal, forward + backward
 * at T = 1024 on 2 cores of an AMD EPYC (Zen 3, AVX2; a busy machine), best of 4-6 calls:
 * 128 rows 8.6-9.4 seq/s, 64 rows 6.4-10.3 (and more CPU time in each of three alternating
 * runs), 256 rows 9.1. */
#define BLOCK 128
/* Lanes of the fixed-order row sums: a multiple of every vector width, so that the sum's
 * rounding does not follow the instruction set. */
#define LANES 16

#define NEG_INF (-(float)INFINITY)

static long min_long(long a, long b) { return a < b ? a : b; }
static long round_up(long a, long to) { return (a + to - 1) / to * to; }

bool ct_cpu_attention_takes(int index, const ct_attention_args *args)
{
    (void)index;
    const long limit = 1L << 30; /* the BLAS's int sizes, with room */
    return args->dtype == CT_F32 && args->tq < limit && args->tk < limit && args->d < limit &&
           args->dv < limit;
}

/* Keys of block [k0, k0 + nk) that query i sees. */
static long visible_keys(const ct_attention_args *a, long i, long k0, long nk)
{
    if (!a->causal) return nk;
    long seen = i - k0 + 1;
    return seen < 0 ? 0 : min_long(seen, nk);
}

/* Row maximum and fixed-order sums over LANES lanes; row[j] for visible <= j < round_up(nk,
 * LANES) must be 0 for the sum. NaN never wins the maximum (the comparison fails). */
static float row_max(const float *row, long visible, float start)
{
    float lanes[LANES];
    for (int u = 0; u < LANES; u++) lanes[u] = start;
    long j = 0;
    for (; j + LANES <= visible; j += LANES)
#pragma omp simd
        for (int u = 0; u < LANES; u++) lanes[u] = row[j + u] > lanes[u] ? row[j + u] : lanes[u];
    for (; j < visible; j++) lanes[0] = row[j] > lanes[0] ? row[j] : lanes[0];
    float m = lanes[0];
    for (int u = 1; u < LANES; u++) m = lanes[u] > m ? lanes[u] : m;
    return m;
}

static float row_sum(const float *row, long padded)
{
    float lanes[LANES] = {0};
    for (long j = 0; j < padded; j += LANES)
#pragma omp simd
        for (int u = 0; u < LANES; u++) lanes[u] += row[j + u];
    float s = 0;
    for (int u = 0; u < LANES; u++) s += lanes[u];
    return s;
}

/* One query block of one (batch * head): out and lse rows [q0, q0 + nq). s is BLOCK x BLOCK
 * scratch, acc BLOCK x dv, top and total BLOCK. */
static void forward_block(const ct_attention_args *a, long bh, long q0, float *s, float *acc,
                          float *top, float *total)
{
    long tq = a->tq, tk = a->tk, d = a->d, dv = a->dv;
    const float *q = (const float *)a->q + a->q_offset + bh * tq * d;
    const float *k = (const float *)a->k + a->k_offset + bh * tk * d;
    const float *v = (const float *)a->v + a->v_offset + bh * tk * dv;
    float *out = (float *)a->out + a->out_offset + bh * tq * dv;
    float *lse = (float *)a->lse + a->lse_offset + bh * tq;
    long nq = min_long(BLOCK, tq - q0);
    long kend = a->causal ? min_long(tk, q0 + nq) : tk;
    for (long r = 0; r < nq; r++) {
        top[r] = NEG_INF;
        total[r] = 0;
    }
    memset(acc, 0, sizeof(float) * (size_t)(nq * dv));
    for (long k0 = 0; k0 < kend; k0 += BLOCK) {
        long nk = min_long(BLOCK, kend - k0), padded = round_up(nk, LANES);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)d,
                    (float)a->scale, q + q0 * d, (int)d, k + k0 * d, (int)d, 0.0f, s, BLOCK);
        for (long r = 0; r < nq; r++) {
            float *row = s + r * BLOCK;
            long visible = visible_keys(a, q0 + r, k0, nk);
            float m = row_max(row, visible, top[r]);
            if (m == NEG_INF) { /* nothing seen yet: the row's accumulator stays 0 */
                memset(row, 0, sizeof(float) * (size_t)padded);
                continue;
            }
#pragma omp simd
            for (long j = 0; j < visible; j++) row[j] = ct_cpu_expf(row[j] - m);
            for (long j = visible; j < padded; j++) row[j] = 0;
            float shrink = ct_cpu_expf(top[r] - m);
            total[r] = total[r] * shrink + row_sum(row, padded);
            top[r] = m;
            if (shrink != 1.0f) {
                float *o = acc + r * dv;
#pragma omp simd
                for (long c = 0; c < dv; c++) o[c] *= shrink;
            }
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)dv, (int)nk, 1.0f, s,
                    BLOCK, v + k0 * dv, (int)dv, 1.0f, acc, (int)dv);
    }
    for (long r = 0; r < nq; r++) {
        long i = q0 + r;
        /* a row that sees no key gives 0, as PyTorch's safe softmax */
        float inverse = top[r] == NEG_INF ? 0.0f : 1.0f / total[r];
        const float *o = acc + r * dv;
#pragma omp simd
        for (long c = 0; c < dv; c++) out[i * dv + c] = o[c] * inverse;
        lse[i] = top[r] + logf(total[r]);
    }
}

/* The whole backward of one (batch * head), on one thread. s and ds are BLOCK x BLOCK scratch. */
static void backward_head(const ct_attention_args *a, long bh, float *s, float *ds)
{
    long tq = a->tq, tk = a->tk, d = a->d, dv = a->dv;
    const float *q = (const float *)a->q + a->q_offset + bh * tq * d;
    const float *k = (const float *)a->k + a->k_offset + bh * tk * d;
    const float *v = (const float *)a->v + a->v_offset + bh * tk * dv;
    const float *go = (const float *)a->dout + a->dout_offset + bh * tq * dv;
    const float *lse = (const float *)a->lse + a->lse_offset + bh * tq;
    const float *delta = (const float *)a->delta + a->delta_offset + bh * tq;
    float *dq = (float *)a->dq + a->dq_offset + bh * tq * d;
    float *dk = (float *)a->dk + a->dk_offset + bh * tk * d;
    float *dvg = (float *)a->dv_grad + a->dv_grad_offset + bh * tk * dv;
    memset(dq, 0, sizeof(float) * (size_t)(tq * d));
    memset(dk, 0, sizeof(float) * (size_t)(tk * d));
    memset(dvg, 0, sizeof(float) * (size_t)(tk * dv));
    float scale = (float)a->scale;
    for (long q0 = 0; q0 < tq; q0 += BLOCK) {
        long nq = min_long(BLOCK, tq - q0);
        long kend = a->causal ? min_long(tk, q0 + nq) : tk;
        for (long k0 = 0; k0 < kend; k0 += BLOCK) {
            long nk = min_long(BLOCK, kend - k0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)d, scale,
                        q + q0 * d, (int)d, k + k0 * d, (int)d, 0.0f, s, BLOCK);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)dv, 1.0f,
                        go + q0 * dv, (int)dv, v + k0 * dv, (int)dv, 0.0f, ds, BLOCK);
            for (long r = 0; r < nq; r++) {
                float *p = s + r * BLOCK, *dp = ds + r * BLOCK;
                long visible = visible_keys(a, q0 + r, k0, nk);
                float l = lse[q0 + r], e = delta[q0 + r];
#pragma omp simd
                for (long j = 0; j < visible; j++) {
                    float pj = ct_cpu_expf(p[j] - l);
                    p[j] = pj;
                    dp[j] = pj * (dp[j] - e);
                }
                for (long j = visible; j < nk; j++) {
                    p[j] = 0;
                    dp[j] = 0;
                }
            }
            /* dv += p^T dout; dq += scale ds k; dk += scale ds^T q */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)dv, (int)nq, 1.0f, s,
                        BLOCK, go + q0 * dv, (int)dv, 1.0f, dvg + k0 * dv, (int)dv);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)d, (int)nk, scale,
                        ds, BLOCK, k + k0 * d, (int)d, 1.0f, dq + q0 * d, (int)d);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)d, (int)nq, scale, ds,
                        BLOCK, q + q0 * d, (int)d, 1.0f, dk + k0 * d, (int)d);
        }
    }
}

ct_status ct_cpu_attention(int index, void *stream, const ct_attention_args *a)
{
    (void)stream;
    if (!ct_cpu_attention_takes(index, a))
        return ct_error(CT_ERR_INTERNAL, "cpu attention: no fused attention for %s of these sizes",
                        ct_dtype_name(a->dtype));
    bool forward = a->pass == CT_ATTENTION_FORWARD;
    long acc_columns = a->dv > BLOCK ? a->dv : BLOCK;
    size_t per_thread = (size_t)(2 * BLOCK * BLOCK + BLOCK * acc_columns + 2 * BLOCK);
    int threads = omp_get_max_threads();
    long tasks = forward ? a->bh * ((a->tq + BLOCK - 1) / BLOCK) : a->bh;
    if (threads > tasks) threads = (int)(tasks > 0 ? tasks : 1);
    float *scratch = malloc(sizeof(float) * per_thread * (size_t)threads);
    if (!scratch)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "cpu attention: no host memory for %d threads' "
                        "tiles (%zu bytes)", threads, sizeof(float) * per_thread * (size_t)threads);
    ct_status status = ct_cpu_blas_workspace_enter();
    if (status != CT_OK) {
        free(scratch);
        return status;
    }
    ct_cpu_blas_threads_for(1); /* each tile's product on the thread that asks for it */
    long blocks = (a->tq + BLOCK - 1) / BLOCK;
#pragma omp parallel num_threads(threads)
    {
        float *mine = scratch + per_thread * (size_t)omp_get_thread_num();
        float *s = mine, *second = mine + BLOCK * BLOCK, *acc = second;
        float *top = acc + BLOCK * acc_columns, *total = top + BLOCK;
        if (forward) {
#pragma omp for schedule(dynamic, 1)
            for (long t = 0; t < tasks; t++) {
                /* the causal blocks late in a sequence cost most: hand them out first */
                long bh = t % a->bh, block = blocks - 1 - t / a->bh;
                forward_block(a, bh, block * BLOCK, s, acc, top, total);
            }
        } else {
#pragma omp for schedule(dynamic, 1)
            for (long bh = 0; bh < tasks; bh++) backward_head(a, bh, s, second);
        }
    }
    ct_cpu_blas_workspace_leave();
    free(scratch);
    return CT_OK;
}
