/* GPT checkpoints of `ctorch train --model gpt --save` and `ctorch generate`: nanoGPT's names
 * (the model's own state dict), the config in __metadata__, and with a run's state what --resume
 * needs (tools/train_resume.c's names: "optimizer." entries and "ctorch.rng_state"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_gpt.h"

#define KEY_STEP "ctorch.gpt.step"

typedef struct field {
    const char *key;
    int64_t *value;
} field;

static int config_fields(ct_gpt_config *m, field out[6])
{
    out[0] = (field){"ctorch.gpt.vocab_size", &m->vocab_size};
    out[1] = (field){"ctorch.gpt.padded_vocab_size", &m->padded_vocab_size};
    out[2] = (field){"ctorch.gpt.block_size", &m->block_size};
    out[3] = (field){"ctorch.gpt.n_layer", &m->n_layer};
    out[4] = (field){"ctorch.gpt.n_head", &m->n_head};
    out[5] = (field){"ctorch.gpt.n_embd", &m->n_embd};
    return 6;
}

/* The options that fix a resumed run's numbers, as text that compares equal for equal values. */
enum { RUN_OPTIONS = 11 };
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
#undef OPTION
}

static ct_status set_number(ct_state_dict *sd, const char *key, long long value)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", value);
    return ct_state_dict_set_metadata(sd, key, text);
}

ct_status ct_gpt_checkpoint_save(const ct_module *model, const ct_gpt_train_config *config,
                                 const ct_gpt_train_state *state, const char *path)
{
    ct_gpt_config m;
    if (ct_gpt_config_of(model, &m) != CT_OK) return ct_train_fail_library("--save");
    ct_state_dict *sd = ct_module_state_dict(model, NULL);
    if (!sd) return ct_train_fail_library("--save: the model's state dict");
    field fields[6];
    int count = config_fields(&m, fields);
    ct_status status = CT_OK;
    for (int i = 0; status == CT_OK && i < count; i++) status = set_number(sd, fields[i].key, (long long)*fields[i].value);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "ctorch.gpt.bias", m.bias ? "true" : "false");
    if (status == CT_OK && config && state) {
        run_option options[RUN_OPTIONS];
        run_options(config, options);
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
    }
    if (status != CT_OK) status = ct_train_fail_library("--save: the checkpoint's metadata");
    else if (ct_save(sd, path) != CT_OK) status = ct_train_fail_library("--save");
    ct_state_dict_free(sd);
    return status;
}

/* The config in sd's metadata; CT_ERR_IO naming the file and the key when one is missing. */
static ct_status read_config(const ct_state_dict *sd, const char *path, ct_gpt_config *out)
{
    *out = (ct_gpt_config){.dropout = 0.0, .bias = true};
    field fields[6];
    int count = config_fields(out, fields);
    for (int i = 0; i < count; i++) {
        const char *text = ct_state_dict_metadata(sd, fields[i].key);
        char *end = NULL;
        long long value = text ? strtoll(text, &end, 10) : 0;
        if (!text || *end != '\0' || value <= 0)
            return ct_train_fail(CT_ERR_IO, "'%s' holds no GPT config: its metadata lacks '%s' (files of ctorch "
                                 "train --model gpt --save have it)", path, fields[i].key);
        *fields[i].value = value;
    }
    const char *bias = ct_state_dict_metadata(sd, "ctorch.gpt.bias");
    out->bias = !bias || strcmp(bias, "false") != 0;
    return CT_OK;
}

/* Loads path into a new GPT (*out), or into model when given; *sd_out keeps the file's entries. */
static ct_status load(const char *path, const char *map_location, ct_module *model, ct_module **out,
                      ct_state_dict **sd_out)
{
    ct_state_dict *sd = ct_load(path, map_location);
    if (!sd) return ct_train_fail_library("reading the checkpoint");
    ct_gpt_config config;
    ct_status status = model ? CT_OK : read_config(sd, path, &config);
    ct_state_dict *weights = NULL;
    if (status == CT_OK) {
        /* the model's entries alone */
        weights = ct_state_dict_create();
        for (int64_t i = 0; weights && status == CT_OK && i < ct_state_dict_count(sd); i++) {
            const char *name = ct_state_dict_name_at(sd, i);
            if (!strncmp(name, CT_TRAIN_OPTIMIZER_PREFIX, strlen(CT_TRAIN_OPTIMIZER_PREFIX)) ||
                !strcmp(name, CT_TRAIN_RNG_STATE_NAME))
                continue;
            ct_tensor *t = ct_state_dict_tensor_at(sd, i);
            status = t ? ct_state_dict_add(weights, name, t) : ct_last_error();
            ct_release(t);
        }
        if (!weights || status != CT_OK) status = ct_train_fail_library("reading the checkpoint");
    }
    ct_module *made = NULL;
    if (status == CT_OK && !model) {
        made = ct_gpt(&config);
        if (!made) status = ct_train_fail_library("the checkpoint's GPT");
    }
    if (status == CT_OK && ct_gpt_load_state_dict(model ? model : made, weights) != CT_OK) {
        char what[512];
        snprintf(what, sizeof what, "'%s' does not fit the GPT", path);
        status = ct_train_fail_library(what);
        if (status == CT_ERR_INVALID_ARGUMENT) status = CT_ERR_IO;
    }
    ct_state_dict_free(weights);
    if (status != CT_OK) {
        ct_module_release(made);
        ct_state_dict_free(sd);
        return status;
    }
    if (out) *out = made;
    if (sd_out) *sd_out = sd;
    else ct_state_dict_free(sd);
    return CT_OK;
}

ct_status ct_gpt_checkpoint_load(const char *path, const char *map_location, ct_module **out)
{
    *out = NULL;
    return load(path, map_location, NULL, out, NULL);
}

ct_status ct_gpt_checkpoint_resume(const char *path, const ct_gpt_train_config *config, ct_module *model,
                                   ct_gpt_train_state *out)
{
    *out = (ct_gpt_train_state){0};
    ct_state_dict *sd = NULL;
    ct_status status = load(path, "cpu", model, NULL, &sd);
    if (status != CT_OK) return status;
    run_option options[RUN_OPTIONS];
    run_options(config, options);
    const char *step = ct_state_dict_metadata(sd, KEY_STEP);
    if (!step) status = ct_train_fail(CT_ERR_IO, "--resume '%s': the file holds no training state", path);
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
        /* the optimizer's param_groups metadata travels under the same prefix */
        for (int64_t i = 0; out->optimizer && status == CT_OK && i < ct_state_dict_metadata_count(sd); i++) {
            const char *key = ct_state_dict_metadata_key_at(sd, i);
            if (strncmp(key, CT_TRAIN_OPTIMIZER_PREFIX, prefix) == 0)
                status = ct_state_dict_set_metadata(out->optimizer, key + prefix, ct_state_dict_metadata_value_at(sd, i));
        }
        out->rng = ct_state_dict_get(sd, CT_TRAIN_RNG_STATE_NAME);
        const char *scale = ct_state_dict_metadata(sd, "ctorch.gpt.amp_scale");
        const char *tracker = ct_state_dict_metadata(sd, "ctorch.gpt.amp_growth_tracker");
        if (scale) out->amp_scale = strtod(scale, NULL);
        if (tracker) out->amp_growth_tracker = strtoll(tracker, NULL, 10);
        if (!out->optimizer || !out->rng || status != CT_OK) status = ct_train_fail_library("--resume: the state");
    }
    ct_state_dict_free(sd);
    if (status != CT_OK) ct_gpt_train_state_free(out);
    return status;
}
