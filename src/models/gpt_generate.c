/* Sampling from a GPT, with a KV cache as llm.c and Hugging Face's generate keep one: the prompt
 * runs once (causal attention over it), storing each layer's keys and values; then each new token
 * runs one position, its query attending every cached key. While the sequence fits the block,
 * position p's hidden states depend only on ids 0..p, so the cache gives the logits a full
 * forward would. Past the block nanoGPT crops the context to its last block_size ids, which moves
 * every position: each token then runs the whole window (ct_gpt_generate_uncached's way).
 *
 * The draw is on the host, from a generator of its own (splitmix64 seeded by seed): the same
 * seed gives the same ids on every device up to the float rounding of the logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/nn_functional.h"
#include "models/gpt_internal.h"

static const char *const FN = "ct_gpt_generate";

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int descending(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* One id from logits[0..v) (scaled by 1 / temperature, the top_k largest kept) as nanoGPT:
 * softmax, then torch.multinomial's inverse CDF with one uniform draw. scratch holds v floats. */
static int64_t draw(const float *logits, int64_t v, double temperature, int64_t top_k, uint64_t *rng,
                    float *scratch, double *weights)
{
    float threshold = -INFINITY;
    if (top_k > 0 && top_k < v) {
        memcpy(scratch, logits, sizeof *scratch * (size_t)v);
        qsort(scratch, (size_t)v, sizeof *scratch, descending);
        threshold = scratch[top_k - 1]; /* logits below the k-th are dropped, ties kept */
    }
    double largest = -INFINITY, total = 0.0;
    for (int64_t i = 0; i < v; i++)
        if (logits[i] >= threshold) largest = fmax(largest, (double)logits[i] / temperature);
    for (int64_t i = 0; i < v; i++) {
        weights[i] = logits[i] >= threshold ? exp((double)logits[i] / temperature - largest) : 0.0;
        total += weights[i];
    }
    double u = (double)(splitmix64(rng) >> 11) * 0x1.0p-53 * total;
    int64_t last = 0;
    for (int64_t i = 0; i < v; i++) {
        if (weights[i] <= 0.0) continue;
        last = i;
        if (u < weights[i]) return i;
        u -= weights[i];
    }
    return last; /* rounding left u past the end: the last id with any weight */
}

/* An int64 [1, n] tensor of ids on device. */
static ct_tensor *ids_tensor(const int64_t *ids, int64_t n, ct_device device)
{
    const int64_t shape[2] = {1, n};
    return ct_tensor_from_data(ids, CT_I64, shape, 2, device);
}

/* The logits of the last position of x [1, t, C] as float32 on the host, the padded ones cut. */
static ct_status last_logits(const ct_gpt_model *g, const ct_tensor *x, float *out)
{
    ct_tensor *last = ct_narrow(x, 1, x->shape[1] - 1, 1);
    ct_tensor *padded = last ? ct_gpt_head(g, last) : NULL;
    ct_tensor *logits = padded ? ct_narrow(padded, 2, 0, g->config.vocab_size) : NULL;
    ct_tensor *f32 = logits ? ct_to_dtype(logits, CT_F32) : NULL;
    ct_tensor *flat = f32 ? ct_contiguous(f32) : NULL;
    ct_status status = flat ? ct_tensor_to_array(flat, out, sizeof *out * (size_t)g->config.vocab_size)
                            : ct_last_error();
    ct_release(last);
    ct_release(padded);
    ct_release(logits);
    ct_release(f32);
    ct_release(flat);
    return status;
}

/* Embeddings of ids at positions [pos, pos + n): [1, n, C]. */
static ct_tensor *embed(const ct_gpt_model *g, const ct_tensor *ids, int64_t pos)
{
    int64_t n = ids->shape[1];
    ct_tensor *tok = ct_module_forward(g->wte, ids);
    ct_tensor *p = ct_narrow(ct_module_own_parameter(g->wpe, "weight"), 0, pos, n);
    ct_tensor *x = tok && p ? ct_add(tok, p) : NULL;
    ct_release(tok);
    ct_release(p);
    return x;
}

/* [1, n, C] -> [1, H, n, D], a view. */
static ct_tensor *heads(const ct_tensor *x, int64_t h)
{
    const int64_t shape[4] = {1, x->shape[1], h, x->shape[2] / h};
    ct_tensor *v = ct_reshape(x, shape, 4);
    ct_tensor *out = v ? ct_transpose(v, 1, 2) : NULL;
    ct_release(v);
    return out;
}

/* One block on x [1, n, C] at positions [pos, pos + n), its keys and values written into the
 * caches [1, H, block, D] there; n > 1 only for the prompt, at pos 0. */
