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

#include "ctorch/io.h"
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
 * uses [0, vocab_size)); targets NULL or int64 [B, T] of ids in [0, vocab_size), or -1 for a position that adds
 * nothing to the loss (nanoGPT's ignore_index).
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

/* ---- GPT checkpoint files ----
 * A GPT's state dict, as ctorch hands it around, has nanoGPT's names (GPT.state_dict() there):
 *   transformer.wte.weight [padded_vocab_size, C]   transformer.wpe.weight [block_size, C]
 *   transformer.h.N.ln_1.weight, .bias [C]          transformer.h.N.attn.c_attn.weight [3C, C], .bias [3C]
 *   transformer.h.N.attn.c_proj.weight [C, C], .bias [C]
 *   transformer.h.N.ln_2.weight, .bias [C]          transformer.h.N.mlp.c_fc.weight [4C, C], .bias [4C]
 *   transformer.h.N.mlp.c_proj.weight [C, 4C], .bias [C]
 *   transformer.ln_f.weight, .bias [C]              lm_head.weight [padded_vocab_size, C]
 * (no .bias names when config.bias is false), N = 0 .. n_layer - 1. lm_head.weight is tied to
 * transformer.wte.weight: readers give both names for the one tensor, writers take either or
 * both (both must then be equal). Files:
 *   CT_GPT_FORMAT_NANOGPT: safetensors with these names and the config in __metadata__ under
 *     nanoGPT's GPTConfig names (block_size, vocab_size = the rows of wte as nanoGPT counts it,
 *     n_layer, n_head, n_embd, dropout, bias as "True"/"False") plus unpadded_vocab_size, and
 *     "format": "pt"; PyTorch loads it into nanoGPT's GPT with load_state_dict as it is.
 *   CT_GPT_FORMAT_HF: Hugging Face's GPT-2 model.safetensors: the names without "transformer."
 *     (read with it too, as GPT2LMHeadModel.save_pretrained writes), no lm_head.weight, and the
 *     four Conv1D weights (c_attn, attn.c_proj, c_fc, mlp.c_proj) stored [in, out], transposed
 *     from nanoGPT's [out, in]. The config comes from the shapes; n_head from the metadata,
 *     else from config.json beside the file, else from the load options.
 *   CT_GPT_FORMAT_LLMC: llm.c's checkpoint (train_gpt2.c's gpt2_build_from_checkpoint): 256
 *     little-endian int32 (magic 20240326, version 3, maxT, V, L, NH, C, Vp), then every parameter
 *     in float32 in llm.c's order: wte, wpe, then each of ln1w, ln1b, qkvw, qkvb, attprojw,
 *     attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb for all layers, then lnfw, lnfb. llm.c
 *     always has biases: a GPT without them is written with zero biases. Version 5 (train_gpt2.cu's
 *     gpt2_124M_bf16.bin: the same in bfloat16) is read too, widened to float32. */
typedef enum ct_gpt_format {
    CT_GPT_FORMAT_AUTO = 0, /* reading: from the file's contents */
    CT_GPT_FORMAT_NANOGPT,
    CT_GPT_FORMAT_HF,
    CT_GPT_FORMAT_LLMC,
} ct_gpt_format;

#define CT_LLMC_CHECKPOINT_MAGIC 20240326
#define CT_LLMC_CHECKPOINT_VERSION 3

/* "nanogpt", "hf", "llmc" ("auto" for CT_GPT_FORMAT_AUTO); NULL for other values. */
const char *ct_gpt_format_name(ct_gpt_format format);
/* The inverse of ct_gpt_format_name; CT_ERR_INVALID_ARGUMENT listing the names for others. */
ct_status ct_gpt_format_parse(const char *name, ct_gpt_format *out);

/* The format of the file at path, from its contents: llm.c's magic, else a safetensors file whose
 * names or c_attn shapes say nanoGPT or Hugging Face. CT_ERR_IO naming the file when it is none. */
ct_status ct_gpt_checkpoint_format(const char *path, ct_gpt_format *out);

typedef struct ct_gpt_load_options {
    ct_gpt_format format;     /* CT_GPT_FORMAT_AUTO: from the contents */
    int64_t n_head;           /* 0: from the file (a file that does not say it needs this) */
    const char *map_location; /* as ct_load's; llm.c's tensors come from "cpu" */
} ct_gpt_load_options;
/* AUTO, n_head 0, map_location NULL. */
ct_gpt_load_options ct_gpt_load_options_default(void);

/* Reads a GPT from path (options NULL: the defaults) into a new state dict with nanoGPT's names
 * in GPT.state_dict()'s order (lm_head.weight last, the same tensor as transformer.wte.weight)
 * and its config into *config (may be NULL). Errors name the file and the first tensor that does
 * not fit a GPT (a missing, unexpected or misshapen one, saying the shape that would fit),
 * a truncated file, a bad magic or version. Buffers that are not parameters (attn.bias, the
 * causal mask of older files, attn.masked_bias) and torch.compile's "_orig_mod." prefix are
 * dropped. */
ct_state_dict *ct_gpt_checkpoint_load(const char *path, const ct_gpt_load_options *options,
                                      ct_gpt_config *config);

/* Writes sd (nanoGPT's names, tensors of a floating dtype on any device) as a GPT of config in
 * format (not AUTO), atomically as ct_save does: a failure leaves what was at path as it was.
 * llm.c's file is float32; the safetensors files keep the tensors' dtype. */
ct_status ct_gpt_checkpoint_save(const ct_state_dict *sd, const ct_gpt_config *config, const char *path,
                                 ct_gpt_format format);

/* CT_OK when sd holds exactly a GPT of config (lm_head.weight optional, equal to wte when there),
 * else CT_ERR_INVALID_ARGUMENT (or CT_ERR_SHAPE, CT_ERR_DTYPE) naming the first bad tensor and what
 * would fit. */
ct_status ct_gpt_state_dict_check(const ct_state_dict *sd, const ct_gpt_config *config);

#ifdef __cplusplus
}
#endif
#endif
