/* nanoGPT's CausalSelfAttention: q, k and v from one Linear (c_attn, C -> 3C), split into
 * n_head heads, causal scaled-dot-product attention (dropout on the weights while training),
 * the heads joined and projected (c_proj, C -> C), then dropout on the result while training
 * (resid_dropout). Parameter names are nanoGPT's (c_attn.weight, c_proj.bias, ...), so its state
 * dicts load as they are. */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch/nn_functional.h"
#include "nn/module_internal.h"
#include "ops/attention_internal.h"

typedef struct causal_attention {
    int64_t embed, heads;
    double dropout;
    ct_module *c_attn, *c_proj, *resid_dropout; /* borrowed children, set when made (the forward finds them by name) */
} causal_attention;

/* [B, T, C] -> [B, H, T, C / H], a view. */
static ct_tensor *split_heads(const ct_tensor *x, const causal_attention *a)
{
    int64_t shape[4] = {x->shape[0], x->shape[1], a->heads, a->embed / a->heads};
    ct_tensor *viewed = ct_reshape(x, shape, 4);
    ct_tensor *out = viewed ? ct_transpose(viewed, 1, 2) : NULL;
    ct_release(viewed);
    return out;
}

static ct_tensor *causal_attention_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const causal_attention *a = self->data;
    if (x->ndim != 3 || x->shape[2] != a->embed)
        return ct_api_return(ct_error_null(CT_ERR_SHAPE, "CausalSelfAttention: the input must be "
                                           "[B, T, %lld]; got %d dims, last %lld",
                                           (long long)a->embed, x->ndim,
                                           (long long)(x->ndim ? x->shape[x->ndim - 1] : 0)));
    /* Inside the library no call records into a scope (only the outermost public call does):
     * every intermediate is released here. */
    ct_tensor *parts[3] = {NULL, NULL, NULL}, *heads[3] = {NULL, NULL, NULL};
    int count = 0;
    /* the children by name, not a->c_attn: DataParallel's replicas share data, not children */
    ct_module *c_attn = ct_module_child(self, "c_attn"), *c_proj = ct_module_child(self, "c_proj");
    ct_module *resid_dropout = ct_module_child(self, "resid_dropout");
    ct_tensor *qkv = ct_module_forward(c_attn, x);
    ct_tensor *out = NULL, *flat = NULL;
    double p = self->training ? a->dropout : 0.0;
    if (qkv && p == 0.0 && ct_attention_packed_takes(qkv, a->heads)) {
        /* the device's fused attention reads q, k and v where c_attn wrote them and joins the
         * heads as it writes: no split, no copies (ops/attention_packed.c) */
        flat = ct_attention_packed(qkv, a->heads);
    } else if (qkv && ct_split(qkv, a->embed, 2, parts, 3, &count) == CT_OK && count == 3) {
        for (int i = 0; i < 3; i++) heads[i] = split_heads(parts[i], a);
        ct_tensor *y = heads[0] && heads[1] && heads[2]
                           ? ct_scaled_dot_product_attention(heads[0], heads[1], heads[2], NULL, p, true, 0.0)
                           : NULL;
        ct_tensor *joined = y ? ct_transpose(y, 1, 2) : NULL;
        int64_t shape[3] = {x->shape[0], x->shape[1], a->embed};
        flat = joined ? ct_reshape(joined, shape, 3) : NULL;
        ct_release(y);
        ct_release(joined);
    }
    ct_tensor *projected = flat ? ct_module_forward(c_proj, flat) : NULL;
    out = projected ? ct_module_forward(resid_dropout, projected) : NULL;
    ct_release(flat);
    ct_release(projected);
    for (int i = 0; i < 3; i++) ct_release(parts[i]), ct_release(heads[i]);
    ct_release(qkv);
    return ct_api_return(out);
}

static char *causal_attention_describe(const ct_module *m)
{
    const causal_attention *a = m->data;
    char *s = malloc(96);
    if (s) snprintf(s, 96, "n_embd=%lld, n_head=%lld, dropout=%g", (long long)a->embed,
                    (long long)a->heads, a->dropout);
    return s;
}

static bool add_child(ct_module *m, const char *name, ct_module *child, ct_module **slot)
{
    bool ok = child && ct_module_register_module(m, name, child) == CT_OK;
    ct_module_release(child);
    *slot = ok ? child : NULL;
    return ok;
}

ct_module *ct_causal_self_attention(int64_t n_embd, int64_t n_head, double dropout, bool bias)
{
    if (n_embd <= 0 || n_head <= 0 || n_embd % n_head != 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_causal_self_attention: n_embd (%lld) "
                             "must be a positive multiple of n_head (%lld)", (long long)n_embd,
                             (long long)n_head);
    if (!(dropout >= 0.0 && dropout < 1.0))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_causal_self_attention: dropout must be "
                             "in [0, 1); got %g", dropout);
    causal_attention *a = calloc(1, sizeof *a);
    if (!a) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_causal_self_attention: no host memory");
    a->embed = n_embd;
    a->heads = n_head;
    a->dropout = dropout;
    ct_module *m = ct_module_create("CausalSelfAttention", causal_attention_forward, a, free);
    if (!m) {
        free(a);
        return NULL;
    }
    m->describe = causal_attention_describe;
    if (!add_child(m, "c_attn", ct_linear(n_embd, 3 * n_embd, bias), &a->c_attn) ||
        !add_child(m, "c_proj", ct_linear(n_embd, n_embd, bias), &a->c_proj) ||
        !add_child(m, "resid_dropout", ct_dropout(dropout), &a->resid_dropout)) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}
