/* The GPT's record, shared by the model's files (gpt.c: the architecture and forward,
 * gpt_generate.c: sampling with a KV cache, gpt_optim.c: the optimizer's groups). */
#ifndef CT_MODELS_GPT_INTERNAL_H
#define CT_MODELS_GPT_INTERNAL_H

#include "ctorch/models.h"
#include "nn/module_internal.h"

/* One Block's children (borrowed from it). */
typedef struct ct_gpt_block {
    ct_module *block; /* the Block itself, borrowed from transformer.h */
    ct_module *ln_1, *attn, *ln_2, *mlp;
    ct_module *c_attn, *c_proj; /* the attention's (its children) */
} ct_gpt_block;

typedef struct ct_gpt_model {
    ct_gpt_config config;
    /* borrowed from the module tree */
    ct_module *wte, *wpe, *drop, *ln_f, *lm_head;
    ct_gpt_block *blocks; /* n_layer, owned */
} ct_gpt_model;

/* The GPT's record when m is a GPT, else NULL with CT_ERR_INVALID_ARGUMENT naming function. */
ct_gpt_model *ct_gpt_model_of(const ct_module *m, const char *function);

/* x [B, T, C] through one block's MLP half: x + mlp(ln_2(x)). A new reference. */
ct_tensor *ct_gpt_block_mlp_residual(const ct_gpt_block *b, const ct_tensor *x);

/* Logits over the padded vocabulary [B, T, padded] of the final hidden states x [B, T, C]. */
ct_tensor *ct_gpt_head(const ct_gpt_model *g, const ct_tensor *x);

#endif
