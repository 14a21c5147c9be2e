/* A training step of a small GPT-style transformer block on --device, built from today's ops
 * (ctorch has no LayerNorm, attention or Embedding module yet), in samples (sequences) per second:
 *   tokens [B, T] in a vocabulary of V -> embedding [V, C] + position embedding [T, C]
 *   x += proj(causal self-attention(LayerNorm1(x)))   (qkv: Linear(C, 3C), H heads)
 *   x += Linear(4C, C)(GELU(Linear(C, 4C)(LayerNorm2(x))))
 *   logits = Linear(C, V)(x); cross-entropy against random targets; AdamW (lr 1e-3, decay 0.01)
 * with C 128, H 4, T 64, B 32, V 256. LayerNorm is composed of mean and biased variance, the
 * attention of two batched matmuls, an additive causal mask (-inf above the diagonal) and
 * softmax; the GELU is the exact one (nn.GELU's default). bench/torch_bench.py trains the same
 * block with nn.Embedding, nn.LayerNorm, F.scaled_dot_product_attention(is_causal=True), nn.GELU
 * and torch.optim.AdamW; bench/cpu_peer sets the two side by side (issue 22's target: >= 1.0x). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { EMBED = 128, HEADS = 4, SEQUENCE = 64, BATCH = 32, VOCAB = 256 };

typedef struct block {
    ct_tensor *wte, *wpe, *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* borrowed from the module */
    ct_module *qkv, *proj, *fc, *fc2, *head;
    ct_tensor *mask; /* [T, T]: 0 on and below the diagonal, -inf above */
} block;

typedef struct block_run {
    ct_module *model;
    ct_optimizer *optimizer;
    ct_tensor *tokens, *targets; /* [B * T] int64 */
    bool failed;
    char error[512];
} block_run;

/* (x - mean) / sqrt(var + 1e-5) * w + b over the last dim, var biased (nn.LayerNorm). */
static ct_tensor *layer_norm(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b)
{
    int last = 2;
    ct_tensor *centred = ct_sub(x, ct_mean(x, &last, 1, true));
    ct_tensor *scale = ct_sqrt(ct_add_scalar(ct_var(x, &last, 1, 0, true), 1e-5));
    return ct_add(ct_mul(ct_div(centred, scale), w), b);
}

/* [B, T, C] -> [B, H, T, C / H], a view. */
static ct_tensor *heads(const ct_tensor *x)
{
    return ct_transpose(ct_view(x, (int64_t[]){BATCH, SEQUENCE, HEADS, EMBED / HEADS}, 4), 1, 2);
}

static ct_tensor *attention(const block *b, const ct_tensor *x)
{
    ct_tensor *parts[3];
    int count = 0;
    ct_tensor *qkv = ct_module_forward(b->qkv, x);
    if (!qkv || ct_split(qkv, EMBED, 2, parts, 3, &count) != CT_OK || count != 3) return NULL;
    ct_tensor *q = heads(parts[0]), *k = heads(parts[1]), *v = heads(parts[2]);
    ct_tensor *scores = ct_mul_scalar(ct_matmul(q, ct_transpose(k, 2, 3)), 1.0 / sqrt(EMBED / HEADS));
    ct_tensor *weights = ct_softmax(ct_add(scores, b->mask), 3);
    ct_tensor *y = ct_transpose(ct_matmul(weights, v), 1, 2); /* [B, T, H, D] */
    return ct_module_forward(b->proj, ct_reshape(y, (int64_t[]){BATCH, SEQUENCE, EMBED}, 3));
}

/* tokens [B * T] -> logits [B * T, V]. */
static ct_tensor *block_forward(ct_module *self, const ct_tensor *tokens)
{
    const block *b = ct_module_data(self);
    ct_scope_push();
    ct_tensor *embedded = ct_reshape(ct_index_select(b->wte, 0, tokens), (int64_t[]){BATCH, SEQUENCE, EMBED}, 3);
    ct_tensor *x = ct_add(embedded, b->wpe);
    x = ct_add(x, attention(b, layer_norm(x, b->ln1_w, b->ln1_b)));
    ct_tensor *hidden = ct_gelu(ct_module_forward(b->fc, layer_norm(x, b->ln2_w, b->ln2_b)));
    x = ct_add(x, ct_module_forward(b->fc2, hidden));
    ct_tensor *logits = ct_reshape(ct_module_forward(b->head, x), (int64_t[]){BATCH * SEQUENCE, VOCAB}, 2);
    if (logits) ct_scope_keep(logits);
    ct_scope_pop();
    return logits;
}

static void free_block(void *data)
{
    block *b = data;
    ct_release(b->mask);
    free(b);
}

/* Registers t (a new reference, may be NULL) as parameter `name`; the module keeps it, *slot
 * borrows it. */
static bool parameter(ct_module *m, const char *name, ct_tensor *t, ct_tensor **slot)
{
    bool ok = t && ct_module_register_parameter(m, name, t) == CT_OK;
    ct_release(t);
    *slot = ok ? t : NULL;
    return ok;
}

