/* GPT-2 as nanoGPT's model.py: the config, the module tree with nanoGPT's names, GPT-2's
 * initialisation, and the forward with the loss. The padded vocabulary's columns are cut from the
 * logits before anything reads them, so they never reach the loss (nor, in gpt_generate.c, a
 * sample); their rows of wte then get no gradient from the head and only train as embeddings,
 * which no data id picks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/nn_functional.h"
#include "models/gpt_internal.h"

static const char *const KIND = "GPT";

ct_gpt_config ct_gpt_config_default(void)
{
    return (ct_gpt_config){.vocab_size = 256, .padded_vocab_size = 256, .block_size = 128, .n_layer = 4,
                           .n_head = 4, .n_embd = 128, .dropout = 0.0, .bias = true};
}

ct_gpt_config ct_gpt_config_gpt2(void)
{
    return (ct_gpt_config){.vocab_size = 50257, .padded_vocab_size = 50304, .block_size = 1024, .n_layer = 12,
                           .n_head = 12, .n_embd = 768, .dropout = 0.0, .bias = true};
}

ct_status ct_gpt_config_check(const ct_gpt_config *c)
{
    const char *function = "ct_gpt_config_check";
    if (!c) return ct_null_argument(function, "config"), ct_last_error();
    const struct {
        const char *name;
        int64_t value;
    } sizes[] = {{"vocab_size", c->vocab_size}, {"padded_vocab_size", c->padded_vocab_size},
                 {"block_size", c->block_size}, {"n_layer", c->n_layer},
                 {"n_head", c->n_head},         {"n_embd", c->n_embd}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value <= 0)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be positive", function,
                            sizes[i].name, (long long)sizes[i].value);
    if (c->padded_vocab_size < c->vocab_size)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: padded_vocab_size (%lld) is smaller than vocab_size "
                        "(%lld); it must be at least vocab_size (llm.c pads 50257 to 50304)", function,
                        (long long)c->padded_vocab_size, (long long)c->vocab_size);
    if (c->n_embd % c->n_head != 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: n_embd (%lld) is not a multiple of n_head (%lld); "
                        "the heads split the channels evenly", function, (long long)c->n_embd,
                        (long long)c->n_head);
    if (!(c->dropout >= 0.0 && c->dropout < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: dropout is %g; it must be in [0, 1)", function, c->dropout);
    return CT_OK;
}

/* ---- the module tree ---- */

static bool add_child(ct_module *m, const char *name, ct_module *child, ct_module **slot)
{
    bool ok = child && ct_module_register_module(m, name, child) == CT_OK;
    ct_module_release(child);
    if (slot) *slot = ok ? child : NULL;
    return ok;
}

static ct_tensor *refuse_forward(ct_module *self, const ct_tensor *x)
{
    (void)x;
    return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: a container of the GPT's parts is not called itself; "
                         "call the GPT (ct_gpt_forward)", self->kind);
}

ct_module *ct_gpt_child(const ct_module *m, const char *name)
{
    for (int i = 0; m && i < m->child_count; i++)
        if (!strcmp(m->child_names[i], name)) return m->children[i];
    return ct_error_null(CT_ERR_INTERNAL, "GPT: %s has no child %s", m ? m->kind : "(none)", name);
}

/* MLP: c_fc (C -> 4C), tanh GELU, c_proj (4C -> C), dropout. The parts are found by name at
 * each call, never kept: DataParallel's replicas share a module's data, not its children. */
static ct_tensor *mlp_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    ct_tensor *h = ct_module_forward(ct_gpt_child(self, "c_fc"), x);
    ct_tensor *a = h ? ct_module_forward(ct_gpt_child(self, "gelu"), h) : NULL;
    ct_tensor *p = a ? ct_module_forward(ct_gpt_child(self, "c_proj"), a) : NULL;
    ct_tensor *out = p ? ct_module_forward(ct_gpt_child(self, "dropout"), p) : NULL;
    ct_release(h);
    ct_release(a);
    ct_release(p);
    return ct_api_return(out);
}

