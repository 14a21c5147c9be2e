/* `ctorch train --model gpt`'s training code: token data (text as bytes, or llm.c's token files),
 * the step loop (gradient accumulation, clipping, autocast, --graph, DataParallel, DDP), the
 * warm-up cosine schedule, validation, and GPT checkpoints. The command prints; this code
 * computes (the tests call it directly). A function that fails returns its status and leaves a
 * one-line message in ct_train_error_message() (train.h). */
#ifndef CT_TRAIN_GPT_H
#define CT_TRAIN_GPT_H

#include "train.h"

/* ---- token data (tools/train_gpt_data.c) ----
 * The library's token data (ctorch/data.h: llm.c's token files, or text as bytes) split into
 * training and validation tokens (the file's last val_fraction). */
#define CT_GPT_TEXT_VOCAB 256
#define CT_GPT2_VOCAB 50257
#define CT_GPT2_PADDED_VOCAB 50304

typedef struct ct_gpt_tokens {
    ct_token_data *train, *val; /* val NULL without a split: the training tokens validate */
    int64_t count;              /* both parts */
    bool is_text;
} ct_gpt_tokens;

/* Whether path is read as an llm.c token file (ct_token_data_load's rule: the name ends in .bin,
 * or it starts with the magic) rather than as text. */
bool ct_gpt_is_token_file(const char *path);
/* Reads path with ids below vocab_size (0: 256 for text, GPT-2's 50257 for a token file) and
 * splits off the last val_fraction (0 to below 1) of it; the library's error recorded
 * (CT_ERR_IO for a bad file, CT_ERR_INVALID_ARGUMENT for an id at or above the vocabulary). */
ct_status ct_gpt_tokens_load(const char *path, int64_t vocab_size, double val_fraction, ct_gpt_tokens *out);
/* --val-data: path (the same kind of file, the same vocabulary) replaces tokens->val. */
ct_status ct_gpt_tokens_load_val(const char *path, int64_t vocab_size, ct_gpt_tokens *tokens);
void ct_gpt_tokens_free(ct_gpt_tokens *tokens); /* NULL-safe */
/* The shipped Shakespeare (ct_default_text_path); NULL recorded when it is not found. */
const char *ct_gpt_default_text_path(void);

/* ---- the run (tools/train_gpt_loop.c) ---- */
typedef struct ct_gpt_train_config {
    ct_gpt_config model;
    int64_t steps, batch_size, seq_len, grad_accum;
    double lr, weight_decay, beta1, beta2;
    /* warm-up cosine (llm.c's train_gpt2.cu): warmup > 0 or min_lr_factor < 1 schedules; the
     * rate is constant when schedule is false */
    bool schedule;
    int64_t warmup;
    double min_lr_factor;
    double clip_grad; /* 0: none */
    int64_t eval_every, eval_batches; /* eval_every 0: only after the last step */
    ct_token_order order;
    double val_fraction; /* the file's last fraction validates */
    uint64_t seed;
    ct_device device;
    int data_parallel_count;
    ct_device data_parallel[CT_TRAIN_MAX_DEVICES];
    bool distributed;
    ct_dtype amp;
    bool graph;
    const struct ct_gpt_train_state *resume;
} ct_gpt_train_config;

/* The defaults of `ctorch train --model gpt` (the small byte-level run on Shakespeare). */
ct_gpt_train_config ct_gpt_train_config_default(void);
/* The rate of step (from 0) of config's schedule. */
double ct_gpt_train_lr(const ct_gpt_train_config *config, int64_t step);
/* CT_ERR_INVALID_ARGUMENT naming the option when config cannot train on tokens (T above the
 * block, heads that do not divide the channels, data shorter than a batch, --graph with several
 * devices or fp16, ...): what the command checks before training. tokens may be NULL. */
ct_status ct_gpt_train_check(const ct_gpt_train_config *config, const ct_gpt_tokens *tokens);

typedef struct ct_gpt_step {
    int64_t step, steps;  /* from 0 */
    double loss;          /* the step's forward loss (before its update), the whole job's */
    double lr;
    double tokens_per_second;
    double val_loss;      /* NaN when the step was not evaluated */
    double seconds;
} ct_gpt_step;

typedef struct ct_gpt_train_state {
    int64_t step;             /* steps done */
    ct_state_dict *optimizer;
    ct_tensor *rng;
    double amp_scale;
    int64_t amp_growth_tracker;
} ct_gpt_train_state;
void ct_gpt_train_state_free(ct_gpt_train_state *state);

typedef struct ct_gpt_observer {
    void (*on_step)(void *context, const ct_gpt_step *step);
    /* after every evaluation and the last step: the plain model and the state to resume from */
    ct_status (*on_state)(void *context, const ct_module *model, const ct_gpt_train_state *state);
    void *context;
} ct_gpt_observer;

typedef struct ct_gpt_train_result {
    double final_loss, val_loss;
    double train_seconds, tokens_per_second;
    int64_t steps_run;
} ct_gpt_train_result;

/* Trains model (a ct_gpt, moved to config->device) on tokens. */
ct_status ct_gpt_train_run(ct_module *model, const ct_gpt_tokens *tokens, const ct_gpt_train_config *config,
                           const ct_gpt_observer *observer, ct_gpt_train_result *result);
/* The mean loss over config->eval_batches validation batches of a step's rows (batch_size x grad_accum x ranks), in llm.c's
 * sequential order from the split's start (the same batches at every evaluation). */
ct_status ct_gpt_evaluate(ct_module *model, const ct_gpt_tokens *tokens, const ct_gpt_train_config *config,
                          double *loss);
/* Model flops per token as nanoGPT's estimate_mfu: 6 N + 12 L T C (N without the position table). */
double ct_gpt_flops_per_token(const ct_gpt_config *config, int64_t parameters, int64_t seq_len);

/* ---- checkpoints (tools/train_gpt_checkpoint.c) ----
 * --save FILE writes the model as the library's nanoGPT files are (nanoGPT's names, lm_head.weight
 * beside transformer.wte.weight, the GPTConfig keys in __metadata__: nanoGPT's GPT loads it with
 * load_state_dict as it is, ctorch convert reads it), with "ctorch.gpt.step"; and with a state,
 * FILE.state beside it: the optimizer ("optimizer." names), the generators ("ctorch.rng_state"),
 * the step and the options that fix the run's numbers. */
#define CT_TRAIN_GPT_STATE_SUFFIX ".state"
ct_status ct_train_gpt_save(const ct_module *model, const ct_gpt_train_config *config,
                            const ct_gpt_train_state *state, const char *path);
/* A GPT from any file the library reads (nanoGPT's, Hugging Face's, llm.c's; its config from the
 * file), through map_location (NULL: the saved devices; llm.c's on the cpu). */
ct_status ct_train_gpt_load(const char *path, const char *map_location, ct_module **out);
/* --resume FILE: FILE's weights into model and FILE.state's state into *out, after checking that
 * they were saved by a run with config's options (CT_ERR_INVALID_ARGUMENT naming the option that
 * differs, or a finished run) at the same step (CT_ERR_IO otherwise). */
ct_status ct_train_gpt_resume(const char *path, const ct_gpt_train_config *config, ct_module *model,
                              ct_gpt_train_state *out);

#endif
