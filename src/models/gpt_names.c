/* The tensors of a GPT: nanoGPT's names and shapes for a config, llm.c's parts, and state dicts
 * checked against them (the first bad tensor named, with the shape that would fit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "models/gpt_files.h"
#include "tensor/tensor_internal.h"

ct_status ct_gpt_files_check_config(const char *fn, const ct_gpt_config *c)
{
    const char *field = c->vocab_size < 1 ? "vocab_size" : c->padded_vocab_size < c->vocab_size ? "padded_vocab_size"
                      : c->block_size < 1 ? "block_size" : c->n_layer < 1 ? "n_layer" : c->n_head < 1 ? "n_head"
                      : c->n_embd < 1 ? "n_embd" : NULL;
    if (field)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the config's %s is wrong (vocab_size %lld, padded_vocab_size "
                        "%lld, block_size %lld, n_layer %lld, n_head %lld, n_embd %lld): sizes are >= 1 and "
                        "padded_vocab_size >= vocab_size", fn, field, (long long)c->vocab_size,
                        (long long)c->padded_vocab_size, (long long)c->block_size, (long long)c->n_layer,
                        (long long)c->n_head, (long long)c->n_embd);
    if (c->n_embd % c->n_head != 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the config's n_head %lld does not divide n_embd %lld", fn,
                        (long long)c->n_head, (long long)c->n_embd);
    if (!(c->dropout >= 0.0 && c->dropout < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the config's dropout is %g; it must be in [0, 1)", fn, c->dropout);
    if (c->n_layer > CT_GPT_FILES_MAX_LAYERS)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the config's n_layer is %lld; the files of ctorch take at most "
                        "%d", fn, (long long)c->n_layer, CT_GPT_FILES_MAX_LAYERS);
    if (c->n_embd > INT64_MAX / 4 / c->padded_vocab_size || c->n_embd > INT64_MAX / 16 / c->n_embd / c->n_layer)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the config's sizes are too large", fn);
    return CT_OK;
}

static void put(ct_gpt_tensor_spec *s, int64_t *n, ct_gpt_part part, int64_t layer, const char *leaf,
                int ndim, int64_t rows, int64_t cols, bool conv1d)
{
    ct_gpt_tensor_spec *t = &s[(*n)++];
    if (layer >= 0) snprintf(t->name, sizeof t->name, "transformer.h.%lld.%s", (long long)layer, leaf);
    else snprintf(t->name, sizeof t->name, "%s", leaf);
    t->part = part;
    t->layer = layer;
    t->ndim = ndim;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->conv1d = conv1d;
}

ct_gpt_tensor_spec *ct_gpt_tensor_specs(const ct_gpt_config *c, int64_t *count)
{
    int64_t C = c->n_embd, most = 5 + 12 * c->n_layer, n = 0;
    ct_gpt_tensor_spec *s = calloc((size_t)most, sizeof *s);
    if (!s) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for %lld tensor names", (long long)most);
    put(s, &n, CT_GPT_WTE, -1, "transformer.wte.weight", 2, c->padded_vocab_size, C, false);
    put(s, &n, CT_GPT_WPE, -1, "transformer.wpe.weight", 2, c->block_size, C, false);
    for (int64_t l = 0; l < c->n_layer; l++) {
        put(s, &n, CT_GPT_LN1W, l, "ln_1.weight", 1, C, 0, false);
        if (c->bias) put(s, &n, CT_GPT_LN1B, l, "ln_1.bias", 1, C, 0, false);
        put(s, &n, CT_GPT_QKVW, l, "attn.c_attn.weight", 2, 3 * C, C, true);
        if (c->bias) put(s, &n, CT_GPT_QKVB, l, "attn.c_attn.bias", 1, 3 * C, 0, false);
        put(s, &n, CT_GPT_ATTPROJW, l, "attn.c_proj.weight", 2, C, C, true);
        if (c->bias) put(s, &n, CT_GPT_ATTPROJB, l, "attn.c_proj.bias", 1, C, 0, false);
        put(s, &n, CT_GPT_LN2W, l, "ln_2.weight", 1, C, 0, false);
        if (c->bias) put(s, &n, CT_GPT_LN2B, l, "ln_2.bias", 1, C, 0, false);
        put(s, &n, CT_GPT_FCW, l, "mlp.c_fc.weight", 2, 4 * C, C, true);
        if (c->bias) put(s, &n, CT_GPT_FCB, l, "mlp.c_fc.bias", 1, 4 * C, 0, false);
        put(s, &n, CT_GPT_FCPROJW, l, "mlp.c_proj.weight", 2, C, 4 * C, true);
        if (c->bias) put(s, &n, CT_GPT_FCPROJB, l, "mlp.c_proj.bias", 1, C, 0, false);
    }
    put(s, &n, CT_GPT_LNFW, -1, "transformer.ln_f.weight", 1, C, 0, false);
    if (c->bias) put(s, &n, CT_GPT_LNFB, -1, "transformer.ln_f.bias", 1, C, 0, false);
    put(s, &n, CT_GPT_LM_HEAD, -1, "lm_head.weight", 2, c->padded_vocab_size, C, false);
    *count = n;
    return s;
}

static const char *config_text(const ct_gpt_config *c, char *buf, size_t size)
{
    snprintf(buf, size, "n_layer %lld, n_embd %lld, padded_vocab_size %lld, block_size %lld, bias %s",
             (long long)c->n_layer, (long long)c->n_embd, (long long)c->padded_vocab_size,
             (long long)c->block_size, c->bias ? "true" : "false");
    return buf;
}

/* Equal values (lm_head.weight beside wte when they are not the same tensor). */
static ct_status same_values(const char *fn, const char *source, const ct_tensor *a, const ct_tensor *b)
{
    if (a == b) return CT_OK;
    ct_tensor *fa = ct_to_dtype(a, CT_F64), *fb = fa ? ct_to_dtype(b, CT_F64) : NULL;
    size_t bytes = (size_t)ct_numel(a) * sizeof(double);
    double *x = malloc(bytes ? bytes : 1), *y = malloc(bytes ? bytes : 1);
    ct_status status = fb && x && y ? ct_tensor_to_array(fa, x, bytes) : ct_last_error();
    if (status == CT_OK) status = ct_tensor_to_array(fb, y, bytes);
    if (status == CT_OK && memcmp(x, y, bytes) != 0)
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s: 'lm_head.weight' differs from "
                          "'transformer.wte.weight'; a GPT ties them (give one of them, or both equal)", fn, source);
    ct_release(fa);
    ct_release(fb);
    free(x);
    free(y);
    return status;
}