static bool child(ct_module *m, const char *name, ct_module *c, ct_module **slot)
{
    bool ok = c && ct_module_register_module(m, name, c) == CT_OK;
    ct_module_release(c);
    *slot = ok ? c : NULL;
    return ok;
}

/* N(0, 0.02^2), as GPT-2 initialises its embeddings. */
static ct_tensor *small_randn(int64_t rows, int64_t cols, ct_device device)
{
    ct_tensor *draw = ct_randn((int64_t[]){rows, cols}, 2, CT_F32, device);
    ct_tensor *scaled = ct_mul_scalar(draw, 0.02);
    ct_release(draw);
    return scaled;
}

static ct_module *block_create(ct_device device)
{
    block *b = calloc(1, sizeof *b);
    ct_module *m = b ? ct_module_create("TransformerBlock", block_forward, b, free_block) : NULL;
    if (!m) {
        free(b);
        return NULL;
    }
    float *mask = malloc(sizeof *mask * SEQUENCE * SEQUENCE);
    for (int i = 0; mask && i < SEQUENCE * SEQUENCE; i++) mask[i] = i % SEQUENCE > i / SEQUENCE ? -INFINITY : 0.0f;
    b->mask = mask ? ct_tensor_from_data(mask, CT_F32, (int64_t[]){SEQUENCE, SEQUENCE}, 2, device) : NULL;
    free(mask);
    int64_t c[1] = {EMBED};
    bool ok = b->mask &&
              parameter(m, "wte", small_randn(VOCAB, EMBED, device), &b->wte) &&
              parameter(m, "wpe", small_randn(SEQUENCE, EMBED, device), &b->wpe) &&
              parameter(m, "ln1_weight", ct_ones(c, 1, CT_F32, device), &b->ln1_w) &&
              parameter(m, "ln1_bias", ct_zeros(c, 1, CT_F32, device), &b->ln1_b) &&
              parameter(m, "ln2_weight", ct_ones(c, 1, CT_F32, device), &b->ln2_w) &&
              parameter(m, "ln2_bias", ct_zeros(c, 1, CT_F32, device), &b->ln2_b) &&
              child(m, "qkv", ct_linear(EMBED, 3 * EMBED, true), &b->qkv) &&
              child(m, "proj", ct_linear(EMBED, EMBED, true), &b->proj) &&
              child(m, "fc", ct_linear(EMBED, 4 * EMBED, true), &b->fc) &&
              child(m, "fc2", ct_linear(4 * EMBED, EMBED, true), &b->fc2) &&
              child(m, "head", ct_linear(EMBED, VOCAB, true), &b->head) && ct_module_to(m, device) == CT_OK;
    if (!ok) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}

static void step(void *context)
{
    block_run *r = context;
    if (r->failed) return;
    ct_scope_push();
    ct_optimizer_zero_grad(r->optimizer);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(r->model, r->tokens), r->targets, 0.0);
    ct_status status = loss ? ct_backward(loss) : ct_last_error();
    if (status == CT_OK) status = ct_optimizer_step(r->optimizer);
    if (status != CT_OK) {
        snprintf(r->error, sizeof r->error, "training step: %s", ct_last_error_message());
        r->failed = true;
    }
    ct_scope_pop();
}

static bool setup(block_run *r, ct_device device)
{
    memset(r, 0, sizeof *r);
    ct_manual_seed(0);
    r->model = block_create(device);
    ct_adam_options adamw = ct_adamw_options_default(1e-3);
    r->optimizer = r->model ? ct_optim_adamw(r->model, &adamw) : NULL;
    int64_t shape[1] = {BATCH * SEQUENCE};
    r->tokens = ct_randint(0, VOCAB, shape, 1, CT_I64, device);
    r->targets = ct_randint(0, VOCAB, shape, 1, CT_I64, device);
    if (!r->optimizer || !r->tokens || !r->targets) {
        snprintf(r->error, sizeof r->error, "setup: %s", ct_last_error_message());
        r->failed = true;
    }
    return !r->failed;
}

void ct_bench_transformer_block(const char *filter, ct_bench_report report, void *context)
{
    ct_bench_result result = {.unit = "samples/s"};
    snprintf(result.name, sizeof result.name, "train_transformer_block_b%d", BATCH);
    if (!ct_bench_selected(filter, result.name)) return;
    ct_device device = ct_bench_config_get()->device;
    ct_bench_set_device(&result, device);
    block_run r;
    if (setup(&r, device)) ct_bench_compare_synced(&result, step, NULL, &r, device, 3, 10, BATCH, 0.0);
    if (r.failed) {
        fprintf(stderr, "bench %s: FAILED: %s\n", result.name, r.error);
        result.value = 0.0;
        snprintf(result.target, sizeof result.target, "report");
        result.met = false;
    }
    report(&result, context);
    ct_optimizer_free(r.optimizer);
    ct_module_release(r.model);
    ct_release(r.tokens);
    ct_release(r.targets);
}