static ct_tensor *cached_block(const ct_gpt_model *g, const ct_gpt_block *b, const ct_tensor *x, int64_t pos,
                               ct_tensor *k_cache, ct_tensor *v_cache)
{
    int64_t n = x->shape[1], c = g->config.n_embd, h = g->config.n_head;
    ct_tensor *normed = ct_module_forward(b->ln_1, x);
    ct_tensor *qkv = normed ? ct_module_forward(b->c_attn, normed) : NULL;
    ct_tensor *parts[3] = {NULL, NULL, NULL}, *q = NULL, *k = NULL, *v = NULL;
    int count = 0;
    ct_status status = qkv ? ct_split(qkv, c, 2, parts, 3, &count) : ct_last_error();
    if (status == CT_OK) {
        q = heads(parts[0], h), k = heads(parts[1], h), v = heads(parts[2], h);
        status = q && k && v ? CT_OK : ct_last_error();
    }
    ct_tensor *k_at = status == CT_OK ? ct_narrow(k_cache, 2, pos, n) : NULL;
    ct_tensor *v_at = k_at ? ct_narrow(v_cache, 2, pos, n) : NULL;
    if (status == CT_OK) status = v_at ? ct_copy_(k_at, k) : ct_last_error();
    if (status == CT_OK) status = ct_copy_(v_at, v);
    ct_tensor *keys = status == CT_OK ? ct_narrow(k_cache, 2, 0, pos + n) : NULL;
    ct_tensor *values = keys ? ct_narrow(v_cache, 2, 0, pos + n) : NULL;
    ct_tensor *y = values ? ct_scaled_dot_product_attention(q, keys, values, NULL, 0.0, n > 1, 0.0) : NULL;
    ct_tensor *joined = y ? ct_transpose(y, 1, 2) : NULL;
    const int64_t shape[3] = {1, n, c};
    ct_tensor *flat = joined ? ct_reshape(joined, shape, 3) : NULL;
    ct_tensor *projected = flat ? ct_module_forward(b->c_proj, flat) : NULL;
    ct_tensor *x1 = projected ? ct_add(x, projected) : NULL;
    ct_tensor *out = x1 ? ct_gpt_block_mlp_residual(b, x1) : NULL;
    ct_tensor *temporaries[] = {normed, qkv,  parts[0], parts[1], parts[2], q,    k,         v,  k_at,
                                v_at,   keys, values,   y,        joined,   flat, projected, x1};
    for (size_t i = 0; i < sizeof temporaries / sizeof temporaries[0]; i++) ct_release(temporaries[i]);
    return out;
}

/* The logits after ids [pos, pos + n) run through the cache (float32 host, v of them). */
static ct_status cached_step(const ct_gpt_model *g, ct_tensor **caches, const int64_t *ids, int64_t n, int64_t pos,
                             ct_device device, float *logits)
{
    ct_tensor *t = ids_tensor(ids, n, device);
    ct_tensor *x = t ? embed(g, t, pos) : NULL;
    ct_release(t);
    for (int64_t l = 0; x && l < g->config.n_layer; l++) {
        const ct_gpt_block b = ct_gpt_block_at(g, l);
        ct_tensor *next = cached_block(g, &b, x, pos, caches[2 * l], caches[2 * l + 1]);
        ct_release(x);
        x = next;
    }
    ct_status status = x ? last_logits(g, x, logits) : ct_last_error();
    ct_release(x);
    return status;
}

/* The logits of a full forward of the last min(n, block) ids of seq[0..n). */
static ct_status full_step(ct_module *gpt, const ct_gpt_model *g, const int64_t *seq, int64_t n, ct_device device,
                           float *logits)
{
    int64_t window = n < g->config.block_size ? n : g->config.block_size;
    ct_tensor *t = ids_tensor(seq + n - window, window, device);
    ct_tensor *x = NULL;
    ct_status status = t ? CT_OK : ct_last_error();
    if (status == CT_OK) {
        ct_tensor *all = NULL;
        status = ct_gpt_forward(gpt, t, NULL, &all, NULL);
        /* ct_gpt_forward gives the cut logits; read the last row of them */
        if (status == CT_OK) {
            ct_tensor *last = ct_narrow(all, 1, window - 1, 1);
            ct_tensor *f32 = last ? ct_to_dtype(last, CT_F32) : NULL;
            x = f32 ? ct_contiguous(f32) : NULL;
            status = x ? ct_tensor_to_array(x, logits, sizeof *logits * (size_t)g->config.vocab_size)
                       : ct_last_error();
            ct_release(last);
            ct_release(f32);
        }
        ct_release(all);
    }
    ct_release(t);
    ct_release(x);
    return status;
}

