/* The memory-bound ops on --device (the CPU by default), in GB/s counting the bytes read and
 * written: add, mul, exp, sum and max of 16M float32 (and of 256M where ct_bench_big_sizes says
 * so), sum over dim 0 and over dim 1 of [4096, 4096], softmax over dim 1 and cross-entropy of
 * [4096, 1000]. bench/torch_bench.py measures the same cases on PyTorch, under the same names.
 *
 * Baselines: on the CPU a plain OpenMP loop doing the same work over the same memory: it reads
 * ctorch's input tensors and writes the block ctorch's output takes (the caching allocator hands
 * the op the same block each call), because on a shared machine two sets of buffers can stream at
 * speeds 20% apart, depending on where their pages landed, which a ratio between them would
 * measure instead of ctorch. On another device, a device-to-device copy (ct_copy_) that moves as
 * many bytes, the bus's own speed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"


#define M16 (16L * 1024 * 1024)
#define M256 (256L * 1024 * 1024)

typedef enum op_kind { ADD, MUL, EXP, SUM, MAX, SUM_DIM0, SUM_DIM1, SOFTMAX, CROSS_ENTROPY } op_kind;

typedef struct op_case {
    const char *name;
    op_kind op;
    int64_t rows, cols; /* cols 0: a vector of rows elements */
    bool big;
} op_case;

static const op_case cases[] = {
    {"add_f32_16M", ADD, M16, 0, false},
    {"mul_f32_16M", MUL, M16, 0, false},
    {"exp_f32_16M", EXP, M16, 0, false},
    {"sum_f32_16M", SUM, M16, 0, false},
    {"max_f32_16M", MAX, M16, 0, false},
    {"sum_dim0_f32_4096x4096", SUM_DIM0, 4096, 4096, false},
    {"sum_dim1_f32_4096x4096", SUM_DIM1, 4096, 4096, false},
    {"softmax_f32_4096x1000", SOFTMAX, 4096, 1000, false},
    {"cross_entropy_f32_4096x1000", CROSS_ENTROPY, 4096, 1000, false},
    {"add_f32_256M", ADD, M256, 0, true},
    {"mul_f32_256M", MUL, M256, 0, true},
    {"exp_f32_256M", EXP, M256, 0, true},
    {"sum_f32_256M", SUM, M256, 0, true},
    {"max_f32_256M", MAX, M256, 0, true},
};

/* Bytes read and written by one call (the formula bench/torch_bench.py uses too). */
static double bytes_moved(const op_case *c)
{
    double n = (double)c->rows * (double)(c->cols ? c->cols : 1), f = sizeof(float);
    switch (c->op) {
    case ADD: case MUL: return 3 * n * f;
    case EXP: case SOFTMAX: return 2 * n * f;
    case SUM: case MAX: return n * f + f;
    case SUM_DIM0: return n * f + (double)c->cols * f;
    case SUM_DIM1: return n * f + (double)c->rows * f;
    case CROSS_ENTROPY: return n * f + (double)c->rows * sizeof(int64_t) + f;
    }
    return 0;
}

typedef struct op_run {
    const op_case *c;
    ct_tensor *a, *b, *target;       /* on the device */
    ct_tensor *copy_src, *copy_dst;  /* the device baseline: as many bytes moved by a copy */
    float *ra, *rb, *rout;           /* the CPU baseline's arrays: ctorch's memory */
    const int64_t *rtarget;
    volatile float sink;
    bool failed;
} op_run;

static ct_tensor *run_op(op_run *r)
{
    ct_tensor *out = NULL;
    int dim0[1] = {0}, dim1[1] = {1};
    switch (r->c->op) {
    case ADD: out = ct_add(r->a, r->b); break;
    case MUL: out = ct_mul(r->a, r->b); break;
    case EXP: out = ct_exp(r->a); break;
    case SUM: out = ct_sum(r->a, NULL, 0, false); break;
    case MAX: out = ct_max(r->a, NULL, 0, false); break;
    case SUM_DIM0: out = ct_sum(r->a, dim0, 1, false); break;
    case SUM_DIM1: out = ct_sum(r->a, dim1, 1, false); break;
    case SOFTMAX: out = ct_softmax(r->a, 1); break;
    case CROSS_ENTROPY: out = ct_cross_entropy(r->a, r->target, 0.0); break;
    }
    return out;
}

static void run_ctorch(void *context)
{
    op_run *r = context;
    ct_tensor *out = run_op(r);
    if (!out && !r->failed) {
        fprintf(stderr, "bench %s: %s\n", r->c->name, ct_last_error_message());
        r->failed = true;
    }
    ct_release(out);
}

static void run_device_copy(void *context)
{
    op_run *r = context;
    ct_copy_(r->copy_dst, r->copy_src);
}

/* The CPU baselines: what each op computes, as plain loops. */
static void run_loop(void *context)
{
    op_run *r = context;
    const float *restrict a = r->ra, *restrict b = r->rb;
    float *restrict out = r->rout;
    const long rows = (long)r->c->rows, cols = (long)r->c->cols, n = rows * (cols ? cols : 1);
    switch (r->c->op) {
    case ADD:
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
        break;
    case MUL:
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) out[i] = a[i] * b[i];
        break;
    case EXP:
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) out[i] = expf(a[i]);
        break;
    case SUM: {
        float sum = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
        for (long i = 0; i < n; i++) sum += a[i];
        r->sink = sum;
        break;
    }
    case MAX: {
        float max = -INFINITY;
#pragma omp parallel for simd schedule(static) reduction(max : max)
        for (long i = 0; i < n; i++) max = a[i] > max ? a[i] : max;
        r->sink = max;
        break;
    }
    case SUM_DIM0:
        /* Each thread a band of columns, walking the rows. */
