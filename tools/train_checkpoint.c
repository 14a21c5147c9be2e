/* Checkpoints of `ctorch train --save`: the model's state dict (safetensors, ct_save) with the
 * model's kind, its sizes and the split's seed in __metadata__, so that `ctorch eval` can rebuild
 * the model and test it on the samples it was not trained on. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

#define KEY_MODEL "ctorch.train.model"
#define KEY_FEATURES "ctorch.train.features"
#define KEY_CLASSES "ctorch.train.classes"
#define KEY_SPLIT_SEED "ctorch.train.split_seed"
/* Bounds on the sizes a file may ask for, so that a bad file cannot make us allocate gigabytes. */
#define MAX_FEATURES CT_TRAIN_MAX_FEATURES
#define MAX_CLASSES CT_TRAIN_MAX_CLASSES

ct_state_dict *ct_train_checkpoint_state_dict(const ct_module *model, ct_train_model kind, int64_t features,
                                              int64_t classes, uint64_t split_seed)
{
    ct_state_dict *sd = ct_module_state_dict(model, NULL);
    if (!sd) {
        ct_train_fail_library("the model's state dict");
        return NULL;
    }
    char features_text[32], classes_text[32], seed_text[32];
    snprintf(features_text, sizeof features_text, "%lld", (long long)features);
    snprintf(classes_text, sizeof classes_text, "%lld", (long long)classes);
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, split_seed);
    ct_status status = CT_OK;
    if (ct_state_dict_set_metadata(sd, KEY_MODEL, ct_train_model_name(kind)) != CT_OK ||
        ct_state_dict_set_metadata(sd, KEY_FEATURES, features_text) != CT_OK ||
        ct_state_dict_set_metadata(sd, KEY_CLASSES, classes_text) != CT_OK ||
        ct_state_dict_set_metadata(sd, KEY_SPLIT_SEED, seed_text) != CT_OK)
        status = ct_train_fail_library("the checkpoint's metadata");
    if (status != CT_OK) {
        ct_state_dict_free(sd);
        return NULL;
    }
    return sd;
}

ct_status ct_train_checkpoint_save(const ct_module *model, ct_train_model kind, int64_t features,
                                   int64_t classes, uint64_t split_seed, const char *path)
{
    ct_state_dict *sd = ct_train_checkpoint_state_dict(model, kind, features, classes, split_seed);
    if (!sd) return CT_ERR_INVALID_ARGUMENT;
    ct_status status = ct_save(sd, path) == CT_OK ? CT_OK : ct_train_fail_library("saving the checkpoint");
    ct_state_dict_free(sd);
    return status;
}

ct_status ct_train_checkpoint_set_scale(ct_state_dict *sd, double scale)
{
    char text[32];
    ct_train_format_number(scale, text, sizeof text);
    return ct_state_dict_set_metadata(sd, CT_TRAIN_KEY_FEATURE_SCALE, text);
}

/* The training's feature scale: the file's, or, saved before it was kept, the 1/16 every run
 * applied then. false when the file's is not a positive finite number. */
static bool metadata_scale(const ct_state_dict *sd, double *out)
{
    const char *text = ct_state_dict_metadata(sd, CT_TRAIN_KEY_FEATURE_SCALE);
    if (!text) {
        *out = CT_TRAIN_DIGITS_SCALE;
        return true;
    }
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (*text == '\0' || *end || errno || !isfinite(value) || value <= 0) return false;
    *out = value;
    return true;
}

/* The metadata value key of sd as an unsigned integer, no larger than max. */
static bool metadata_number(const ct_state_dict *sd, const char *key, uint64_t max, uint64_t *out)
{
    const char *text = ct_state_dict_metadata(sd, key);
    if (!text || *text < '0' || *text > '9') return false;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || *end || value > max) return false;
    *out = value;
    return true;
}

/* forced: the model the caller names (NULL: the file's). */
static ct_status read_metadata(const ct_state_dict *sd, const char *path, const ct_train_model *forced,
                               ct_train_checkpoint *out)
{
    const char *model = ct_state_dict_metadata(sd, KEY_MODEL);
    /* Not saved by `ctorch train --save` (a PyTorch user's file): the tensors say. */
    if (!model) return ct_train_checkpoint_infer(sd, path, forced, out);
    if (!ct_train_model_parse(model, &out->kind))
        return ct_train_fail(CT_ERR_IO, "%s: the model '%s' in its __metadata__ is not one "
                             "of mlp, cnn", path, model);
    if (forced && *forced != out->kind)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "%s holds the %s model (its __metadata__ says so), not the %s",
                             path, model, ct_train_model_name(*forced));
    uint64_t features, classes;
    if (!metadata_number(sd, KEY_FEATURES, MAX_FEATURES, &features) ||
        !metadata_number(sd, KEY_CLASSES, MAX_CLASSES, &classes) ||
        !metadata_number(sd, KEY_SPLIT_SEED, UINT64_MAX, &out->split_seed))
        return ct_train_fail(CT_ERR_IO, "%s: its __metadata__ lacks a number (within bounds) for '"
                             KEY_FEATURES "', '" KEY_CLASSES "' or '" KEY_SPLIT_SEED "'", path);
    if (!metadata_scale(sd, &out->feature_scale))
        return ct_train_fail(CT_ERR_IO, "%s: its __metadata__'s '" CT_TRAIN_KEY_FEATURE_SCALE "' is '%s', not a "
                             "number above 0", path, ct_state_dict_metadata(sd, CT_TRAIN_KEY_FEATURE_SCALE));
    out->features = (int64_t)features;
    out->classes = (int64_t)classes;
    return CT_OK;
}