static ct_module *make_mlp(const ct_gpt_config *c)
{
    ct_module *m = ct_module_create("MLP", mlp_forward, NULL, NULL);
    if (!m) return NULL;
    if (!add_child(m, "c_fc", ct_linear(c->n_embd, 4 * c->n_embd, c->bias), NULL) ||
        !add_child(m, "gelu", ct_gelu_module_approximate("tanh"), NULL) ||
        !add_child(m, "c_proj", ct_linear(4 * c->n_embd, c->n_embd, c->bias), NULL) ||
        !add_child(m, "dropout", ct_dropout(c->dropout), NULL))
        return ct_module_release(m), NULL;
    return m;
}

ct_tensor *ct_gpt_block_mlp_residual(const ct_gpt_block *b, const ct_tensor *x)
{
    ct_tensor *h = ct_module_forward(b->ln_2, x);
    ct_tensor *m = h ? ct_module_forward(b->mlp, h) : NULL;
    ct_tensor *out = m ? ct_add(x, m) : NULL;
    ct_release(h);
    ct_release(m);
    return out;
}

/* nanoGPT's LayerNorm(ndim, bias): without bias, no bias parameter. */
static ct_module *layer_norm(const ct_gpt_config *c)
{
    const int64_t shape[1] = {c->n_embd};
    ct_module *ln = ct_layer_norm_module(shape, 1, 1e-5, true);
    if (ln && !c->bias) {
        /* drop the bias slot: ct_layer_norm reads a missing bias as none */
        ct_tensor_slots *s = &ln->parameters;
        for (int i = 0; i < s->count; i++)
            if (!strcmp(s->names[i], "bias")) {
                free(s->names[i]);
                ct_release(s->tensors[i]);
                memmove(s->names + i, s->names + i + 1, sizeof *s->names * (size_t)(s->count - i - 1));
                memmove(s->tensors + i, s->tensors + i + 1, sizeof *s->tensors * (size_t)(s->count - i - 1));
                s->count--;
                break;
            }
    }
    return ln;
}

/* Block: x + attn(ln_1(x)), then x + mlp(ln_2(x)). */
static ct_tensor *block_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const ct_gpt_block parts = ct_gpt_block_of(self), *b = &parts;
    ct_tensor *h = ct_module_forward(b->ln_1, x);
    ct_tensor *a = h ? ct_module_forward(b->attn, h) : NULL;
    ct_tensor *x1 = a ? ct_add(x, a) : NULL;
    ct_tensor *out = x1 ? ct_gpt_block_mlp_residual(b, x1) : NULL;
    ct_release(h);
    ct_release(a);
    ct_release(x1);
    return ct_api_return(out);
}

ct_gpt_block ct_gpt_block_of(ct_module *block)
{
    ct_gpt_block b = {.block = block};
    b.ln_1 = ct_gpt_child(block, "ln_1");
    b.attn = ct_gpt_child(block, "attn");
    b.ln_2 = ct_gpt_child(block, "ln_2");
    b.mlp = ct_gpt_child(block, "mlp");
    b.c_attn = b.attn ? ct_gpt_child(b.attn, "c_attn") : NULL;
    b.c_proj = b.attn ? ct_gpt_child(b.attn, "c_proj") : NULL;
    return b;
}

static ct_module *make_block(const ct_gpt_config *c)
{
    ct_module *m = ct_module_create("Block", block_forward, NULL, NULL);
    if (!m) return NULL;
    if (!add_child(m, "ln_1", layer_norm(c), NULL) ||
        !add_child(m, "attn", ct_causal_self_attention(c->n_embd, c->n_head, c->dropout, c->bias), NULL) ||
        !add_child(m, "ln_2", layer_norm(c), NULL) || !add_child(m, "mlp", make_mlp(c), NULL))
        return ct_module_release(m), NULL;
    return m;
}

/* lm_head's weight becomes wte's (nanoGPT: self.transformer.wte.weight = self.lm_head.weight). */
static bool tie(ct_module *lm_head, ct_tensor *weight)
{
    ct_tensor_slots *s = &lm_head->parameters;
    for (int i = 0; i < s->count; i++)
        if (!strcmp(s->names[i], "weight")) {
            ct_release(s->tensors[i]);
            s->tensors[i] = ct_retain(weight);
            return true;
        }
    return ct_error(CT_ERR_INTERNAL, "ct_gpt: lm_head has no weight to tie"), false;
}

