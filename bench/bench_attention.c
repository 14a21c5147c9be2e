/* Scaled-dot-product attention, forward and backward, as a GPT-2 layer runs it: B = 8, H = 12,
 * D = 64, causal, float32, at T = 256, 1024 and 4096, on --device, in sequences per second.
 * attention_causal_fwd_bwd_tT: the fused path (kernels/attention.ct; on the CPU its float32
 * backend entry over the BLAS, src/backend/cpu/cpu_attention.c), with the composed path
 * (matmul + softmax + matmul, CTORCH_SDPA=math) as its baseline; bench/torch_bench.py times
 * F.scaled_dot_product_attention under the same name, and bench/cpu_peer sets them side by side.
 * attention_causal_peak_mib_tT: the peak bytes allocated during one forward and backward, fused
 * (value) against composed (baseline). The composed path's [B, H, T, T] matrices at T = 4096
 * (6 GiB each, several live at once) do not fit a small machine: there it is left out and its
 * peak is the 4 such matrices' lower bound, computed, not measured. To fit a 2-core machine in
 * about a minute, T >= 1024 makes 1 timed call without warm-up, and T = 4096 runs B = 1 (the
 * figure stays sequences per second; torch_bench.py does the same). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define HEADS 12
#define BATCH 8
#define HEAD_SIZE 64

typedef struct attention_run {
    ct_tensor *q, *k, *v, *g;
    bool failed;
    char error[512];
} attention_run;

static void forward_backward(void *context)
{
    attention_run *a = context;
    if (a->failed) return;
    ct_scope_push();
    ct_zero_grad(a->q);
    ct_zero_grad(a->k);
    ct_zero_grad(a->v);
    ct_tensor *out = ct_scaled_dot_product_attention(a->q, a->k, a->v, NULL, 0.0, true, 0.0);
    ct_status status = out ? ct_backward_with(out, a->g, false) : ct_last_error();
    if (status != CT_OK) {
        snprintf(a->error, sizeof a->error, "%s", ct_last_error_message());
        a->failed = true;
    }
    ct_scope_pop();
}

static void fused(void *context)
{
    setenv("CTORCH_SDPA", "fused", 1);
    forward_backward(context);
    unsetenv("CTORCH_SDPA");
}

static void composed(void *context)
{
    setenv("CTORCH_SDPA", "math", 1);
    forward_backward(context);
    unsetenv("CTORCH_SDPA");
}

static ct_tensor *leaf(ct_tensor *t)
{
    if (t) ct_requires_grad_(t, true);
    return t;
}

static int64_t batch_at(int64_t t) { return t >= 4096 ? 1 : BATCH; }

static bool setup(attention_run *a, int64_t t, ct_device device)
{
    memset(a, 0, sizeof *a);
    ct_manual_seed(0);
    int64_t shape[4] = {batch_at(t), HEADS, t, HEAD_SIZE};
    a->q = leaf(ct_randn(shape, 4, CT_F32, device));
    a->k = leaf(ct_randn(shape, 4, CT_F32, device));
    a->v = leaf(ct_randn(shape, 4, CT_F32, device));
    a->g = ct_randn(shape, 4, CT_F32, device);
    if (!a->q || !a->k || !a->v || !a->g) {
        snprintf(a->error, sizeof a->error, "setup: %s", ct_last_error_message());
        a->failed = true;
    }
    return !a->failed;
}

static double peak_mib(void (*fn)(void *), attention_run *a, ct_device device)
{
    ct_zero_grad(a->q); /* the last call's gradients are no part of this one's peak */
    ct_zero_grad(a->k);
    ct_zero_grad(a->v);
    ct_synchronize(device);
    size_t before = ct_memory_allocated(device);
    ct_reset_peak_memory_stats(device);
    fn(a);
    ct_synchronize(device);
    return (double)(ct_max_memory_allocated(device) - before) / (1024.0 * 1024.0);
}

void ct_bench_attention(const char *filter, ct_bench_report report, void *context)
{
    static const int64_t lengths[3] = {256, 1024, 4096};
    ct_device device = ct_bench_config_get()->device;
    bool quick = ct_bench_config_get()->quick;
    for (int i = 0; i < 3; i++) {
        int64_t t = quick ? lengths[i] / 8 : lengths[i];
        ct_bench_result speed = {.unit = "seq/s"}, peak = {.unit = "MiB"};
        snprintf(speed.name, sizeof speed.name, "attention_causal_fwd_bwd_t%lld", (long long)lengths[i]);
        snprintf(peak.name, sizeof peak.name, "attention_causal_peak_mib_t%lld", (long long)lengths[i]);
        bool want_speed = ct_bench_selected(filter, speed.name), want_peak = ct_bench_selected(filter, peak.name);
        if (!want_speed && !want_peak) continue;
        ct_bench_set_device(&speed, device);
        ct_bench_set_device(&peak, device);
        /* 4 live [B, H, T, T] float32 matrices, at least, on the composed path */
        double composed_floor = 4.0 * batch_at(t) * HEADS * (double)t * (double)t * 4 / (1024.0 * 1024.0);
        bool composed_fits = composed_floor < 4096;
        attention_run a;
        if (setup(&a, t, device)) {
            int warmup = t >= 1024 ? 0 : 1, repeats = t >= 1024 ? 1 : 3;
            if (want_speed)
                ct_bench_compare_synced(&speed, fused, composed_fits ? composed : NULL, &a, device,
                                        warmup, repeats, (double)batch_at(t), 0.0);
            if (want_peak) {
                peak.value = peak_mib(fused, &a, device);
                peak.baseline = composed_fits ? peak_mib(composed, &a, device) : composed_floor;
                peak.ratio = peak.value > 0 ? peak.baseline / peak.value : 0;
                snprintf(peak.target, sizeof peak.target, "report");
                peak.met = true;
            }
        }
        if (a.failed) fprintf(stderr, "bench %s: FAILED: %s\n", speed.name, a.error);
        if (want_speed) report(&speed, context);
        if (want_peak) report(&peak, context);
        ct_release(a.q);
        ct_release(a.k);
        ct_release(a.v);
        ct_release(a.g);
    }
}