#pragma omp parallel for schedule(static)
        for (long j0 = 0; j0 < cols; j0 += 256) {
            long j1 = j0 + 256 < cols ? j0 + 256 : cols;
            for (long j = j0; j < j1; j++) out[j] = 0.0f;
            for (long i = 0; i < rows; i++)
#pragma omp simd
                for (long j = j0; j < j1; j++) out[j] += a[i * cols + j];
        }
        break;
    case SUM_DIM1:
#pragma omp parallel for schedule(static)
        for (long i = 0; i < rows; i++) {
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (long j = 0; j < cols; j++) sum += a[i * cols + j];
            out[i] = sum;
        }
        break;
    case SOFTMAX:
#pragma omp parallel for schedule(static)
        for (long i = 0; i < rows; i++) {
            const float *x = a + i * cols;
            float *y = out + i * cols, max = -INFINITY, sum = 0.0f;
#pragma omp simd reduction(max : max)
            for (long j = 0; j < cols; j++) max = x[j] > max ? x[j] : max;
#pragma omp simd reduction(+ : sum)
            for (long j = 0; j < cols; j++) sum += y[j] = expf(x[j] - max);
            float scale = 1.0f / sum;
#pragma omp simd
            for (long j = 0; j < cols; j++) y[j] *= scale;
        }
        break;
    case CROSS_ENTROPY: {
        double loss = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : loss)
        for (long i = 0; i < rows; i++) {
            const float *x = a + i * cols;
            float max = -INFINITY, sum = 0.0f;
#pragma omp simd reduction(max : max)
            for (long j = 0; j < cols; j++) max = x[j] > max ? x[j] : max;
#pragma omp simd reduction(+ : sum)
            for (long j = 0; j < cols; j++) sum += expf(x[j] - max);
            loss += (double)(logf(sum) + max - x[r->rtarget[i]]);
        }
        r->sink = (float)(loss / (double)rows);
        break;
    }
    }
}

static void free_run(op_run *r)
{
    ct_release(r->a);
    ct_release(r->b);
    ct_release(r->target);
    ct_release(r->copy_src);
    ct_release(r->copy_dst);
    memset(r, 0, sizeof *r);
}

static bool setup(op_run *r, const op_case *c, ct_device device)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    int64_t shape[2] = {c->rows, c->cols};
    int ndim = c->cols ? 2 : 1;
    int64_t n = c->rows * (c->cols ? c->cols : 1);
    ct_manual_seed(1);
    r->a = c->op == CROSS_ENTROPY || c->op == SOFTMAX ? ct_randn(shape, ndim, CT_F32, device)
                                                     : ct_rand(shape, ndim, CT_F32, device);
    if (!r->a) return false;
    if (c->op == ADD || c->op == MUL) {
        r->b = ct_rand(shape, ndim, CT_F32, device);
        if (!r->b) return false;
    }
    if (c->op == CROSS_ENTROPY) {
        int64_t target_shape[1] = {c->rows};
        r->target = ct_randint(0, c->cols, target_shape, 1, CT_I64, device);
        if (!r->target) return false;
    }
    if (device.type != CT_CPU) {
        int64_t copy_shape[1] = {(int64_t)(bytes_moved(c) / 2 / sizeof(float))};
        r->copy_src = ct_zeros(copy_shape, 1, CT_F32, device);
        r->copy_dst = ct_zeros(copy_shape, 1, CT_F32, device);
        return r->copy_src && r->copy_dst;
    }
    (void)n;
    r->ra = (float *)ct_data_ptr(r->a);
    if (r->b) r->rb = (float *)ct_data_ptr(r->b);
    if (r->target) r->rtarget = (const int64_t *)ct_data_ptr(r->target);
    /* One call of the op: its output's block, back in the cache when released, is the one the
     * op's later calls take (the pools are last in, first out) and where the loop writes, the
     * block free between calls. The call also warms the cache, as the loop's first touch. */
    ct_tensor *out = run_op(r);
    if (!out) return false;
    r->rout = (float *)ct_data_ptr(out);
    ct_release(out);
    return true;
}

void ct_bench_elementwise(const char *filter, ct_bench_report report, void *context)
{
    ct_device device = ct_bench_config_get()->device;
    bool big, any = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) any |= ct_bench_selected(filter, cases[i].name);
    if (!any) return;
    big = ct_bench_big_sizes(device);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const op_case *c = &cases[i];
        if (!ct_bench_selected(filter, c->name) || (c->big && !big)) continue;
        op_run run;
        ct_bench_result r = {.unit = "GB/s"};
        snprintf(r.name, sizeof r.name, "%s", c->name);
        ct_bench_set_device(&r, device);
        if (!setup(&run, c, device)) {
            fprintf(stderr, "bench %s: setup failed: %s\n", c->name, ct_last_error_message());
        } else {
            bool cpu = device.type == CT_CPU;
            ct_bench_compare_synced(&r, run_ctorch, cpu ? run_loop : run_device_copy, &run, device, 3,
                                    c->big ? 10 : 30, bytes_moved(c) * 1e-9, cpu ? 0.8 : 0.0);
            if (!cpu) snprintf(r.target, sizeof r.target, "report");
            if (run.failed) {
                r.value = r.ratio = 0.0;
                r.met = false;
            }
            report(&r, context);
        }
        free_run(&run);
    }
}
