/* Resumable checkpoints of `ctorch train`: the model's checkpoint (tools/train_checkpoint.c) with
 * the optimizer's state, the generators' state, the epoch and the schedule beside it, and the
 * checks that a run resuming from one is the run that saved it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

#define KEY_EPOCH "ctorch.train.epoch"
#define KEY_EPOCHS "ctorch.train.epochs"
#define KEY_SCHEDULE_STEPS "ctorch.train.schedule_steps"

/* The options that fix a run's numbers: each as the file's metadata key, the option a user gives,
 * and its value written so that equal values compare equal as text. */
typedef struct run_option {
    const char *key, *option;
    char value[96];
} run_option;

enum { RUN_OPTION_COUNT = 10 };

static void run_options(const ct_train_config *config, run_option out[RUN_OPTION_COUNT])
{
    int n = 0;
    out[n] = (run_option){"ctorch.train.model", "--model", ""};
    snprintf(out[n++].value, sizeof out->value, "%s", ct_train_model_name(config->model));
    out[n] = (run_option){"ctorch.train.optimizer", "--optimizer", ""};
    snprintf(out[n++].value, sizeof out->value, "%s", ct_train_optimizer_name(config->optimizer));
    out[n] = (run_option){"ctorch.train.lr", "--lr", ""};
    ct_train_format_number(config->lr, out[n++].value, sizeof out->value);
    out[n] = (run_option){"ctorch.train.batch_size", "--batch-size", ""};
    snprintf(out[n++].value, sizeof out->value, "%lld", (long long)config->batch_size);
    out[n] = (run_option){"ctorch.train.split_seed", "--seed", ""};
    snprintf(out[n++].value, sizeof out->value, "%" PRIu64, config->seed);
    out[n] = (run_option){"ctorch.train.lr_schedule", "--lr-schedule", ""};
    ct_train_schedule_format(&config->schedule, out[n++].value, sizeof out->value);
    out[n] = (run_option){"ctorch.train.clip_grad", "--clip-grad", ""};
    ct_train_format_number(config->clip_grad, out[n++].value, sizeof out->value);
    out[n] = (run_option){"ctorch.train.val_fraction", "--val-fraction", ""};
    ct_train_format_number(config->val_fraction, out[n++].value, sizeof out->value);
    out[n] = (run_option){"ctorch.train.amp", "--amp", ""};
    snprintf(out[n++].value, sizeof out->value, "%s", ct_train_amp_name(config->amp));
    out[n] = (run_option){"ctorch.train.drop_last", "--drop-last", ""};
    snprintf(out[n++].value, sizeof out->value, "%s", config->drop_last ? "yes" : "no");
}

#define KEY_TRAIN_SAMPLES "ctorch.train.train_samples"
#define KEY_DATA_CHECKSUM "ctorch.train.data_checksum"

/* The training split's checksum as the file keeps it ("unknown" when it cannot be read back). */
static void data_checksum(const ct_train_data *data, char *out, size_t size)
{
    uint64_t digest;
    if (ct_train_data_digest(data->train, &digest)) snprintf(out, size, "%016" PRIx64, digest);
    else snprintf(out, size, "unknown");
}

#define KEY_AMP_SCALE "ctorch.train.amp_scale"
#define KEY_AMP_GROWTH_TRACKER "ctorch.train.amp_growth_tracker"

static ct_status set_number(ct_state_dict *sd, const char *key, long long value)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", value);
    return ct_state_dict_set_metadata(sd, key, text);
}

/* Adds the optimizer's state dict to sd under "optimizer." names. */
static ct_status add_optimizer_state(ct_state_dict *sd, const ct_state_dict *optimizer)
{
    ct_status status = CT_OK;
    char name[512];
    for (int64_t i = 0; status == CT_OK && i < ct_state_dict_count(optimizer); i++) {
        snprintf(name, sizeof name, CT_TRAIN_OPTIMIZER_PREFIX "%s", ct_state_dict_name_at(optimizer, i));
        ct_tensor *t = ct_state_dict_tensor_at(optimizer, i);
        status = t ? ct_state_dict_add(sd, name, t) : ct_last_error();
        ct_release(t);
    }
    return status;
}

