/* The block of make_transformer_block_fixture.py, in ctorch's ops (see the header). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transformer_block_fixture.h"

enum { VOCAB = 32, EMBED = 32, HEADS = 2, SEQUENCE = 12, BATCH = 2 };

static const char *const parameter_names[] = {
    "transformer.wte.weight",
    "transformer.wpe.weight",
    "transformer.h.0.ln_1.weight",
    "transformer.h.0.ln_1.bias",
    "transformer.h.0.attn.c_attn.weight",
    "transformer.h.0.attn.c_attn.bias",
    "transformer.h.0.attn.c_proj.weight",
    "transformer.h.0.attn.c_proj.bias",
    "transformer.h.0.ln_2.weight",
    "transformer.h.0.ln_2.bias",
    "transformer.h.0.mlp.c_fc.weight",
    "transformer.h.0.mlp.c_fc.bias",
    "transformer.h.0.mlp.c_proj.weight",
    "transformer.h.0.mlp.c_proj.bias",
    "transformer.ln_f.weight",
    "transformer.ln_f.bias",
    "lm_head.weight",
};
enum { PARAMETERS = sizeof parameter_names / sizeof parameter_names[0] };

typedef struct block {
    ct_tensor *p[PARAMETERS]; /* on the device, leaves that require grad */
} block;

static ct_tensor *find(const block *b, const char *name)
{
    for (int i = 0; i < PARAMETERS; i++)
        if (strcmp(parameter_names[i], name) == 0) return b->p[i];
    return NULL;
}

/* F.linear: x @ w^T + b. */
static ct_tensor *linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias)
{
    ct_tensor *y = ct_matmul(x, ct_transpose(w, 0, 1));
    return bias ? ct_add(y, bias) : y;
}

static ct_tensor *layer_norm(const block *b, const ct_tensor *x, const char *prefix)
{
    char weight[96], bias[96];
    snprintf(weight, sizeof weight, "%s.weight", prefix);
    snprintf(bias, sizeof bias, "%s.bias", prefix);
    return ct_layer_norm(x, (const int64_t[]){EMBED}, 1, find(b, weight), find(b, bias), 1e-5);
}

/* [B, T, C] -> [B, H, T, C / H]. */
static ct_tensor *heads(const ct_tensor *x)
{
    return ct_transpose(ct_reshape(x, (const int64_t[]){BATCH, SEQUENCE, HEADS, EMBED / HEADS}, 4), 1, 2);
}

static ct_tensor *attention(const block *b, const ct_tensor *x)
{
    ct_tensor *qkv = linear(x, find(b, "transformer.h.0.attn.c_attn.weight"),
                            find(b, "transformer.h.0.attn.c_attn.bias"));
    ct_tensor *parts[3];
    int count = 0;
    if (!qkv || ct_split(qkv, EMBED, 2, parts, 3, &count) != CT_OK || count != 3) return NULL;
    ct_tensor *y = ct_scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), NULL,
                                                   0.0, true, 0.0);
    y = ct_reshape(ct_transpose(y, 1, 2), (const int64_t[]){BATCH, SEQUENCE, EMBED}, 3);
    return linear(y, find(b, "transformer.h.0.attn.c_proj.weight"), find(b, "transformer.h.0.attn.c_proj.bias"));
}

static ct_tensor *mlp(const block *b, const ct_tensor *x)
{
    ct_tensor *h = ct_gelu_tanh(linear(x, find(b, "transformer.h.0.mlp.c_fc.weight"),
                                       find(b, "transformer.h.0.mlp.c_fc.bias")));
    return linear(h, find(b, "transformer.h.0.mlp.c_proj.weight"), find(b, "transformer.h.0.mlp.c_proj.bias"));
}

