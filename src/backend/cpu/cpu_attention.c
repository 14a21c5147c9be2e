/* The CPU's fused attention (FlashAttention-2 over the BLAS), shaped like PyTorch's CPU flash
 * attention (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp): a query block of QBLOCK rows
 * walks the key blocks up to its causal limit; each tile's products are single-threaded sgemm
 * calls (S = scale q k^T, o += p v; oneDNN's or OpenBLAS's, below), the softmax between them an
 * online one (running max and sum per row, the log-sum-exp saved for the backward), its exp
 * kernels/plain_math.h's vectorised one. The portable
 * kernels (kernels/attention.ct) compiled for the CPU ran at a quarter of PyTorch's speed; this
 * runs faster than PyTorch's (docs/cpu-peer-benchmark.md).
 *
 * Extra memory is linear in T: each thread holds two tiles of QBLOCK x KBLOCK and QBLOCK rows
 * of accumulator. The forward parallelises over (batch * head, query block); the backward
 * gives each batch * head to one thread, which owns its dq, dk and dv and sums into them in a
 * fixed order: the same bits for any thread count. float32 and float64 (dgemm, libm's exp); the
 * 16-bit dtypes keep the portable kernels. */
#include <cblas.h>
#include <omp.h>
#include <stdatomic.h>
#ifdef CTORCH_HAVE_ONEDNN
#include <dnnl.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/cpu_blas_workspace.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "kernels/plain_math.h"
#include "core/core_internal.h"

/* Rows of a query block and of a key block. B = 8, H = 12, D = 64, causal, forward + backward
 * at T = 1024 on 2 cores of an AMD EPYC (Zen 3, AVX2; a busy machine), best of 4-6 calls:
 * 128 rows 8.6-9.4 seq/s, 64 rows 6.4-10.3 (and more CPU time in each of three alternating
 * runs), 256 rows 9.1. Query x key blocks of 128 x 512, 256 x 512 and 64 x 512 (PyTorch's
 * kv split for long sequences is 512) were within the noise of 128 x 128, one thread, T 1024
 * and 4096. KBLOCK must be a multiple of LANES. */
#define QBLOCK 128
#define KBLOCK 128
/* Lanes of the fixed-order row sums: a multiple of every vector width, so that the sum's
 * rounding does not follow the instruction set. */
#define LANES 16

static long min_long(long a, long b) { return a < b ? a : b; }
static long round_up(long a, long to) { return (a + to - 1) / to * to; }

bool ct_cpu_attention_takes(int index, const ct_attention_args *args)
{
    (void)index;
    const long limit = 1L << 30; /* the BLAS's int sizes, with room */
    const ct_attention_layout *rows[8] = {&args->q_at, &args->k_at, &args->v_at, &args->out_at,
                                          &args->dout_at, &args->dq_at, &args->dk_at, &args->dv_at};
    for (int i = 0; i < 8; i++)
        if (rows[i]->row >= limit) return false;
    return (args->dtype == CT_F32 || args->dtype == CT_F64) && args->tq < limit &&
           args->tk < limit && args->d < limit && args->dv < limit && args->heads >= 1;
}

/* Where the matrix of (batch * head) bh of an operand laid out as `at` starts. */
static long matrix_at(const ct_attention_args *a, ct_attention_layout at, long bh)
{
    return bh / a->heads * at.batch + bh % a->heads * at.head;
}

/* Keys of block [k0, k0 + nk) that query i sees. */
static long visible_keys(const ct_attention_args *a, long i, long k0, long nk)
{
    if (!a->causal) return nk;
    long seen = i - k0 + 1;
    return seen < 0 ? 0 : min_long(seen, nk);
}

/* float32 tiles go to oneDNN's dnnl_sgemm where the CPU's engine choice lets oneDNN multiply
 * (cpu_engine_choice.c; on one thread inside the OpenMP loop), to OpenBLAS otherwise: 5-25%
 * more sequences per second with oneDNN (2 cores of an AMD EPYC, Zen 3: B 8, T 1024, 2 threads
 * 10.3-10.5 against 8.3-9.2 seq/s; B 1, T 4096, one thread 0.57-0.67 against 0.53-0.57). Set per
 * call, one value for the whole process (the engine choice is the process's). */
static _Atomic bool tiles_in_onednn;

