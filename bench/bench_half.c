/* 16-bit dtypes on --device: matmul of bfloat16 and float16 square matrices (matmul_bf16_N,
 * matmul_f16_N, in GFLOP/s), and conversion of 16M elements between float32 and each 16-bit
 * dtype (convert_f32_to_bf16_16M and the others, in GB/s counting the bytes read and written).
 *
 * Baselines on the CPU, in the same run: for matmul, OpenBLAS's own cblas_sbgemm/cblas_shgemm on
 * the same 16-bit matrices where the OpenBLAS in use has them (looked up at run time, as ctorch
 * does: src/backend/cpu/cpu_blas_half.c), else cblas_sgemm on float32 copies, the fastest
 * product OpenBLAS then has, and the row's target says "vs sgemm"; for conversion, a plain
 * OpenMP loop doing the same rounding (nearest even, as bits) from ctorch's input into the block
 * ctorch's output takes, as bench_elementwise.c's loops do. Elsewhere the figures alone
 * (bench/torch_bench.py gives PyTorch's under the same names). 8192 only where
 * ct_bench_big_sizes says so. */
#include <cblas.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"


typedef void (*half_gemm_fn)(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
                             enum CBLAS_TRANSPOSE trans_b, blasint m, blasint n, blasint k, float alpha,
                             const uint16_t *a, blasint lda, const uint16_t *b, blasint ldb,
                             float beta, float *c, blasint ldc);

typedef struct matmul_case {
    ct_bench_matmul_case m;  /* first: the context of ct_bench_run_matmul and ct_bench_run_sgemm too */
    half_gemm_fn half_gemm;  /* OpenBLAS's 16-bit product, or NULL: sgemm on float32 copies */
    const uint16_t *ha, *hb; /* the 16-bit operands (ctorch's memory) */
} matmul_case;

static void run_openblas(void *context)
{
    matmul_case *c = context;
    int n = c->m.n;
    if (c->half_gemm)
        c->half_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, c->ha, n, c->hb, n, 0.0f,
                     c->m.rc, n);
    else
        ct_bench_run_sgemm(&c->m);
}

static bool setup_matmul(matmul_case *hc, ct_dtype dtype, ct_device device)
{
    ct_bench_matmul_case *c = &hc->m;
    int64_t shape[2] = {c->n, c->n};
    ct_manual_seed(0);
    ct_tensor *a = ct_randn(shape, 2, CT_F32, device), *b = ct_randn(shape, 2, CT_F32, device);
    c->a = ct_to_dtype(a, dtype);
    c->b = ct_to_dtype(b, dtype);
    bool ok = c->a && c->b;
    if (ok && device.type == CT_CPU) {
        size_t bytes = (size_t)c->n * (size_t)c->n * sizeof(float);
        hc->half_gemm = (half_gemm_fn)dlsym(RTLD_DEFAULT, dtype == CT_BF16 ? "cblas_sbgemm" : "cblas_shgemm");
        hc->ha = (const uint16_t *)ct_data_ptr(c->a);
        hc->hb = (const uint16_t *)ct_data_ptr(c->b);
        c->rc = aligned_alloc(4096, bytes);
        if (!hc->half_gemm) {
            c->ra = aligned_alloc(4096, bytes);
            c->rb = aligned_alloc(4096, bytes);
            ok = c->ra && c->rb && ct_tensor_to_array(a, c->ra, bytes) == CT_OK &&
                 ct_tensor_to_array(b, c->rb, bytes) == CT_OK;
        }
        ok = ok && c->rc;
    }
    ct_release(a);
    ct_release(b);
    return ok;
}

static void bench_matmul(const char *filter, ct_bench_report report, void *context, ct_device device)
{
    static const int sizes[] = {1024, 2048, 8192};
    static const ct_dtype dtypes[] = {CT_BF16, CT_F16};
    bool cpu = device.type == CT_CPU;
    for (size_t d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            ct_bench_result r = {.unit = "GFLOP/s"};
            snprintf(r.name, sizeof r.name, "matmul_%s_%d", dtypes[d] == CT_BF16 ? "bf16" : "f16", sizes[s]);
            ct_bench_set_device(&r, device);
            if (!ct_bench_selected(filter, r.name) || (sizes[s] > 2048 && !ct_bench_big_sizes(device)))
                continue;
            int n = sizes[s];
            matmul_case c = {.m.n = n};
            if (!setup_matmul(&c, dtypes[d], device)) {
                fprintf(stderr, "bench %s: setup failed: %s\n", r.name, ct_last_error_message());
            } else {
                int repeats = n <= 1024 ? 10 : (n <= 2048 ? 4 : 3);
                ct_bench_compare_synced(&r, ct_bench_run_matmul, cpu ? run_openblas : NULL, &c, device,
                                        n > 2048 ? 1 : 2, repeats, 2.0 * n * (double)n * n * 1e-9, 0.9);
                if (cpu && !c.half_gemm)
                    snprintf(r.target, sizeof r.target, "ratio >= 0.90 vs sgemm");
                report(&r, context);
            }
            ct_bench_matmul_case_free(&c.m);
        }
}