ct_status ct_train_checkpoint_save_run(const ct_module *model, const ct_train_data *data,
                                       const ct_train_config *config, const ct_train_state *state,
                                       const char *path)
{
    ct_state_dict *sd = ct_train_checkpoint_state_dict(model, config->model, data->features, data->classes,
                                                       config->seed);
    if (!sd) return CT_ERR_INVALID_ARGUMENT;
    run_option options[RUN_OPTION_COUNT];
    run_options(config, options);
    ct_status status = CT_OK;
    for (int i = 0; status == CT_OK && i < RUN_OPTION_COUNT; i++)
        status = ct_state_dict_set_metadata(sd, options[i].key, options[i].value);
    if (status == CT_OK) status = ct_train_checkpoint_set_scale(sd, data->feature_scale);
    if (status == CT_OK) status = set_number(sd, KEY_EPOCH, state->epoch);
    if (status == CT_OK) status = set_number(sd, KEY_EPOCHS, config->epochs);
    if (status == CT_OK) status = set_number(sd, KEY_SCHEDULE_STEPS, (long long)state->schedule_steps);
    if (status == CT_OK && config->amp == CT_F16) {
        char scale[32];
        ct_train_format_number(state->amp_scale, scale, sizeof scale);
        status = ct_state_dict_set_metadata(sd, KEY_AMP_SCALE, scale);
        if (status == CT_OK) status = set_number(sd, KEY_AMP_GROWTH_TRACKER, (long long)state->amp_growth_tracker);
    }
    if (status == CT_OK) status = set_number(sd, KEY_TRAIN_SAMPLES, (long long)ct_dataset_size(data->train));
    char checksum[32];
    data_checksum(data, checksum, sizeof checksum);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, KEY_DATA_CHECKSUM, checksum);
    if (status == CT_OK && state->optimizer) status = add_optimizer_state(sd, state->optimizer);
    if (status == CT_OK && state->rng) status = ct_state_dict_add(sd, CT_TRAIN_RNG_STATE_NAME, state->rng);
    if (status != CT_OK)
        status = ct_train_fail_library("the checkpoint's training state");
    else if (ct_save(sd, path) != CT_OK)
        status = ct_train_fail_library("saving the checkpoint");
    ct_state_dict_free(sd);
    return status;
}

static bool is_resume_entry(const char *name)
{
    return !strncmp(name, CT_TRAIN_OPTIMIZER_PREFIX, strlen(CT_TRAIN_OPTIMIZER_PREFIX)) ||
           !strcmp(name, CT_TRAIN_RNG_STATE_NAME);
}

static bool matches_resume_entry(const char *name, void *context)
{
    (void)context;
    return is_resume_entry(name);
}

ct_status ct_train_checkpoint_drop_resume_state(ct_state_dict *sd)
{
    return ct_state_dict_remove_matching(sd, matches_resume_entry, NULL);
}

/* The metadata number key of sd, from 0 to max. */
static bool metadata_count(const ct_state_dict *sd, const char *key, long long max, long long *out)
{
    const char *text = ct_state_dict_metadata(sd, key);
    if (!text || *text < '0' || *text > '9') return false;
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || *end || value > max) return false;
    *out = value;
    return true;
}