static ct_tensor *gpt_module_forward(ct_module *self, const ct_tensor *idx)
{
    CT_API_ENTER;
    ct_tensor *logits = NULL;
    ct_gpt_forward(self, idx, NULL, &logits, NULL);
    return ct_api_return(logits);
}

ct_status ct_gpt_model_of(const ct_module *m, const char *function, ct_gpt_model *out)
{
    if (!m) return ct_null_argument(function, "gpt"), ct_last_error();
    if (m->forward != gpt_module_forward || strcmp(m->kind, KIND) != 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a GPT made by ct_gpt", function,
                        m->kind);
    ct_gpt_model g = {.config = *(const ct_gpt_config *)m->data};
    ct_module *transformer = ct_gpt_child(m, "transformer");
    g.wte = transformer ? ct_gpt_child(transformer, "wte") : NULL;
    g.wpe = transformer ? ct_gpt_child(transformer, "wpe") : NULL;
    g.drop = transformer ? ct_gpt_child(transformer, "drop") : NULL;
    g.h = transformer ? ct_gpt_child(transformer, "h") : NULL;
    g.ln_f = transformer ? ct_gpt_child(transformer, "ln_f") : NULL;
    g.lm_head = ct_gpt_child(m, "lm_head");
    if (!g.wte || !g.wpe || !g.drop || !g.h || !g.ln_f || !g.lm_head) return ct_last_error();
    if (g.h->child_count != g.config.n_layer)
        return ct_error(CT_ERR_INTERNAL, "%s: the GPT has %d blocks, its config %lld", function, g.h->child_count,
                        (long long)g.config.n_layer);
    if (out) *out = g;
    return CT_OK;
}

ct_gpt_block ct_gpt_block_at(const ct_gpt_model *g, int64_t layer)
{
    return ct_gpt_block_of(g->h->children[layer]);
}

ct_status ct_gpt_config_of(const ct_module *gpt, ct_gpt_config *out)
{
    ct_gpt_model g;
    ct_status status = ct_gpt_model_of(gpt, "ct_gpt_config_of", &g);
    if (status != CT_OK) return status;
    if (!out) return ct_null_argument("ct_gpt_config_of", "out"), ct_last_error();
    *out = g.config;
    return CT_OK;
}

/* ---- GPT-2's initialisation ---- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static ct_status fill_normal(ct_tensor *p, double std)
{
    ct_tensor *r = ct_randn(p->shape, p->ndim, p->dtype, p->storage->device);
    ct_status status = r ? ct_mul_scalar_(r, std) : ct_last_error();
    if (status == CT_OK) status = ct_copy_(p, r);
    ct_release(r);
    return status;
}

static ct_status initialise(ct_module *m, const ct_gpt_config *c)
{
    ct_named_tensors *list = ct_module_named_parameters(m);
    if (!list) return ct_last_error();
    ct_status status = CT_OK;
    double residual_std = 0.02 / sqrt(2.0 * (double)c->n_layer);
    ct_no_grad_push();
    for (int64_t i = 0; status == CT_OK && i < list->count; i++) {
        const char *name = list->names[i];
        ct_tensor *p = list->tensors[i];
        if (strstr(name, ".ln_")) continue; /* LayerNorms start at 1 and 0 */
        if (ends_with(name, ".bias")) status = ct_tensor_fill(p, 0.0);
        else if (ends_with(name, "c_proj.weight")) status = fill_normal(p, residual_std);
        else status = fill_normal(p, 0.02); /* Linear weights, wte, wpe */
    }
    ct_no_grad_pop();
    ct_named_tensors_free(list);
    return status;
}

