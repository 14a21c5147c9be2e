/* The digits cnn's two convolutions (tools/train_models.c), forward and backward, on --device at
 * batch 32 and 512, in samples per second: Conv2d(1, 16, 3, padding 1) on [N, 1, 8, 8] images and
 * Conv2d(16, 32, 3, padding 1) on [N, 16, 4, 4] (the first's output after 2x2 pooling). A call:
 * both forwards, then both backwards from fixed upstream gradients: the weights' and biases'
 * gradients, and the second layer's input gradient (the first's input is the data, which needs
 * none, as in training). The pooling, ReLU and Linear of the model are left out: this row is the
 * convolution's share of train_cnn_bN. No baseline: bench/torch_bench.py times the same calls in
 * PyTorch (torch.autograd.backward of both outputs), and bench/cpu_peer sets them side by side. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define SIDE 8 /* the digits' 8 x 8 images */

typedef struct conv_run {
    ct_tensor *x1, *w1, *b1, *g1; /* layer 1: input, weight, bias, upstream gradient */
    ct_tensor *x2, *w2, *b2, *g2; /* layer 2: its input requires grad */
    bool failed;
    char error[512];
} conv_run;

static void forward_backward(void *context)
{
    conv_run *c = context;
    if (c->failed) return;
    static const int64_t padding[2] = {1, 1};
    ct_scope_push();
    ct_tensor *leaves[5] = {c->w1, c->b1, c->x2, c->w2, c->b2};
    for (int i = 0; i < 5; i++) ct_zero_grad(leaves[i]); /* zero_grad(set_to_none=True) */
    ct_tensor *y1 = ct_conv2d(c->x1, c->w1, c->b1, NULL, padding, NULL, 1);
    ct_tensor *y2 = ct_conv2d(c->x2, c->w2, c->b2, NULL, padding, NULL, 1);
    ct_status status = y1 && y2 ? ct_backward_with(y1, c->g1, false) : ct_last_error();
    if (status == CT_OK) status = ct_backward_with(y2, c->g2, false);
    if (status != CT_OK) {
        snprintf(c->error, sizeof c->error, "%s", ct_last_error_message());
        c->failed = true;
    }
    ct_scope_pop();
}

static ct_tensor *leaf(ct_tensor *t, bool requires_grad)
{
    if (t && requires_grad && ct_requires_grad_(t, true) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

static bool setup(conv_run *c, int64_t batch, ct_device device)
{
    memset(c, 0, sizeof *c);
    ct_manual_seed(0);
    c->x1 = ct_rand((int64_t[]){batch, 1, SIDE, SIDE}, 4, CT_F32, device);
    c->w1 = leaf(ct_randn((int64_t[]){16, 1, 3, 3}, 4, CT_F32, device), true);
    c->b1 = leaf(ct_randn((int64_t[]){16}, 1, CT_F32, device), true);
    c->g1 = ct_randn((int64_t[]){batch, 16, SIDE, SIDE}, 4, CT_F32, device);
    c->x2 = leaf(ct_rand((int64_t[]){batch, 16, SIDE / 2, SIDE / 2}, 4, CT_F32, device), true);
    c->w2 = leaf(ct_randn((int64_t[]){32, 16, 3, 3}, 4, CT_F32, device), true);
    c->b2 = leaf(ct_randn((int64_t[]){32}, 1, CT_F32, device), true);
    c->g2 = ct_randn((int64_t[]){batch, 32, SIDE / 2, SIDE / 2}, 4, CT_F32, device);
    if (!(c->x1 && c->w1 && c->b1 && c->g1 && c->x2 && c->w2 && c->b2 && c->g2)) {
        snprintf(c->error, sizeof c->error, "setup: %s", ct_last_error_message());
        c->failed = true;
    }
    return !c->failed;
}

static void free_run(conv_run *c)
{
    ct_tensor *all[8] = {c->x1, c->w1, c->b1, c->g1, c->x2, c->w2, c->b2, c->g2};
    for (int i = 0; i < 8; i++) ct_release(all[i]);
}

void ct_bench_conv2d(const char *filter, ct_bench_report report, void *context)
{
    static const int64_t batches[] = {32, 512};
    ct_device device = ct_bench_config_get()->device;
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        ct_bench_result r = {.unit = "samples/s"};
        snprintf(r.name, sizeof r.name, "conv2d_fwd_bwd_cnn_b%lld", (long long)batches[i]);
        if (!ct_bench_selected(filter, r.name)) continue;
        ct_bench_set_device(&r, device);
        conv_run c;
        if (setup(&c, batches[i], device))
            ct_bench_compare_synced(&r, forward_backward, NULL, &c, device, 3, 10, (double)batches[i], 0.0);
        if (c.failed) {
            fprintf(stderr, "bench %s: FAILED: %s\n", r.name, c.error);
            r.value = 0.0;
            snprintf(r.target, sizeof r.target, "report");
            r.met = false;
        }
        report(&r, context);
        free_run(&c);
    }
}
