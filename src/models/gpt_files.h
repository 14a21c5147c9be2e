/* The GPT's files' insides: the tensors a GPT of a config has (nanoGPT's names, llm.c's parts),
 * checks of a state dict against them, and the readers and writers of each format. */
#ifndef CT_MODELS_GPT_FILES_H
#define CT_MODELS_GPT_FILES_H

#include "core/core_internal.h"
#include "ctorch/models.h"

/* llm.c's parameter tensors in its order (train_gpt2.c's ParameterTensors), then the tied head. */
typedef enum ct_gpt_part {
    CT_GPT_WTE, CT_GPT_WPE, CT_GPT_LN1W, CT_GPT_LN1B, CT_GPT_QKVW, CT_GPT_QKVB, CT_GPT_ATTPROJW,
    CT_GPT_ATTPROJB, CT_GPT_LN2W, CT_GPT_LN2B, CT_GPT_FCW, CT_GPT_FCB, CT_GPT_FCPROJW, CT_GPT_FCPROJB,
    CT_GPT_LNFW, CT_GPT_LNFB, CT_GPT_LM_HEAD
} ct_gpt_part;
#define CT_GPT_LLMC_PARTS 16

typedef struct ct_gpt_tensor_spec {
    char name[96];    /* nanoGPT's */
    ct_gpt_part part;
    int64_t layer;    /* -1 outside the blocks */
    int ndim;
    int64_t shape[2]; /* nanoGPT's ([out, in] for the Linear weights) */
    bool conv1d;      /* Hugging Face stores it transposed ([in, out]) */
} ct_gpt_tensor_spec;

/* GPT-3 has 96; a damaged header or metadata must not make the name list huge. */
#define CT_GPT_FILES_MAX_LAYERS 10000
/* CT_ERR_INVALID_ARGUMENT naming the field when config is not a GPT. */
ct_status ct_gpt_files_check_config(const char *fn, const ct_gpt_config *config);
/* A GPT's tensors in GPT.state_dict()'s order, lm_head.weight last; *count of them. NULL (with an
 * error) when out of memory. The caller frees. */
ct_gpt_tensor_spec *ct_gpt_tensor_specs(const ct_gpt_config *config, int64_t *count);

/* sd checked against config (see ct_gpt_state_dict_check) and given as a new state dict in the
 * canonical order with lm_head.weight the same tensor as transformer.wte.weight. fn and source
 * ("'path'", "the state dict") for the messages. */
ct_state_dict *ct_gpt_files_canonical(const char *fn, const char *source, const ct_state_dict *sd,
                                      const ct_gpt_config *config);

/* The config of a GPT state dict (nanoGPT's names) from its shapes: wte's rows (padded) and
 * columns, wpe's rows, the blocks, the biases; vocab_size = the padded size, dropout 0; n_head as
 * given (0: unknown, an error naming the source and what would say it). */
ct_status ct_gpt_files_infer_config(const char *fn, const char *source, const ct_state_dict *sd,
                                    int64_t n_head, ct_gpt_config *out);

/* Each format's reader and writer. Readers give the canonical state dict; writers take it. */
ct_state_dict *ct_gpt_llmc_load(const char *path, const char *map_location, ct_gpt_config *config);
ct_status ct_gpt_llmc_save(const ct_state_dict *sd, const ct_gpt_config *config, const char *path);
/* The format of a safetensors file by its names and c_attn's shape (CT_ERR_IO when not a GPT's). */
ct_status ct_gpt_safetensors_format(const char *fn, const char *path, ct_gpt_format *out);
/* format NANOGPT, HF, or AUTO (told apart by the names and c_attn's shape); *found: which. */
ct_state_dict *ct_gpt_safetensors_load(const char *path, const ct_gpt_load_options *options,
                                       ct_gpt_config *config, ct_gpt_format *found);
ct_status ct_gpt_safetensors_save(const ct_state_dict *sd, const ct_gpt_config *config, const char *path,
                                  ct_gpt_format format);

#endif