static ct_state_dict *canonical(const char *fn, const char *source, const ct_state_dict *sd, const ct_gpt_config *c)
{
    if (ct_gpt_files_check_config(fn, c) != CT_OK) return NULL;
    int64_t count = 0;
    ct_gpt_tensor_spec *specs = ct_gpt_tensor_specs(c, &count);
    if (!specs) return NULL;
    char want[128], have[128], config[256];
    ct_state_dict *out = ct_state_dict_create();
    ct_status status = out ? CT_OK : ct_last_error();
    /* names that are not a GPT's, in the state dict's order */
    for (int64_t i = 0; status == CT_OK && i < ct_state_dict_count(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        bool known = false;
        for (int64_t k = 0; k < count && !known; k++) known = strcmp(specs[k].name, name) == 0;
        if (!known)
            status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s: tensor '%s' is not part of a GPT with %s "
                              "(its tensors are transformer.wte.weight, transformer.h.0.ln_1.weight, ..., "
                              "lm_head.weight, as nanoGPT's GPT.state_dict() names them)", fn, source, name,
                              config_text(c, config, sizeof config));
    }
    ct_tensor *wte = NULL;
    for (int64_t k = 0; status == CT_OK && k < count; k++) {
        const ct_gpt_tensor_spec *s = &specs[k];
        int64_t at = ct_state_dict_find(sd, s->name);
        if (at < 0) {
            if (s->part == CT_GPT_LM_HEAD) {
                status = ct_state_dict_add(out, s->name, wte);
                continue;
            }
            status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s has no tensor '%s' (shape %s); a GPT with %s "
                              "needs it", fn, source, s->name, ct_shape_format(s->shape, s->ndim, want, sizeof want),
                              config_text(c, config, sizeof config));
            break;
        }
        ct_tensor *t = ct_state_dict_tensor_borrowed(sd, at);
        bool shape_ok = t->ndim == s->ndim;
        for (int d = 0; shape_ok && d < s->ndim; d++) shape_ok = t->shape[d] == s->shape[d];
        if (!shape_ok) {
            status = ct_error(CT_ERR_SHAPE, "%s: %s: tensor '%s' has shape %s; a GPT with %s needs %s", fn, source,
                              s->name, ct_shape_format(t->shape, t->ndim, have, sizeof have),
                              config_text(c, config, sizeof config), ct_shape_format(s->shape, s->ndim, want, sizeof want));
            break;
        }
        if (!ct_dtype_is_floating(t->dtype)) {
            status = ct_error(CT_ERR_DTYPE, "%s: %s: tensor '%s' is %s; a GPT's parameters are floating-point",
                              fn, source, s->name, ct_dtype_name(t->dtype));
            break;
        }
        if (s->part == CT_GPT_WTE) wte = t;
        if (s->part == CT_GPT_LM_HEAD) {
            status = same_values(fn, source, wte, t);
            if (status == CT_OK) status = ct_state_dict_add(out, s->name, wte);
        } else {
            status = ct_state_dict_add(out, s->name, t);
        }
    }
    free(specs);
    if (status != CT_OK) {
        ct_state_dict_free(out);
        return NULL;
    }
    for (int64_t k = 0; k < ct_state_dict_metadata_count(sd); k++) {
        const char *key = ct_state_dict_metadata_key_at(sd, k);
        if (!ct_io_metadata_key_is_reserved(key))
            ct_state_dict_set_metadata(out, key, ct_state_dict_metadata_value_at(sd, k));
    }
    return out;
}

