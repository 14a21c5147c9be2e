/* A training step of a small GPT-style transformer block on --device, built from ctorch's modules
 * as a PyTorch user builds it, in samples (sequences) per second:
 *   tokens [B, T] in a vocabulary of V -> Embedding(V, C) + a position embedding [T, C]
 *   x += CausalSelfAttention(LayerNorm1(x))   (c_attn: Linear(C, 3C), H heads, fused attention)
 *   x += Linear(4C, C)(GELU(Linear(C, 4C)(LayerNorm2(x))))
 *   logits = Linear(C, V)(x); cross-entropy against random targets; AdamW (lr 1e-3, decay 0.01)
 * with C 128, H 4, T 64, B 32, V 256; the GELU is the exact one (nn.GELU's default).
 * bench/torch_bench.py trains the same block with nn.Embedding, nn.LayerNorm,
 * F.scaled_dot_product_attention(is_causal=True), nn.GELU and torch.optim.AdamW; bench/cpu_peer
 * sets the two side by side (issue 22's target: >= 1.0x). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { EMBED = 128, HEADS = 4, SEQUENCE = 64, BATCH = 32, VOCAB = 256 };

typedef struct block {
    ct_tensor *wpe; /* borrowed from the module */
    ct_module *wte, *ln1, *attn, *ln2, *fc, *gelu, *fc2, *head;
} block;

typedef struct block_run {
    ct_module *model;
    ct_optimizer *optimizer;
    ct_tensor *tokens, *targets; /* [B * T] int64 */
    bool failed;
    char error[512];
} block_run;

/* tokens [B * T] -> logits [B * T, V]. */
static ct_tensor *block_forward(ct_module *self, const ct_tensor *tokens)
{
    const block *b = ct_module_data(self);
    ct_scope_push();
    ct_tensor *embedded = ct_module_forward(b->wte, ct_reshape(tokens, (int64_t[]){BATCH, SEQUENCE}, 2));
    ct_tensor *x = ct_add(embedded, b->wpe);
    x = ct_add(x, ct_module_forward(b->attn, ct_module_forward(b->ln1, x)));
    ct_tensor *hidden = ct_module_forward(b->gelu, ct_module_forward(b->fc, ct_module_forward(b->ln2, x)));
    x = ct_add(x, ct_module_forward(b->fc2, hidden));
    ct_tensor *logits = ct_reshape(ct_module_forward(b->head, x), (int64_t[]){BATCH * SEQUENCE, VOCAB}, 2);
    if (logits) ct_scope_keep(logits);
    ct_scope_pop();
    return logits;
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

static ct_module *block_create(ct_device device)
{
    block *b = calloc(1, sizeof *b);
    ct_module *m = b ? ct_module_create("TransformerBlock", block_forward, b, free) : NULL;
    if (!m) {
        free(b);
        return NULL;
    }
    int64_t c[1] = {EMBED};
    ct_tensor *position = ct_randn((int64_t[]){SEQUENCE, EMBED}, 2, CT_F32, device);
    bool ok = parameter(m, "wpe", ct_mul_scalar(position, 0.02), &b->wpe) &&
              child(m, "wte", ct_embedding_module(VOCAB, EMBED, -1), &b->wte) &&
              child(m, "ln_1", ct_layer_norm_module(c, 1, 1e-5, true), &b->ln1) &&
              child(m, "attn", ct_causal_self_attention(EMBED, HEADS, 0.0, true), &b->attn) &&
              child(m, "ln_2", ct_layer_norm_module(c, 1, 1e-5, true), &b->ln2) &&
              child(m, "fc", ct_linear(EMBED, 4 * EMBED, true), &b->fc) &&
              child(m, "gelu", ct_gelu_module(), &b->gelu) &&
              child(m, "fc2", ct_linear(4 * EMBED, EMBED, true), &b->fc2) &&
              child(m, "head", ct_linear(EMBED, VOCAB, true), &b->head) && ct_module_to(m, device) == CT_OK;
    ct_release(position);
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