static void format_shape(const int64_t *shape, int ndim, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

/* Appends ", \"name\"" (or the first without the comma) to list. */
static void list_name(char *list, size_t size, const char *name)
{
    size_t used = strlen(list);
    if (used < size) snprintf(list + used, size - used, "%s\"%s\"", used ? ", " : "", name);
}

/* The file's tensors are those of the model its metadata describes, with its shapes. Checked before
 * that model is built: a small file whose metadata claims a huge model must not make eval allocate
 * it. The messages are those of the strict load that follows (ct_module_load_state_dict). */
static ct_status check_shapes(const ct_state_dict *sd, const char *path, const ct_train_checkpoint *c)
{
    ct_train_tensor_shape expected[CT_TRAIN_MODEL_TENSORS_MAX];
    int count = ct_train_model_shapes(c->kind, c->features, c->classes, expected);
    if (count < 0) return CT_ERR_IO; /* recorded */
    char missing[256] = "", unexpected[256] = "", model[640];
    snprintf(model, sizeof model, "%s does not fit the %s model %s (%lld features, %lld classes)", path,
             ct_train_model_name(c->kind),
             c->inferred ? "its tensors describe (it has no ctorch __metadata__)" : "of its __metadata__",
             (long long)c->features, (long long)c->classes);
    for (int k = 0; k < count; k++)
        if (!ct_state_dict_contains(sd, expected[k].name)) list_name(missing, sizeof missing, expected[k].name);
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        bool known = false;
        for (int k = 0; k < count && !known; k++) known = strcmp(name, expected[k].name) == 0;
        if (!known) list_name(unexpected, sizeof unexpected, name);
    }
    if (missing[0] || unexpected[0])
        return ct_train_fail(CT_ERR_IO, "%s: Missing key(s): %s; Unexpected key(s): %s", model,
                             missing[0] ? missing : "none", unexpected[0] ? unexpected : "none");
    for (int k = 0; k < count; k++) {
        const ct_train_tensor_shape *e = &expected[k];
        ct_tensor *t = ct_state_dict_get(sd, e->name);
        int ndim = ct_tensor_ndim(t);
        bool same = ndim == e->ndim && memcmp(ct_tensor_shape(t), e->shape, (size_t)ndim * sizeof(int64_t)) == 0;
        char want[96], have[96];
        format_shape(e->shape, e->ndim, want, sizeof want);
        format_shape(ct_tensor_shape(t), ndim, have, sizeof have);
        ct_release(t);
        if (!same) return ct_train_fail(CT_ERR_IO, "%s: its '%s' is %s, but the file's is %s", model, e->name, want, have);
    }
    return ct_train_checkpoint_check_dtypes(sd, path);
}

ct_status ct_train_checkpoint_check_dtypes(const ct_state_dict *sd, const char *path)
{
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        if (!strncmp(name, CT_TRAIN_OPTIMIZER_PREFIX, strlen(CT_TRAIN_OPTIMIZER_PREFIX)) ||
            !strcmp(name, CT_TRAIN_RNG_STATE_NAME))
            continue;
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        ct_dtype dtype = t ? ct_tensor_dtype(t) : CT_F32;
        ct_release(t);
        if (!ct_dtype_is_floating(dtype))
            return ct_train_fail(CT_ERR_IO, "%s: its '%s' holds %s, and the model's parameters are float32: a "
                                 "floating-point tensor is converted, an integer or bool one is refused (it is "
                                 "not a trained weight)", path, name, ct_dtype_name(dtype));
    }
    return CT_OK;
}

ct_status ct_train_checkpoint_load(const char *path, const char *map_location, ct_train_checkpoint *out)
{
    return ct_train_checkpoint_load_model(path, map_location, NULL, out);
}

ct_status ct_train_checkpoint_load_model(const char *path, const char *map_location, const ct_train_model *model,
                                         ct_train_checkpoint *out)
{
    *out = (ct_train_checkpoint){0};
    ct_state_dict *sd = ct_load(path, map_location);
    if (!sd) return ct_train_fail_library("loading the checkpoint");
    /* From here on every failure is the file's: CT_ERR_IO, as ct_load reports bad files. */
    ct_status status = CT_OK;
    if (ct_state_dict_strip_prefix(sd, "module.") != CT_OK) {
        ct_train_fail_library(path);
        status = CT_ERR_IO;
    }
    /* A resumable checkpoint's optimizer and generator state is not the model's. */
    if (status == CT_OK && ct_train_checkpoint_drop_resume_state(sd) != CT_OK) {
        ct_train_fail_library(path);
        status = CT_ERR_IO;
    }
    if (status == CT_OK) status = read_metadata(sd, path, model, out);
    if (status == CT_OK) status = check_shapes(sd, path, out);
    if (status == CT_OK) {
        out->model = ct_train_model_create(out->kind, out->features, out->classes);
        if (!out->model) status = CT_ERR_IO; /* the message is recorded */
    }
    if (status == CT_OK && ct_module_load_state_dict(out->model, sd, true, NULL) != CT_OK) {
        char what[512];
        snprintf(what, sizeof what, "%s does not fit the %s model", path, ct_train_model_name(out->kind));
        ct_train_fail_library(what);
        status = CT_ERR_IO;
    }
    ct_state_dict_free(sd);
    if (status != CT_OK) ct_train_checkpoint_free(out);
    return status;
}

void ct_train_checkpoint_free(ct_train_checkpoint *checkpoint)
{
    if (!checkpoint) return;
    ct_module_release(checkpoint->model);
    *checkpoint = (ct_train_checkpoint){0};
}
