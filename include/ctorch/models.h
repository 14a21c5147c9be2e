/* ctorch models: GPT-2 (its config here; the model, ct_gpt, comes with the gpt-model branch) and
 * the files a GPT moves between ctorch, nanoGPT, Hugging Face and llm.c in. */
#ifndef CTORCH_MODELS_H
#define CTORCH_MODELS_H

#include "ctorch/io.h"
#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_gpt_config {
    int64_t vocab_size;         /* tokens the data uses (256 for bytes, 50257 for GPT-2) */
    int64_t padded_vocab_size;  /* rows of wte/lm_head, >= vocab_size (llm.c: 50304); the extra rows never affect loss or samples */
    int64_t block_size;         /* longest sequence */
    int64_t n_layer, n_head, n_embd;
    double dropout;
    bool bias;
} ct_gpt_config;

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
