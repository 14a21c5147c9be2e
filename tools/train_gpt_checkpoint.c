/* GPT checkpoints of `ctorch train --model gpt --save` and `ctorch generate`: the model as the
 * library's nanoGPT files are (ct_gpt_checkpoint_save's names and __metadata__), so that nanoGPT's
 * GPT and `ctorch convert` read it as it is, and the training state in a file of its own beside
 * it (FILE.state: tools/train_resume.c's names, "optimizer." entries and "ctorch.rng_state").
 * Reading takes any GPT file the library reads (ct_gpt_checkpoint_load). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_gpt.h"

#define KEY_STEP "ctorch.gpt.step"

/* The options that fix a resumed run's numbers, as text that compares equal for equal values. */
enum { RUN_OPTIONS = 12 };
typedef struct run_option {
    const char *key, *option;
    char value[64];
} run_option;

static void run_options(const ct_gpt_train_config *c, run_option out[RUN_OPTIONS])
{
    int n = 0;
#define OPTION(key, option, ...)                                                                                  \
    do {                                                                                                       \
        out[n] = (run_option){"ctorch.gpt.run." key, option, ""};                                             \
        snprintf(out[n++].value, sizeof out->value, __VA_ARGS__);                                             \
    } while (0)
    OPTION("steps", "--steps", "%lld", (long long)c->steps);
    OPTION("batch_size", "--batch-size", "%lld", (long long)c->batch_size);
    OPTION("seq_len", "--seq-len", "%lld", (long long)c->seq_len);
    OPTION("grad_accum", "--grad-accum", "%lld", (long long)c->grad_accum);
    OPTION("lr", "--lr", "%.17g", c->lr);
    OPTION("weight_decay", "--weight-decay", "%.17g", c->weight_decay);
    OPTION("lr_schedule", "--lr-schedule", c->schedule ? "warmup-cosine:%lld:%.17g" : "none", (long long)c->warmup,
           c->min_lr_factor);
    OPTION("clip_grad", "--clip-grad", "%.17g", c->clip_grad);
    OPTION("seed", "--seed", "%" PRIu64, c->seed);
    OPTION("data_order", "--data-order", "%s", c->order == CT_TOKEN_ORDER_SEQUENTIAL ? "sequential" : "random");
    OPTION("amp", "--amp", "%s", ct_train_amp_name(c->amp));
    OPTION("betas", "--betas", "%.17g,%.17g", c->beta1, c->beta2);
#undef OPTION
}

static ct_status set_number(ct_state_dict *sd, const char *key, long long value)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", value);
    return ct_state_dict_set_metadata(sd, key, text);
}

/* The config as nanoGPT's GPTConfig keys, as src/models/gpt_safetensors_files.c writes them. */
static ct_status put_config(ct_state_dict *sd, const ct_gpt_config *c)
{
    struct {
        const char *key;
        int64_t value;
    } ints[] = {{"block_size", c->block_size}, {"vocab_size", c->padded_vocab_size}, {"n_layer", c->n_layer},
                {"n_head", c->n_head},         {"n_embd", c->n_embd},                {"unpadded_vocab_size", c->vocab_size}};
    ct_status status = ct_state_dict_set_metadata(sd, "format", "pt");
    for (size_t k = 0; status == CT_OK && k < sizeof ints / sizeof ints[0]; k++)
        status = set_number(sd, ints[k].key, (long long)ints[k].value);
    char text[64];
    snprintf(text, sizeof text, "%.17g", c->dropout);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "dropout", text);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "bias", c->bias ? "True" : "False");
    return status;
}

static void state_path(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s" CT_TRAIN_GPT_STATE_SUFFIX, path);
}

static ct_status save_state(const ct_gpt_train_config *config, const ct_gpt_train_state *state, const char *path)
{
    ct_state_dict *sd = ct_state_dict_create();
    if (!sd) return ct_train_fail_library("--save: the training state");
    run_option options[RUN_OPTIONS];
    run_options(config, options);
    ct_status status = CT_OK;
    for (int i = 0; status == CT_OK && i < RUN_OPTIONS; i++)
        status = ct_state_dict_set_metadata(sd, options[i].key, options[i].value);
    if (status == CT_OK) status = set_number(sd, KEY_STEP, (long long)state->step);
    if (status == CT_OK && config->amp == CT_F16) {
        char scale[32];
        snprintf(scale, sizeof scale, "%.17g", state->amp_scale);
        status = ct_state_dict_set_metadata(sd, "ctorch.gpt.amp_scale", scale);
        if (status == CT_OK) status = set_number(sd, "ctorch.gpt.amp_growth_tracker", (long long)state->amp_growth_tracker);
    }
    char name[512];
    for (int64_t i = 0; status == CT_OK && i < ct_state_dict_count(state->optimizer); i++) {
        snprintf(name, sizeof name, CT_TRAIN_OPTIMIZER_PREFIX "%s", ct_state_dict_name_at(state->optimizer, i));
        ct_tensor *t = ct_state_dict_tensor_at(state->optimizer, i);
        status = t ? ct_state_dict_add(sd, name, t) : ct_last_error();
        ct_release(t);
    }
    if (status == CT_OK) status = ct_state_dict_add(sd, CT_TRAIN_RNG_STATE_NAME, state->rng);
    char file[4096];
    state_path(path, file, sizeof file);
    if (status != CT_OK) status = ct_train_fail_library("--save: the training state");
    else if (ct_save(sd, file) != CT_OK) status = ct_train_fail_library("--save: the training state");
    ct_state_dict_free(sd);
    return status;
}

