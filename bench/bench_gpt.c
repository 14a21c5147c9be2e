/* A training step of a GPT (ct_gpt) on --device: forward with the loss, backward, AdamW with
 * nanoGPT's parameter groups (ct_gpt_configure_optimizers: lr 6e-4, weight decay 0.1, betas 0.9 and
 * 0.95), float32, on a fixed batch of byte-level tokens already on the device:
 *   train_gpt_l6_c384_t256_b8   tokens/s   L = 6, C = 384, H = 6, T = 256, B = 8, vocab 256
 *   train_gpt_peak_rss_mib_l6_c384_t256_b8   MiB   how far the process's resident memory rose
 *       above where it stood before the model was made, at its highest over the warm-up and the
 *       timed steps (Linux's VmHWM, reset through /proc/self/clear_refs first); the baseline
 *       column is ctorch's allocator's peak bytes over the same steps, for reference.
 * bench/torch_bench.py trains nanoGPT's GPT with the same config, batch, optimizer and timing, and
 * measures its memory the same way; bench/cpu_peer sets them side by side (issue 24's target on
 * the CPU: >= 1.0x PyTorch eager, same threads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { LAYERS = 6, EMBED = 384, HEADS = 6, SEQUENCE = 256, BATCH = 8, VOCAB = 256 };

typedef struct gpt_run {
    ct_module *gpt;
    ct_optimizer *optimizer;
    ct_tensor *idx, *targets; /* int64 [B, T] on the device */
    bool failed;
    char error[512];
} gpt_run;

static void step(void *context)
{
    gpt_run *r = context;
    if (r->failed) return;
    ct_scope_push();
    ct_optimizer_zero_grad(r->optimizer);
    ct_tensor *loss = NULL;
    ct_status status = ct_gpt_forward(r->gpt, r->idx, r->targets, NULL, &loss);
    if (status == CT_OK) status = ct_backward(loss);
    if (status == CT_OK) status = ct_optimizer_step(r->optimizer);
    if (status != CT_OK) {
        snprintf(r->error, sizeof r->error, "training step: %s", ct_last_error_message());
        r->failed = true;
    }
    ct_scope_pop();
}

/* Linux's resident set (VmRSS) or its high-water mark (VmHWM) in MiB, or -1 where unknown. */
static double status_mib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1.0;
    char line[256];
    double kib = -1.0;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') kib = strtod(line + n + 1, NULL);
    fclose(f);
    return kib < 0 ? -1.0 : kib / 1024.0;
}

/* Resets VmHWM to the current VmRSS (Linux >= 4.0); false where it cannot. */
static bool reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* --quick (a rehearsal): one sequence, not eight. */
static int64_t batch_size(void)
{
    return ct_bench_config_get()->quick ? 1 : BATCH;
}

static bool setup(gpt_run *r, ct_device device)
{
    memset(r, 0, sizeof *r);
    ct_manual_seed(0);
    ct_gpt_config config = {.vocab_size = VOCAB, .padded_vocab_size = VOCAB, .block_size = SEQUENCE,
                            .n_layer = LAYERS, .n_head = HEADS, .n_embd = EMBED, .dropout = 0.0, .bias = true};
    r->gpt = ct_gpt(&config);
    bool ok = r->gpt && ct_module_to(r->gpt, device) == CT_OK;
    r->optimizer = ok ? ct_gpt_configure_optimizers(r->gpt, 6e-4, 0.1, 0.9, 0.95) : NULL;
    int64_t shape[2] = {batch_size(), SEQUENCE};
    r->idx = ct_randint(0, VOCAB, shape, 2, CT_I64, device);
    r->targets = ct_randint(0, VOCAB, shape, 2, CT_I64, device);
    if (!r->optimizer || !r->idx || !r->targets) {
        snprintf(r->error, sizeof r->error, "setup: %s", ct_last_error_message());
        r->failed = true;
    }
    return !r->failed;
}

static void teardown(gpt_run *r)
{
    ct_optimizer_free(r->optimizer);
    ct_module_release(r->gpt);
    ct_release(r->idx);
    ct_release(r->targets);
}

static void report_failure(ct_bench_result *result, const gpt_run *r)
{
    fprintf(stderr, "bench %s: FAILED: %s\n", result->name, r->error);
    result->value = 0.0;
    snprintf(result->target, sizeof result->target, "report");
    result->met = false;
}

void ct_bench_gpt(const char *filter, ct_bench_report report, void *context)
{
    char config[32];
    snprintf(config, sizeof config, "l%d_c%d_t%d_b%d", LAYERS, EMBED, SEQUENCE, BATCH);
    ct_bench_result speed = {.unit = "tokens/s"}, peak = {.unit = "MiB"};
    snprintf(speed.name, sizeof speed.name, "train_gpt_%s", config);
    snprintf(peak.name, sizeof peak.name, "train_gpt_peak_rss_mib_%s", config);
    bool want_speed = ct_bench_selected(filter, speed.name), want_peak = ct_bench_selected(filter, peak.name);
    if (!want_speed && !want_peak) return;
    ct_device device = ct_bench_config_get()->device;
    ct_bench_set_device(&speed, device);
    ct_bench_set_device(&peak, device);
    bool peak_known = reset_peak_rss();
    double rss_before = status_mib("VmRSS");
    size_t allocated_before = ct_memory_allocated(device);
    ct_reset_peak_memory_stats(device);
    gpt_run r;
    if (setup(&r, device)) {
        if (want_speed) ct_bench_compare_synced(&speed, step, NULL, &r, device, 3, 10, (double)(batch_size() * SEQUENCE), 0.0);
        else step(&r);
    }
    double hwm = status_mib("VmHWM");
    if (want_speed) {
        if (r.failed) report_failure(&speed, &r);
        else snprintf(speed.target, sizeof speed.target, "report");
        report(&speed, context);
    }
    if (want_peak) {
        peak.value = peak_known && hwm >= 0 && rss_before >= 0 ? hwm - rss_before : 0.0;
        peak.baseline = (double)(ct_max_memory_allocated(device) - allocated_before) / (1024.0 * 1024.0);
        peak.ratio = 0.0;
        snprintf(peak.target, sizeof peak.target, "report");
        peak.met = true;
        if (r.failed) report_failure(&peak, &r);
        report(&peak, context);
    }
    teardown(&r);
}