static void tile_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n,
                       int k, float alpha, const float *a, int lda, const float *b, int ldb,
                       float beta, float *c, int ldc)
{
#ifdef CTORCH_HAVE_ONEDNN
    if (atomic_load_explicit(&tiles_in_onednn, memory_order_relaxed)) {
        /* row-major, as cblas with CblasRowMajor; it fails only on bad sizes, which these are not */
        (void)dnnl_sgemm(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', m, n, k, alpha,
                         a, lda, b, ldb, beta, c, ldc);
        return;
    }
#endif
    cblas_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#define REAL float
#define NAME(x) x##_f32
#define GEMM tile_sgemm
#define EXP ct_plain_expf
#define LOG logf
#include "backend/cpu/cpu_attention_tiles.h"
#undef REAL
#undef NAME
#undef GEMM
#undef EXP
#undef LOG

/* float64 takes libm's exp, a call per element: its loops stay scalar (as PyTorch's CPU flash
 * attention has no vectorised double exp either). */
#define REAL double
#define NAME(x) x##_f64
#define GEMM cblas_dgemm
#define EXP exp
#define LOG log
#include "backend/cpu/cpu_attention_tiles.h"
#undef REAL
#undef NAME
#undef GEMM
#undef EXP
#undef LOG

ct_status ct_cpu_attention(int index, void *stream, const ct_attention_args *a)
{
    (void)stream;
    if (!ct_cpu_attention_takes(index, a))
        return ct_error(CT_ERR_INTERNAL, "cpu attention: no fused attention for %s of these sizes",
                        ct_dtype_name(a->dtype));
    bool forward = a->pass == CT_ATTENTION_FORWARD, wide = a->dtype == CT_F64;
    long wide_side = a->dv > KBLOCK ? a->dv : KBLOCK; /* the forward's accumulator, the backward's ds */
    size_t per_thread = (size_t)(QBLOCK * KBLOCK + QBLOCK * wide_side + 2 * QBLOCK);
    size_t element = wide ? sizeof(double) : sizeof(float);
    int threads = omp_get_max_threads();
    long blocks = (a->tq + QBLOCK - 1) / QBLOCK;
    long tasks = forward ? a->bh * blocks : a->bh;
    if (threads > tasks) threads = (int)(tasks > 0 ? tasks : 1);
    char *scratch = malloc(element * per_thread * (size_t)threads);
    if (!scratch)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "cpu attention: no host memory for %d threads' "
                        "tiles (%zu bytes)", threads, element * per_thread * (size_t)threads);
    ct_status status = ct_cpu_blas_workspace_enter();
    if (status != CT_OK) {
        free(scratch);
        return status;
    }
    ct_cpu_blas_threads_for(1); /* each tile's product on the thread that asks for it */
    atomic_store_explicit(&tiles_in_onednn, ct_cpu_onednn_multiplies(CT_F32), memory_order_relaxed);
#pragma omp parallel num_threads(threads)
    {
        char *mine = scratch + element * per_thread * (size_t)omp_get_thread_num();
        /* the tiles: s, then a second one (the backward's ds, the forward's accumulator), then
         * the forward's running max and sum per row */
        size_t second = QBLOCK * KBLOCK, top = second + (size_t)(QBLOCK * wide_side), total = top + QBLOCK;
        if (forward) {
#pragma omp for schedule(dynamic, 1)
            for (long t = 0; t < tasks; t++) {
                /* the causal blocks late in a sequence cost most: hand them out first */
                long bh = t % a->bh, q0 = (blocks - 1 - t / a->bh) * QBLOCK;
                if (wide) {
                    double *m = (double *)mine;
                    forward_block_f64(a, bh, q0, m, m + second, m + top, m + total);
                } else {
                    float *m = (float *)mine;
                    forward_block_f32(a, bh, q0, m, m + second, m + top, m + total);
                }
            }
        } else {
#pragma omp for schedule(dynamic, 1)
            for (long bh = 0; bh < tasks; bh++) {
                if (wide) backward_head_f64(a, bh, (double *)mine, (double *)mine + second);
                else backward_head_f32(a, bh, (float *)mine, (float *)mine + second);
            }
        }
    }
    ct_cpu_blas_workspace_leave();
    free(scratch);
    return CT_OK;
}