ct_module *ct_gpt(const ct_gpt_config *config)
{
    if (ct_gpt_config_check(config) != CT_OK) return NULL;
    const ct_gpt_config c = *config;
    ct_gpt_config *data = malloc(sizeof *data); /* the config alone: the parts are found by name */
    if (!data) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_gpt: no host memory");
    *data = c;
    ct_module *m = ct_module_create(KIND, gpt_module_forward, data, free);
    if (!m) return free(data), NULL;
    ct_api_enter(); /* the tensors made here are the module's, not the caller's */
    ct_module *transformer = ct_module_create("ModuleDict", refuse_forward, NULL, NULL);
    ct_module *h = ct_module_list(NULL, 0), *wte = NULL, *lm_head = NULL;
    bool ok = add_child(m, "transformer", transformer, NULL) &&
              add_child(transformer, "wte", ct_embedding_module(c.padded_vocab_size, c.n_embd, -1), &wte) &&
              add_child(transformer, "wpe", ct_embedding_module(c.block_size, c.n_embd, -1), NULL) &&
              add_child(transformer, "drop", ct_dropout(c.dropout), NULL);
    ct_module *h_kept = h;
    ok = ok && add_child(transformer, "h", ct_module_retain(h), NULL);
    for (int64_t i = 0; ok && i < c.n_layer; i++) {
        ct_module *block = make_block(&c);
        ok = block && ct_sequential_append(h_kept, block) == CT_OK;
        ct_module_release(block);
    }
    ct_module_release(h);
    ok = ok && add_child(transformer, "ln_f", layer_norm(&c), NULL) &&
         add_child(m, "lm_head", ct_linear(c.n_embd, c.padded_vocab_size, false), &lm_head) &&
         tie(lm_head, ct_module_own_parameter(wte, "weight")) && initialise(m, &c) == CT_OK;
    ct_api_return(NULL);
    if (!ok) return ct_module_release(m), NULL;
    return m;
}

/* ---- forward ---- */

static ct_status check_batch(const ct_gpt_model *g, const ct_tensor *idx, const ct_tensor *targets)
{
    const char *function = "ct_gpt_forward";
    char shape[256];
    if (!idx) return ct_null_argument(function, "idx"), ct_last_error();
    if (idx->ndim != 2 || idx->shape[1] < 1 || idx->shape[0] < 1)
        return ct_error(CT_ERR_SHAPE, "%s: idx must be [B, T] token ids with B, T >= 1; it has shape %s", function,
                        ct_shape_format(idx->shape, idx->ndim, shape, sizeof shape));
    if (idx->dtype != CT_I64 && idx->dtype != CT_I32)
        return ct_error(CT_ERR_DTYPE, "%s: idx must be int64 or int32 token ids, not %s", function,
                        ct_dtype_name(idx->dtype));
    if (idx->shape[1] > g->config.block_size)
        return ct_error(CT_ERR_SHAPE, "%s: cannot forward a sequence of length %lld: the block size is only %lld",
                        function, (long long)idx->shape[1], (long long)g->config.block_size);
    if (targets && (targets->ndim != 2 || targets->shape[0] != idx->shape[0] || targets->shape[1] != idx->shape[1]))
        return ct_error(CT_ERR_SHAPE, "%s: targets must have idx's shape [%lld, %lld]; they have %s", function,
                        (long long)idx->shape[0], (long long)idx->shape[1],
                        ct_shape_format(targets->shape, targets->ndim, shape, sizeof shape));
    if (targets && targets->dtype != CT_I64)
        return ct_error(CT_ERR_DTYPE, "%s: targets must be int64 token ids, not %s", function,
                        ct_dtype_name(targets->dtype));
    return CT_OK;
}

ct_tensor *ct_gpt_head(const ct_gpt_model *g, const ct_tensor *x)
{
    ct_tensor *h = ct_module_forward(g->ln_f, x);
    ct_tensor *logits = h ? ct_module_forward(g->lm_head, h) : NULL;
    ct_release(h);
    return logits;
}

/* The hidden states after the last block, [B, T, C]. */
static ct_tensor *trunk(const ct_gpt_model *g, const ct_tensor *idx)
{
    ct_tensor *tok = ct_module_forward(g->wte, idx);
    ct_tensor *pos = ct_narrow(ct_module_own_parameter(g->wpe, "weight"), 0, 0, idx->shape[1]);
    ct_tensor *sum = tok && pos ? ct_add(tok, pos) : NULL;
    ct_tensor *x = sum ? ct_module_forward(g->drop, sum) : NULL;
    ct_release(tok);
    ct_release(pos);
    ct_release(sum);
    for (int64_t i = 0; x && i < g->config.n_layer; i++) {
        ct_tensor *next = ct_module_forward(g->h->children[i], x);
        ct_release(x);
        x = next;
    }
    return x;
}