ct_status ct_train_gpt_save(const ct_module *model, const ct_gpt_train_config *config,
                            const ct_gpt_train_state *state, const char *path)
{
    ct_gpt_config m;
    if (ct_gpt_config_of(model, &m) != CT_OK) return ct_train_fail_library("--save");
    ct_state_dict *sd = ct_module_state_dict(model, NULL);
    if (!sd) return ct_train_fail_library("--save: the model's state dict");
    ct_status status = put_config(sd, &m);
    if (status == CT_OK && state) status = set_number(sd, KEY_STEP, (long long)state->step);
    if (status != CT_OK) status = ct_train_fail_library("--save: the checkpoint's metadata");
    else if (ct_save(sd, path) != CT_OK) status = ct_train_fail_library("--save");
    ct_state_dict_free(sd);
    /* the model first: a run stopped between the two is caught by their steps at --resume */
    if (status == CT_OK && state && config) status = save_state(config, state, path);
    return status;
}

/* The weights of any GPT file into a new GPT (*out), or into model when given. */
static ct_status load(const char *path, const char *map_location, ct_module *model, ct_module **out)
{
    ct_gpt_load_options options = ct_gpt_load_options_default();
    options.map_location = map_location;
    ct_gpt_config config;
    ct_state_dict *weights = ct_gpt_checkpoint_load(path, &options, &config);
    if (!weights) return ct_train_fail_library("reading the checkpoint");
    ct_status status = CT_OK;
    ct_module *made = NULL;
    if (!model) {
        made = ct_gpt(&config);
        if (!made) status = ct_train_fail_library("the checkpoint's GPT");
    }
    if (status == CT_OK && ct_gpt_load_state_dict(model ? model : made, weights) != CT_OK) {
        char what[512];
        snprintf(what, sizeof what, "'%s' does not fit the GPT", path);
        status = ct_train_fail_library(what);
    }
    ct_state_dict_free(weights);
    if (status != CT_OK) {
        ct_module_release(made);
        return status;
    }
    if (out) *out = made;
    return CT_OK;
}

ct_status ct_train_gpt_load(const char *path, const char *map_location, ct_module **out)
{
    *out = NULL;
    return load(path, map_location, NULL, out);
}

ct_status ct_train_gpt_resume(const char *path, const ct_gpt_train_config *config, ct_module *model,
                              ct_gpt_train_state *out)
{
    *out = (ct_gpt_train_state){0};
    char file[4096];
    state_path(path, file, sizeof file);
    ct_state_dict *model_file = ct_load(path, "cpu");
    ct_state_dict *sd = model_file ? ct_load(file, "cpu") : NULL;
    if (!sd) {
        ct_state_dict_free(model_file);
        return ct_train_fail(CT_ERR_IO, "--resume '%s': %s (ctorch train --model gpt --save writes the training "
                             "state beside the model, in %s)", path, ct_last_error_message(), file);
    }
    run_option options[RUN_OPTIONS];
    run_options(config, options);
    const char *step = ct_state_dict_metadata(sd, KEY_STEP), *model_step = ct_state_dict_metadata(model_file, KEY_STEP);
    ct_status status = CT_OK;
    if (!step || !model_step || strcmp(step, model_step) != 0)
        status = ct_train_fail(CT_ERR_IO, "--resume '%s': the model is of step %s and %s of step %s: they were not "
                               "saved together", path, model_step ? model_step : "(none)", file, step ? step : "(none)");
    for (int i = 0; status == CT_OK && i < RUN_OPTIONS; i++) {
        const char *saved = ct_state_dict_metadata(sd, options[i].key);
        if (!saved || strcmp(saved, options[i].value) != 0)
            status = ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume '%s': the run saved %s %s; this one "
                                   "gives %s", path, options[i].option, saved ? saved : "(nothing)",
                                   options[i].value);
    }
    if (status == CT_OK && strtoll(step, NULL, 10) >= config->steps)
        status = ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume '%s' has finished its %s steps: there is "
                               "nothing to continue (its --lr-schedule is laid out over --steps)", path, step);
    if (status == CT_OK) status = load(path, "cpu", model, NULL);
    if (status == CT_OK) {
        out->step = strtoll(step, NULL, 10);
        out->optimizer = ct_state_dict_create();
        size_t prefix = strlen(CT_TRAIN_OPTIMIZER_PREFIX);
        for (int64_t i = 0; out->optimizer && status == CT_OK && i < ct_state_dict_count(sd); i++) {
            const char *name = ct_state_dict_name_at(sd, i);
            if (strncmp(name, CT_TRAIN_OPTIMIZER_PREFIX, prefix) != 0) continue;
            ct_tensor *t = ct_state_dict_tensor_at(sd, i);
            status = t ? ct_state_dict_add(out->optimizer, name + prefix, t) : ct_last_error();
            ct_release(t);
        }
        out->rng = ct_state_dict_get(sd, CT_TRAIN_RNG_STATE_NAME);
        const char *scale = ct_state_dict_metadata(sd, "ctorch.gpt.amp_scale");
        const char *tracker = ct_state_dict_metadata(sd, "ctorch.gpt.amp_growth_tracker");
        if (scale) out->amp_scale = strtod(scale, NULL);
        if (tracker) out->amp_growth_tracker = strtoll(tracker, NULL, 10);
        if (!out->optimizer || !out->rng || status != CT_OK) status = ct_train_fail_library("--resume: the state");
    }
    ct_state_dict_free(sd);
    ct_state_dict_free(model_file);
    if (status != CT_OK) ct_gpt_train_state_free(out);
    return status;
}