/* The loss; *logits gets [B, T, V]. */
static ct_tensor *forward(const block *b, const ct_tensor *idx, const ct_tensor *targets, ct_tensor **logits)
{
    ct_tensor *x = ct_add(ct_embedding(find(b, "transformer.wte.weight"), idx, -1), find(b, "transformer.wpe.weight"));
    x = ct_add(x, attention(b, layer_norm(b, x, "transformer.h.0.ln_1")));
    x = ct_add(x, mlp(b, layer_norm(b, x, "transformer.h.0.ln_2")));
    *logits = linear(layer_norm(b, x, "transformer.ln_f"), find(b, "lm_head.weight"), NULL);
    return ct_cross_entropy(ct_reshape(*logits, (const int64_t[]){BATCH * SEQUENCE, VOCAB}, 2),
                            ct_reshape(targets, (const int64_t[]){BATCH * SEQUENCE}, 1), 0.0);
}

/* got (any device) against PyTorch's want (the CPU), both float32: every element within float32
 * rounding of sums of this block's length, relative to the tensor's largest magnitude. */
static bool agrees(const char *what, const ct_tensor *got, const ct_tensor *want, char *failure, size_t capacity)
{
    if (!got) {
        snprintf(failure, capacity, "%s: none computed (%s)", what, ct_last_error_message());
        return false;
    }
    int64_t n = ct_numel(want);
    if (ct_numel(got) != n) {
        snprintf(failure, capacity, "%s: %lld elements, PyTorch has %lld", what, (long long)ct_numel(got), (long long)n);
        return false;
    }
    float *g = malloc((size_t)n * sizeof *g), *w = malloc((size_t)n * sizeof *w);
    bool ok = g && w && ct_tensor_to_array(got, g, (size_t)n * sizeof *g) == CT_OK &&
              ct_tensor_to_array(want, w, (size_t)n * sizeof *w) == CT_OK;
    if (!ok) snprintf(failure, capacity, "%s: could not read the values back (%s)", what, ct_last_error_message());
    double largest = 0;
    for (int64_t i = 0; ok && i < n; i++) largest = fmax(largest, fabs(w[i]));
    for (int64_t i = 0; ok && i < n; i++) {
        if (!(fabs((double)g[i] - w[i]) <= 1e-6 + 2e-5 * largest + 1e-4 * fabs(w[i]))) {
            snprintf(failure, capacity, "%s[%lld]: ctorch %.9g, PyTorch %.9g (largest |value| %.3g)", what,
                     (long long)i, g[i], w[i], largest);
            ok = false;
        }
    }
    free(g), free(w);
    return ok;
}

static bool check(const ct_state_dict *want, ct_device device, char *failure, size_t capacity)
{
    block b = {{0}};
    for (int i = 0; i < PARAMETERS; i++) {
        b.p[i] = ct_to(ct_state_dict_get(want, parameter_names[i]), device);
        if (!b.p[i] || ct_requires_grad_(b.p[i], true) != CT_OK) {
            snprintf(failure, capacity, "%s: not on the device (%s)", parameter_names[i], ct_last_error_message());
            return false;
        }
    }
    ct_tensor *logits = NULL;
    ct_tensor *loss = forward(&b, ct_to(ct_state_dict_get(want, "idx"), device),
                              ct_to(ct_state_dict_get(want, "targets"), device), &logits);
    if (!loss || ct_backward(loss) != CT_OK) {
        snprintf(failure, capacity, "the block's forward or backward failed: %s", ct_last_error_message());
        return false;
    }
    if (!agrees("logits", logits, ct_state_dict_get(want, "logits"), failure, capacity) ||
        !agrees("loss", loss, ct_state_dict_get(want, "loss"), failure, capacity))
        return false;
    for (int i = 0; i < PARAMETERS; i++) {
        char name[128];
        snprintf(name, sizeof name, "grad.%s", parameter_names[i]);
        if (!agrees(name, ct_grad(b.p[i]), ct_state_dict_get(want, name), failure, capacity)) return false;
    }
    return true;
}

bool ct_test_transformer_block_matches_pytorch(const char *fixture_path, ct_device device, char *failure,
                                               size_t capacity)
{
    ct_state_dict *want = ct_load(fixture_path, "cpu");
    if (!want) {
        snprintf(failure, capacity, "%s: %s", fixture_path, ct_last_error_message());
        return false;
    }
    ct_scope_push(); /* every tensor made below is released at the pop */
    bool ok = check(want, device, failure, capacity);
    ct_scope_pop();
    ct_state_dict_free(want);
    return ok;
}
