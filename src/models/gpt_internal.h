/* The GPT's record, shared by the model's files (gpt.c: the architecture and forward,
 * gpt_generate.c: sampling with a KV cache, gpt_optim.c: the optimizer's groups). */
#ifndef CT_MODELS_GPT_INTERNAL_H
#define CT_MODELS_GPT_INTERNAL_H

#include "ctorch/models.h"
#include "nn/module_internal.h"

/* The parts of a GPT, found by name in the module tree at each call and never kept in its data
 * (DataParallel's replicas share a module's data, not its children). Borrowed. */
typedef struct ct_gpt_block {
    ct_module *block, *ln_1, *attn, *ln_2, *mlp;
    ct_module *c_attn, *c_proj; /* the attention's */
} ct_gpt_block;

typedef struct ct_gpt_model {
    ct_gpt_config config;
    ct_module *wte, *wpe, *drop, *h, *ln_f, *lm_head;
} ct_gpt_model;

/* m's child named name (borrowed), or NULL with CT_ERR_INTERNAL. */
ct_module *ct_gpt_child(const ct_module *m, const char *name);
/* The parts of m when m is a GPT (out may be NULL: the check alone), else CT_ERR_INVALID_ARGUMENT
 * naming function. */
ct_status ct_gpt_model_of(const ct_module *m, const char *function, ct_gpt_model *out);
ct_gpt_block ct_gpt_block_of(ct_module *block);
ct_gpt_block ct_gpt_block_at(const ct_gpt_model *g, int64_t layer);

/* x [B, T, C] through one block's MLP half: x + mlp(ln_2(x)). A new reference. */
ct_tensor *ct_gpt_block_mlp_residual(const ct_gpt_block *b, const ct_tensor *x);

/* Logits over the padded vocabulary [B, T, padded] of the final hidden states x [B, T, C]. */
ct_tensor *ct_gpt_head(const ct_gpt_model *g, const ct_tensor *x);

#endif