/* The checks of a resume: the options, the data and the epochs. */
static ct_status check_run(const char *path, const ct_state_dict *sd, const ct_train_data *data,
                           const ct_train_config *config, long long *epoch)
{
    long long epochs, steps, samples = -1;
    if (!metadata_count(sd, KEY_EPOCH, 100000, epoch) || !metadata_count(sd, KEY_EPOCHS, 100000, &epochs) ||
        !metadata_count(sd, KEY_SCHEDULE_STEPS, INT64_MAX, &steps) || !ct_state_dict_contains(sd, CT_TRAIN_RNG_STATE_NAME))
        return ct_train_fail(CT_ERR_IO, "--resume %s holds no training state (the epoch, the optimizer's "
                             "and the generators' state): it was not saved by `ctorch train --save`, or by an "
                             "older ctorch; it can be evaluated (ctorch eval), not resumed", path);
    run_option options[RUN_OPTION_COUNT];
    run_options(config, options);
    for (int i = 0; i < RUN_OPTION_COUNT; i++) {
        const char *saved = ct_state_dict_metadata(sd, options[i].key);
        if (!saved && !strcmp(options[i].key, "ctorch.train.amp")) saved = "none"; /* saved before --amp */
        if (!saved && !strcmp(options[i].key, "ctorch.train.drop_last")) saved = "no"; /* before --drop-last */
        if (!saved || strcmp(saved, options[i].value))
            return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume %s was saved by a run with %s %s, and this "
                                 "run has %s %s: resume with the options of the run that saved it", path,
                                 options[i].option, saved ? saved : "(none)", options[i].option, options[i].value);
    }
    /* Saved before --scale: every run multiplied the features by 1/16. */
    char scale[32], saved_scale[32];
    const char *kept = ct_state_dict_metadata(sd, CT_TRAIN_KEY_FEATURE_SCALE);
    ct_train_format_number(data->feature_scale, scale, sizeof scale);
    if (kept) snprintf(saved_scale, sizeof saved_scale, "%s", kept);
    else ct_train_format_number(CT_TRAIN_DIGITS_SCALE, saved_scale, sizeof saved_scale);
    if (strcmp(saved_scale, scale))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume %s was saved by a run with --scale %s, and this "
                             "run has --scale %s: resume with the options of the run that saved it", path,
                             saved_scale, scale);
    const char *saved_checksum = ct_state_dict_metadata(sd, KEY_DATA_CHECKSUM);
    if (!metadata_count(sd, KEY_TRAIN_SAMPLES, INT64_MAX, &samples) || !saved_checksum)
        return ct_train_fail(CT_ERR_IO, "--resume %s holds no '%s' (a count) or '%s' in its __metadata__: the "
                             "data it trained on is unknown, so it cannot be resumed (it was saved by an older "
                             "ctorch, or changed); it can be evaluated (ctorch eval)", path, KEY_TRAIN_SAMPLES,
                             KEY_DATA_CHECKSUM);
    if (samples != ct_dataset_size(data->train))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume %s was saved by a run that trained on %lld "
                             "samples, and this run has %lld: resume with the same --data", path, samples,
                             (long long)ct_dataset_size(data->train));
    char checksum[32];
    data_checksum(data, checksum, sizeof checksum);
    if (strcmp(saved_checksum, checksum))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume %s was saved by a run that trained on other "
                             "data (checksum %s; this run's training split is %s), of the same number of "
                             "samples: resume with the same --data", path, saved_checksum, checksum);
    if (*epoch >= config->epochs)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume %s has finished %lld epoch%s already: --epochs "
                             "is the run's total, so give more than %lld", path, *epoch, *epoch == 1 ? "" : "s",
                             *epoch);
    ct_train_schedule_kind kind = config->schedule.kind;
    if ((kind == CT_TRAIN_SCHEDULE_COSINE || kind == CT_TRAIN_SCHEDULE_ONECYCLE) && epochs != config->epochs)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--resume %s: its --lr-schedule %s is laid out over %lld "
                             "epochs, and this run has --epochs %d: give --epochs %lld", path,
                             kind == CT_TRAIN_SCHEDULE_COSINE ? "cosine" : "onecycle", epochs, config->epochs,
                             epochs);
    /* The schedule's count follows from the epochs done: found now, not after an epoch has trained. */
    long long expected = 0;
    if (kind == CT_TRAIN_SCHEDULE_ONECYCLE)
        expected = *epoch * (long long)ct_train_batches_per_epoch(config, samples,
                                                                  config->distributed ? ct_dist_world_size() : 1);
    else if (kind != CT_TRAIN_SCHEDULE_NONE)
        expected = *epoch;
    if (steps != expected)
        return ct_train_fail(CT_ERR_IO, "--resume %s: its '%s' is %lld, but after %lld epoch%s of its "
                             "--lr-schedule it is %lld: the file was changed, or not saved by this run", path,
                             KEY_SCHEDULE_STEPS, steps, *epoch, *epoch == 1 ? "" : "s", expected);
    return CT_OK;
}