/* ---- conversion ---- */

#define M16 (16L * 1024 * 1024)

typedef struct convert_case {
    ct_dtype from, to;
    ct_tensor *in;
    const void *rin; /* ctorch's input and the block its output takes */
    void *rout;
} convert_case;

static inline uint16_t float_to_bf16(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40);
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

static inline float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* float16 through the compiler's _Float16: IEEE's conversion, nearest even (F16C's instructions
 * where the target has them). */
static inline uint16_t float_to_f16(float value)
{
    _Float16 h = (_Float16)value;
    uint16_t bits;
    memcpy(&bits, &h, sizeof bits);
    return bits;
}

static inline float f16_to_float(uint16_t bits)
{
    _Float16 h;
    memcpy(&h, &bits, sizeof h);
    return (float)h;
}

static void run_ctorch_convert(void *context)
{
    convert_case *c = context;
    ct_release(ct_to_dtype(c->in, c->to));
}

static void run_loop_convert(void *context)
{
    convert_case *c = context;
    if (c->from == CT_F32) {
        const float *restrict in = c->rin;
        uint16_t *restrict out = c->rout;
        if (c->to == CT_BF16) {
#pragma omp parallel for simd schedule(static)
            for (long i = 0; i < M16; i++) out[i] = float_to_bf16(in[i]);
        } else {
#pragma omp parallel for simd schedule(static)
            for (long i = 0; i < M16; i++) out[i] = float_to_f16(in[i]);
        }
    } else {
        const uint16_t *restrict in = c->rin;
        float *restrict out = c->rout;
        if (c->from == CT_BF16) {
#pragma omp parallel for simd schedule(static)
            for (long i = 0; i < M16; i++) out[i] = bf16_to_float(in[i]);
        } else {
#pragma omp parallel for simd schedule(static)
            for (long i = 0; i < M16; i++) out[i] = f16_to_float(in[i]);
        }
    }
}

static void bench_convert(const char *filter, ct_bench_report report, void *context, ct_device device)
{
    static const ct_dtype pairs[4][2] = {{CT_F32, CT_BF16}, {CT_BF16, CT_F32}, {CT_F32, CT_F16}, {CT_F16, CT_F32}};
    bool cpu = device.type == CT_CPU;
    for (int p = 0; p < 4; p++) {
        convert_case c = {.from = pairs[p][0], .to = pairs[p][1]};
        ct_bench_result r = {.unit = "GB/s"};
        snprintf(r.name, sizeof r.name, "convert_%s_to_%s_16M", c.from == CT_F32 ? "f32" : c.from == CT_F16 ? "f16" : "bf16",
                 c.to == CT_F32 ? "f32" : c.to == CT_F16 ? "f16" : "bf16");
        ct_bench_set_device(&r, device);
        if (!ct_bench_selected(filter, r.name)) continue;
        int64_t shape[1] = {M16};
        ct_manual_seed(0);
        ct_tensor *draw = ct_randn(shape, 1, CT_F32, device);
        c.in = draw ? ct_to_dtype(draw, c.from) : NULL;
        ct_release(draw);
        /* One call: its output's block is the one later calls take and where the loop writes. */
        ct_tensor *out = c.in ? ct_to_dtype(c.in, c.to) : NULL;
        if (!out) {
            fprintf(stderr, "bench %s: setup failed: %s\n", r.name, ct_last_error_message());
            ct_release(c.in);
            continue;
        }
        c.rin = (const char *)ct_data_ptr(c.in);
        c.rout = (char *)ct_data_ptr(out);
        ct_release(out);
        double bytes = (double)M16 * (double)(ct_dtype_size(c.from) + ct_dtype_size(c.to));
        ct_bench_compare_synced(&r, run_ctorch_convert, cpu ? run_loop_convert : NULL, &c, device, 3,
                                30, bytes * 1e-9, 0.8);
        report(&r, context);
        ct_release(c.in);
    }
}

void ct_bench_half(const char *filter, ct_bench_report report, void *context)
{
    ct_device device = ct_bench_config_get()->device;
    bench_matmul(filter, report, context, device);
    bench_convert(filter, report, context, device);
}
