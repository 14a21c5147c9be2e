/* LayerNorm forward and backward of x [8 * 1024, 768] float32 (GPT-2 small's width, 8 sequences
 * of 1024 tokens), weight and bias requiring grad, in GB/s: a call is y = layer_norm(x), then
 * the backward from a fixed upstream gradient (dx, dweight, dbias). The bytes are those a call
 * must move: x and y forward, dy, x and dx backward (5 x 25 MB; the [768] parameters and the
 * per-row statistics are noise). The baseline is a plain memory-bound OpenMP loop over the same
 * bytes (y = a x + b, then dx = dy * x): the bandwidth such a loop reaches here, of which the
 * target asks 0.8. bench/torch_bench.py times nn.LayerNorm the same way, and bench/cpu_peer sets
 * the two side by side (peer_compare.py's target: >= 1.0x PyTorch on the CPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define ROWS (8 * 1024)
#define WIDTH 768

typedef struct ln_run {
    ct_tensor *x, *w, *b, *dy;
    float *hx, *hy, *hdy, *hdx; /* the plain loop's arrays */
    bool failed;
    char error[512];
} ln_run;

static void forward_backward(void *context)
{
    ln_run *c = context;
    if (c->failed) return;
    static const int64_t width[1] = {WIDTH};
    ct_scope_push();
    ct_zero_grad(c->x);
    ct_zero_grad(c->w);
    ct_zero_grad(c->b);
    ct_tensor *y = ct_layer_norm(c->x, width, 1, c->w, c->b, 1e-5);
    ct_status status = y ? ct_backward_with(y, c->dy, false) : ct_last_error();
    if (status != CT_OK) {
        snprintf(c->error, sizeof c->error, "%s", ct_last_error_message());
        c->failed = true;
    }
    ct_scope_pop();
}

static void plain_loop(void *context)
{
    ln_run *c = context;
    const long n = (long)ROWS * WIDTH;
    float *x = c->hx, *y = c->hy, *dy = c->hdy, *dx = c->hdx;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) y[i] = 0.5f * x[i] + 0.25f;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) dx[i] = dy[i] * x[i];
}

static ct_tensor *leaf(ct_tensor *t)
{
    if (t && ct_requires_grad_(t, true) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

static bool setup(ln_run *c, ct_device device)
{
    memset(c, 0, sizeof *c);
    ct_manual_seed(0);
    int64_t shape[2] = {ROWS, WIDTH}, width[1] = {WIDTH};
    c->x = leaf(ct_randn(shape, 2, CT_F32, device));
    c->w = leaf(ct_randn(width, 1, CT_F32, device));
    c->b = leaf(ct_randn(width, 1, CT_F32, device));
    c->dy = ct_randn(shape, 2, CT_F32, device);
    size_t bytes = (size_t)ROWS * WIDTH * sizeof(float);
    float **arrays[4] = {&c->hx, &c->hy, &c->hdy, &c->hdx};
    for (int k = 0; k < 4; k++) {
        *arrays[k] = malloc(bytes);
        if (!*arrays[k]) c->failed = true;
    }
    if (!c->failed) {
        const long n = (long)ROWS * WIDTH;
        float *x = c->hx, *y = c->hy, *dy = c->hdy, *dx = c->hdx;
#pragma omp parallel for simd schedule(static) /* first touch by the threads that use them */
        for (long i = 0; i < n; i++) x[i] = y[i] = dy[i] = dx[i] = (float)(i % 7);
    }
    if (c->failed || !(c->x && c->w && c->b && c->dy)) {
        snprintf(c->error, sizeof c->error, "setup: %s", c->failed ? "no host memory" : ct_last_error_message());
        c->failed = true;
    }
    return !c->failed;
}

static void free_run(ln_run *c)
{
    ct_tensor *all[4] = {c->x, c->w, c->b, c->dy};
    for (int i = 0; i < 4; i++) ct_release(all[i]);
    free(c->hx);
    free(c->hy);
    free(c->hdy);
    free(c->hdx);
}

void ct_bench_layer_norm(const char *filter, ct_bench_report report, void *context)
{
    ct_device device = ct_bench_config_get()->device;
    ct_bench_result r = {.unit = "GB/s"};
    snprintf(r.name, sizeof r.name, "layer_norm_fwd_bwd_f32_8192x768");
    if (!ct_bench_selected(filter, r.name)) return;
    ct_bench_set_device(&r, device);
    ln_run c;
    bool cpu = device.type == CT_CPU;
    double gigabytes = 5.0 * ROWS * WIDTH * sizeof(float) * 1e-9;
    if (setup(&c, device))
        ct_bench_compare_synced(&r, forward_backward, cpu ? plain_loop : NULL, &c, device, 3, 20,
                                gigabytes, cpu ? 0.8 : 0.0);
    if (c.failed) {
        fprintf(stderr, "bench %s: FAILED: %s\n", r.name, c.error);
        r.value = r.ratio = 0.0;
        snprintf(r.target, sizeof r.target, "report");
        r.met = false;
    }
    report(&r, context);
    free_run(&c);
}
