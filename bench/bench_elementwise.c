/* add, mul, exp and sum of 16M float32 against plain OpenMP loops doing the same work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "ctorch.h"

#define BENCH_N (16L * 1024 * 1024)

typedef struct elementwise_case {
    ct_tensor *a, *b;
    float *ra, *rb, *rout;
    volatile float sink;
} elementwise_case;

static void ct_add_run(void *c) { elementwise_case *e = c; ct_release(ct_add(e->a, e->b)); }
static void ct_mul_run(void *c) { elementwise_case *e = c; ct_release(ct_mul(e->a, e->b)); }
static void ct_exp_run(void *c) { elementwise_case *e = c; ct_release(ct_exp(e->a)); }
static void ct_sum_run(void *c) { elementwise_case *e = c; ct_release(ct_sum(e->a, NULL, 0, false)); }

static void loop_add(void *c)
{
    elementwise_case *e = c;
    float *restrict out = e->rout;
    const float *restrict a = e->ra, *restrict b = e->rb;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < BENCH_N; i++) out[i] = a[i] + b[i];
}

static void loop_mul(void *c)
{
    elementwise_case *e = c;
    float *restrict out = e->rout;
    const float *restrict a = e->ra, *restrict b = e->rb;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < BENCH_N; i++) out[i] = a[i] * b[i];
}

static void loop_exp(void *c)
{
    elementwise_case *e = c;
    float *restrict out = e->rout;
    const float *restrict a = e->ra;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < BENCH_N; i++) out[i] = expf(a[i]);
}

static void loop_sum(void *c)
{
    elementwise_case *e = c;
    const float *restrict a = e->ra;
    float sum = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
    for (long i = 0; i < BENCH_N; i++) sum += a[i];
    e->sink = sum;
}

typedef struct elementwise_bench {
    const char *name;
    void (*ctorch)(void *);
    void (*loop)(void *);
    int arrays; /* arrays of BENCH_N floats read or written, for GB/s */
} elementwise_bench;

void ct_bench_elementwise(const char *filter, ct_bench_report report, void *context)
{
    static const elementwise_bench benches[] = {
        {"add_f32_16M", ct_add_run, loop_add, 3},
        {"mul_f32_16M", ct_mul_run, loop_mul, 3},
        {"exp_f32_16M", ct_exp_run, loop_exp, 2},
        {"sum_f32_16M", ct_sum_run, loop_sum, 1},
    };
    bool any = false;
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) any |= ct_bench_selected(filter, benches[i].name);
    if (!any) return;
    int64_t shape[1] = {BENCH_N};
    elementwise_case e = {0};
    ct_manual_seed(1);
    e.a = ct_rand(shape, 1, CT_F32, CT_DEVICE_CPU);
    e.b = ct_rand(shape, 1, CT_F32, CT_DEVICE_CPU);
    size_t bytes = BENCH_N * sizeof(float);
    e.ra = aligned_alloc(4096, bytes);
    e.rb = aligned_alloc(4096, bytes);
    e.rout = aligned_alloc(4096, bytes);
    if (!e.a || !e.b || !e.ra || !e.rb || !e.rout) {
        fprintf(stderr, "bench elementwise: setup failed: %s\n", ct_last_error_message());
    } else {
        ct_tensor_to_array(e.a, e.ra, bytes);
        ct_tensor_to_array(e.b, e.rb, bytes);
        loop_add(&e); /* first touch of the baseline's output, as ctorch's cache is warmed below */
        for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
            const elementwise_bench *b = &benches[i];
            if (!ct_bench_selected(filter, b->name)) continue;
            ct_bench_result r = {.unit = "GB/s"};
            snprintf(r.name, sizeof r.name, "%s", b->name);
            double gigabytes = (double)b->arrays * (double)bytes * 1e-9;
            ct_bench_compare(&r, b->ctorch, b->loop, &e, 3, 30, gigabytes, 0.8);
            report(&r, context);
        }
    }
    ct_release(e.a);
    ct_release(e.b);
    free(e.ra);
    free(e.rb);
    free(e.rout);
}
