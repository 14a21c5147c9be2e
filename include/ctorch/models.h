/* ctorch models: whole models a user trains by name, built from the nn layer.
 *
 * GPT-2 (ct_gpt): nanoGPT's model (Karpathy's model.py) in C. Learned token and position
 * embeddings, n_layer pre-LayerNorm blocks of causal self-attention (one fused q/k/v Linear,
 * c_attn) and a 4x tanh-GELU MLP, a final LayerNorm and an lm_head tied to the token embedding.
 * GPT-2's initialisation; parameters named as nanoGPT's GPT.state_dict(), so its checkpoints load
 * as they are. A padded vocabulary (llm.c's 50304 rows for GPT-2's 50257 tokens: products of
 * friendlier sizes) adds rows to wte that never affect the loss or the samples. */
#ifndef CTORCH_MODELS_H
#define CTORCH_MODELS_H

#include <stdbool.h>
#include <stdint.h>

#include "ctorch/nn.h"
#include "ctorch/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_gpt_config {
    int64_t vocab_size;        /* tokens the data uses (256 for bytes, 50257 for GPT-2) */
    int64_t padded_vocab_size; /* rows of wte / lm_head, >= vocab_size (llm.c: 50304); the extra rows never affect loss or samples */
    int64_t block_size;        /* the longest sequence (rows of wpe) */
    int64_t n_layer, n_head, n_embd;
    double dropout; /* on the embeddings, the attention weights, and each block's two outputs, while training */
    bool bias;      /* Linears and LayerNorms with biases (GPT-2: true) */
} ct_gpt_config;

/* This repository's small byte-level GPT, sized so that `ctorch train --model gpt` trains it on
 * the shipped Shakespeare within minutes on two cores: vocab 256 (padded 256), block 128,
 * 4 layers, 4 heads, 128 channels, dropout 0, bias true. */
ct_gpt_config ct_gpt_config_default(void);
/* GPT-2 124M's (vocab 50257 padded to 50304 as llm.c, block 1024, 12 layers, 12 heads, 768
 * channels, dropout 0, bias true). */
ct_gpt_config ct_gpt_config_gpt2(void);
/* CT_OK, or CT_ERR_INVALID_ARGUMENT naming the field when the config is not a GPT: sizes <= 0,
 * padded_vocab_size < vocab_size, n_embd not a multiple of n_head, dropout outside [0, 1). */
ct_status ct_gpt_config_check(const ct_gpt_config *config);

/* A new GPT (module kind "GPT") on the cpu in float32, initialised as GPT-2 from the global seed
 * (ct_manual_seed): every Linear weight and both embeddings N(0, 0.02), the residual projections
 * (attn.c_proj.weight, mlp.c_proj.weight) N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorms 1
 * and 0. Parameter names are nanoGPT's:
 *   transformer.wte.weight [padded_vocab_size, C], transformer.wpe.weight [block_size, C],
 *   transformer.h.N.ln_1.{weight,bias}, transformer.h.N.attn.c_attn.{weight [3C, C],bias},
 *   transformer.h.N.attn.c_proj.{weight,bias}, transformer.h.N.ln_2.{weight,bias},
 *   transformer.h.N.mlp.c_fc.{weight [4C, C],bias}, transformer.h.N.mlp.c_proj.{weight,bias},
 *   transformer.ln_f.{weight,bias}, lm_head.weight (the same tensor as transformer.wte.weight).
 * The tie: ct_module_named_parameters lists the tensor once (as transformer.wte.weight),
 * ct_module_state_dict under both names (as nanoGPT's state_dict), and loading sets the one
 * tensor from either (ct_gpt_load_state_dict takes a state dict with only one of the two).
 * ct_module_forward(gpt, idx) gives the logits. */
ct_module *ct_gpt(const ct_gpt_config *config);
/* The config of a module made by ct_gpt; CT_ERR_INVALID_ARGUMENT when gpt is not one. */
ct_status ct_gpt_config_of(const ct_module *gpt, ct_gpt_config *out);

/* idx int64 or int32 [B, T] with 1 <= T <= block_size, ids in [0, padded_vocab_size) (the data
 * uses [0, vocab_size)); targets NULL or int64 [B, T] of ids in [0, vocab_size).
 * *logits (may be NULL): [B, T, vocab_size] (the padded columns dropped), in the dtype the last
 * product gives (float32, or the autocast dtype); *loss (may be NULL; needs targets): the mean
 * cross-entropy over the B T positions, float32 [1]. New references. No host synchronisation
 * beyond the index checks of ct_embedding and ct_cross_entropy (which a graph capture skips), so
 * a training step can be captured. */
ct_status ct_gpt_forward(ct_module *gpt, const ct_tensor *idx, const ct_tensor *targets, ct_tensor **logits,
                         ct_tensor **loss);

/* ct_module_load_state_dict for a GPT, strict, accepting a state dict that holds only one of
 * the tied names transformer.wte.weight and lm_head.weight (as Hugging Face's and some
 * nanoGPT files do); with both, they must be equal in shape. */
ct_status ct_gpt_load_state_dict(ct_module *gpt, const ct_state_dict *sd);

/* nanoGPT's configure_optimizers: AdamW over two parameter groups, weight decay on the
 * parameters of 2 or more dims (the Linear weights and embeddings) and none on the rest (biases,
 * LayerNorms); betas (beta1, beta2), eps 1e-8. Group 0 is the decayed one. */
ct_optimizer *ct_gpt_configure_optimizers(ct_module *gpt, double lr, double weight_decay, double beta1,
                                          double beta2);

/* Sampling, with a KV cache: the prompt runs once, then each new token costs one position.
 * prompt: prompt_len ids in [0, vocab_size), 1 <= prompt_len <= block_size; out holds
 * prompt_len + max_new_tokens ids (the prompt, then the new ones). Each new id is drawn from
 * softmax(logits / temperature) over [0, vocab_size) (never a padded id), keeping only the top_k
 * largest logits when top_k > 0 (ties with the k-th kept, as nanoGPT), with a generator of its
 * own seeded by seed (the global seed is untouched): deterministic for a seed. temperature > 0.
 * When the sequence outgrows block_size the context slides, as nanoGPT's generate crops it to
 * the last block_size ids (each token then runs the whole window). Runs in eval mode with grad
 * off, on the GPT's device, and restores its training mode. */
ct_status ct_gpt_generate(ct_module *gpt, const int64_t *prompt, int64_t prompt_len, int64_t max_new_tokens,
                          double temperature, int64_t top_k, uint64_t seed, int64_t *out);
/* The same samples without a cache, as nanoGPT's generate: each new token runs the whole
 * (cropped) sequence. The reference that ct_gpt_generate is checked against; slower. */
ct_status ct_gpt_generate_uncached(ct_module *gpt, const int64_t *prompt, int64_t prompt_len,
                                   int64_t max_new_tokens, double temperature, int64_t top_k, uint64_t seed,
                                   int64_t *out);

#ifdef __cplusplus
}
#endif
#endif