static ct_status check_arguments(const ct_gpt_model *g, const int64_t *prompt, int64_t prompt_len,
                                 int64_t max_new_tokens, double temperature, int64_t top_k, const int64_t *out)
{
    const ct_gpt_config *c = &g->config;
    if (!prompt) return ct_null_argument(FN, "prompt"), ct_last_error();
    if (!out) return ct_null_argument(FN, "out"), ct_last_error();
    if (prompt_len < 1 || prompt_len > c->block_size)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the prompt has %lld tokens; it must have 1 to block_size (%lld)",
                        FN, (long long)prompt_len, (long long)c->block_size);
    for (int64_t i = 0; i < prompt_len; i++)
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return ct_error(CT_ERR_INDEX, "%s: prompt token %lld is %lld; ids must be in [0, vocab_size = %lld)", FN,
                            (long long)i, (long long)prompt[i], (long long)c->vocab_size);
    if (max_new_tokens < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: max_new_tokens is %lld; it must be >= 0", FN,
                        (long long)max_new_tokens);
    if (!(temperature > 0.0) || isinf(temperature))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: temperature is %g; it must be positive and finite", FN,
                        temperature);
    if (top_k < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: top_k is %lld; it must be >= 0 (0 keeps every token)", FN,
                        (long long)top_k);
    return CT_OK;
}

static ct_status generate(ct_module *gpt, const int64_t *prompt, int64_t prompt_len, int64_t max_new_tokens,
                          double temperature, int64_t top_k, uint64_t seed, int64_t *out, bool use_cache)
{
    ct_gpt_model parts;
    ct_status status = ct_gpt_model_of(gpt, FN, &parts);
    if (status != CT_OK) return status;
    const ct_gpt_model *g = &parts;
    status = check_arguments(g, prompt, prompt_len, max_new_tokens, temperature, top_k, out);
    if (status != CT_OK) return status;
    const ct_gpt_config *c = &g->config;
    ct_device device = ct_module_device(gpt);
    ct_dtype dtype = ct_module_own_parameter(g->wte, "weight")->dtype;
    int64_t v = c->vocab_size, layers = c->n_layer;
    float *logits = malloc(sizeof *logits * (size_t)v), *scratch = malloc(sizeof *scratch * (size_t)v);
    double *weights = malloc(sizeof *weights * (size_t)v);
    ct_tensor **caches = calloc((size_t)(2 * layers), sizeof *caches);
    if (!logits || !scratch || !weights || !caches) {
        free(logits), free(scratch), free(weights), free(caches);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld logits", FN, (long long)v);
    }
    bool training = ct_module_is_training(gpt);
    ct_module_eval(gpt);
    ct_no_grad_push();
    ct_api_enter();
    const int64_t cache_shape[4] = {1, c->n_head, c->block_size, c->n_embd / c->n_head};
    for (int64_t i = 0; use_cache && status == CT_OK && i < 2 * layers; i++) {
        caches[i] = ct_empty(cache_shape, 4, dtype, device);
        if (!caches[i]) status = ct_last_error();
    }
    memcpy(out, prompt, sizeof *out * (size_t)prompt_len);
    uint64_t rng = seed;
    for (int64_t n = prompt_len; status == CT_OK && n < prompt_len + max_new_tokens; n++) {
        /* the logits after out[0..n) */
        if (!use_cache || n > c->block_size) status = full_step(gpt, g, out, n, device, logits);
        else if (n == prompt_len) status = cached_step(g, caches, out, n, 0, device, logits);
        else status = cached_step(g, caches, out + n - 1, 1, n - 1, device, logits);
        if (status == CT_OK) out[n] = draw(logits, v, temperature, top_k, &rng, scratch, weights);
    }
    for (int64_t i = 0; i < 2 * layers; i++) ct_release(caches[i]);
    ct_api_return(NULL);
    ct_no_grad_pop();
    ct_module_train(gpt, training);
    free(logits), free(scratch), free(weights), free(caches);
    return status;
}

ct_status ct_gpt_generate(ct_module *gpt, const int64_t *prompt, int64_t prompt_len, int64_t max_new_tokens,
                          double temperature, int64_t top_k, uint64_t seed, int64_t *out)
{
    return generate(gpt, prompt, prompt_len, max_new_tokens, temperature, top_k, seed, out, true);
}

ct_status ct_gpt_generate_uncached(ct_module *gpt, const int64_t *prompt, int64_t prompt_len,
                                   int64_t max_new_tokens, double temperature, int64_t top_k, uint64_t seed,
                                   int64_t *out)
{
    return generate(gpt, prompt, prompt_len, max_new_tokens, temperature, top_k, seed, out, false);
}