ct_status ct_gpt_forward(ct_module *gpt, const ct_tensor *idx, const ct_tensor *targets, ct_tensor **logits_out,
                         ct_tensor **loss_out)
{
    const char *function = "ct_gpt_forward";
    if (logits_out) *logits_out = NULL;
    if (loss_out) *loss_out = NULL;
    ct_gpt_model parts;
    ct_status status = ct_gpt_model_of(gpt, function, &parts);
    if (status != CT_OK) return status;
    const ct_gpt_model *g = &parts;
    status = check_batch(g, idx, targets);
    if (status != CT_OK) return status;
    if (loss_out && !targets)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: a loss needs targets (pass NULL for loss without them)",
                        function);
    ct_api_enter();
    int64_t b = idx->shape[0], t = idx->shape[1], v = g->config.vocab_size;
    ct_tensor *x = trunk(g, idx);
    ct_tensor *padded = x ? ct_gpt_head(g, x) : NULL;
    ct_tensor *logits = padded && g->config.padded_vocab_size > v ? ct_narrow(padded, 2, 0, v)
                        : padded                                   ? ct_retain(padded)
                                                                   : NULL;
    ct_tensor *loss = NULL;
    if (logits && loss_out) {
        const int64_t rows[2] = {b * t, v}, flat[1] = {b * t};
        ct_tensor *logits2 = ct_reshape(logits, rows, 2);
        ct_tensor *targets1 = ct_reshape(targets, flat, 1);
        ct_cross_entropy_options options = ct_cross_entropy_options_default();
        options.ignore_index = -1; /* nanoGPT's: a target of -1 adds nothing */
        loss = ct_cross_entropy_ex(logits2, targets1, &options);
        ct_release(logits2);
        ct_release(targets1);
    }
    ct_release(x);
    ct_release(padded);
    status = logits && (loss || !loss_out) ? CT_OK : ct_last_error();
    if (status != CT_OK) {
        ct_release(logits);
        ct_release(loss);
        ct_api_return(NULL);
        return status;
    }
    ct_api_return(NULL);
    if (logits_out) {
        ct_api_enter();
        *logits_out = ct_api_return(logits);
    } else {
        ct_release(logits);
    }
    if (loss_out) {
        ct_api_enter();
        *loss_out = ct_api_return(loss);
    }
    return CT_OK;
}

ct_status ct_gpt_load_state_dict(ct_module *gpt, const ct_state_dict *sd)
{
    const char *function = "ct_gpt_load_state_dict";
    if (ct_gpt_model_of(gpt, function, NULL) != CT_OK) return ct_last_error();
    if (!sd) return ct_null_argument(function, "sd"), ct_last_error();
    static const char *const tied[2] = {"transformer.wte.weight", "lm_head.weight"};
    int64_t at[2] = {ct_state_dict_find(sd, tied[0]), ct_state_dict_find(sd, tied[1])};
    if ((at[0] >= 0) == (at[1] >= 0)) return ct_module_load_state_dict(gpt, sd, true, NULL);
    /* one of the two: a copy of sd with the other name beside it */
    int have = at[0] >= 0 ? 0 : 1;
    ct_state_dict *full = ct_state_dict_create();
    ct_status status = full ? CT_OK : ct_last_error();
    for (int64_t i = 0; status == CT_OK && i < ct_state_dict_count(sd); i++) {
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        status = t ? ct_state_dict_add(full, ct_state_dict_name_at(sd, i), t) : ct_last_error();
        if (status == CT_OK && i == at[have]) status = ct_state_dict_add(full, tied[1 - have], t);
        ct_release(t);
    }
    if (status == CT_OK) status = ct_module_load_state_dict(gpt, full, true, NULL);
    ct_state_dict_free(full);
    return status;
}