/* The optimizer's entries of sd, without their prefix, as a new state dict. */
static ct_state_dict *optimizer_part(const ct_state_dict *sd)
{
    ct_state_dict *out = ct_state_dict_create();
    size_t length = strlen(CT_TRAIN_OPTIMIZER_PREFIX);
    ct_status status = out ? CT_OK : ct_last_error();
    for (int64_t i = 0; status == CT_OK && i < ct_state_dict_count(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        if (strncmp(name, CT_TRAIN_OPTIMIZER_PREFIX, length)) continue;
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        status = t ? ct_state_dict_add(out, name + length, t) : ct_last_error();
        ct_release(t);
    }
    if (status != CT_OK) {
        ct_state_dict_free(out);
        return NULL;
    }
    return out;
}

/* --amp fp16: the gradient scaler's scale and growth tracker. */
static ct_status read_scaler_state(const char *path, const ct_state_dict *sd, ct_train_state *out)
{
    const char *scale = ct_state_dict_metadata(sd, KEY_AMP_SCALE);
    long long tracker = 0;
    char *end = NULL;
    errno = 0;
    double value = scale ? strtod(scale, &end) : 0;
    if (!scale || errno || *end || !(value > 0) || !metadata_count(sd, KEY_AMP_GROWTH_TRACKER, INT64_MAX, &tracker))
        return ct_train_fail(CT_ERR_IO, "--resume %s holds no gradient scaler's state (%s, %s) for --amp fp16",
                             path, KEY_AMP_SCALE, KEY_AMP_GROWTH_TRACKER);
    out->amp_scale = value;
    out->amp_growth_tracker = tracker;
    return CT_OK;
}

ct_status ct_train_checkpoint_resume(const char *path, const ct_train_data *data, const ct_train_config *config,
                                     ct_module *model, ct_train_state *out)
{
    *out = (ct_train_state){0};
    ct_state_dict *sd = ct_load(path, "cpu");
    if (!sd) return ct_train_fail_library("--resume: loading the checkpoint");
    long long epoch = 0;
    ct_status status = check_run(path, sd, data, config, &epoch);
    if (status == CT_OK) {
        out->epoch = (int)epoch;
        long long steps = 0;
        metadata_count(sd, KEY_SCHEDULE_STEPS, INT64_MAX, &steps);
        out->schedule_steps = steps;
        out->rng = ct_state_dict_get(sd, CT_TRAIN_RNG_STATE_NAME);
        out->optimizer = optimizer_part(sd);
        if (!out->rng || !out->optimizer) status = ct_train_fail_library("--resume: reading the training state");
        if (status == CT_OK && config->amp == CT_F16) status = read_scaler_state(path, sd, out);
    }
    if (status == CT_OK && ct_train_checkpoint_drop_resume_state(sd) != CT_OK)
        status = ct_train_fail_library("--resume: reading the checkpoint");
    if (status == CT_OK) status = ct_train_checkpoint_check_dtypes(sd, path);
    if (status == CT_OK && ct_module_load_state_dict(model, sd, true, NULL) != CT_OK) {
        char what[512];
        snprintf(what, sizeof what, "--resume %s does not fit the %s model", path, ct_train_model_name(config->model));
        status = ct_train_fail_library(what);
    }
    ct_state_dict_free(sd);
    if (status != CT_OK) ct_train_state_free(out);
    return status;
}

void ct_train_state_free(ct_train_state *state)
{
    if (!state) return;
    ct_state_dict_free(state->optimizer);
    ct_release(state->rng);
    *state = (ct_train_state){0};
}