ct_state_dict *ct_gpt_files_canonical(const char *fn, const char *source, const ct_state_dict *sd,
                                      const ct_gpt_config *config)
{
    ct_api_enter();
    ct_state_dict *out = canonical(fn, source, sd, config);
    ct_api_return(NULL);
    return out;
}

ct_status ct_gpt_state_dict_check(const ct_state_dict *sd, const ct_gpt_config *config)
{
    static const char *FN = "ct_gpt_state_dict_check";
    if (!sd) return ct_null_argument(FN, "sd"), ct_last_error();
    if (!config) return ct_null_argument(FN, "config"), ct_last_error();
    ct_state_dict *out = ct_gpt_files_canonical(FN, "the state dict", sd, config);
    ct_state_dict_free(out);
    return out ? CT_OK : ct_last_error();
}

static const ct_tensor *borrowed(const ct_state_dict *sd, const char *name)
{
    int64_t at = ct_state_dict_find(sd, name);
    return at < 0 ? NULL : ct_state_dict_tensor_borrowed(sd, at);
}

ct_status ct_gpt_files_infer_config(const char *fn, const char *source, const ct_state_dict *sd,
                                    int64_t n_head, ct_gpt_config *out)
{
    const ct_tensor *wte = borrowed(sd, "transformer.wte.weight"), *wpe = borrowed(sd, "transformer.wpe.weight");
    if (!wte || wte->ndim != 2 || !wpe || wpe->ndim != 2)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s is not a GPT: it needs 2-D tensors '%s' and '%s' "
                        "(token and position embeddings)", fn, source, "transformer.wte.weight", "transformer.wpe.weight");
    int64_t layers = 0;
    char name[96];
    for (;; layers++) {
        snprintf(name, sizeof name, "transformer.h.%lld.ln_1.weight", (long long)layers);
        if (ct_state_dict_find(sd, name) < 0) break;
    }
    if (n_head < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s does not say its number of heads (n_head in its "
                        "metadata or a config.json beside it); give it (--heads, or ct_gpt_load_options.n_head)",
                        fn, source);
    *out = (ct_gpt_config){.vocab_size = wte->shape[0], .padded_vocab_size = wte->shape[0],
                           .block_size = wpe->shape[0], .n_layer = layers, .n_head = n_head,
                           .n_embd = wte->shape[1], .dropout = 0.0,
                           .bias = ct_state_dict_find(sd, "transformer.ln_f.bias") >= 0};
    return CT_OK;
}
