/* Checkpoints of `ctorch train --save`: the model's state dict (safetensors, ct_save) with the
 * model's kind, its sizes and the split's seed in __metadata__, so that `ctorch eval` can rebuild
 * the model and test it on the samples it was not trained on. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "train.h"

#define KEY_MODEL "ctorch.train.model"
#define KEY_FEATURES "ctorch.train.features"
#define KEY_CLASSES "ctorch.train.classes"
#define KEY_SPLIT_SEED "ctorch.train.split_seed"
/* Bounds on the sizes a file may ask for, so that a bad file cannot make us allocate gigabytes. */
#define MAX_FEATURES (1 << 20)
#define MAX_CLASSES (1 << 20)

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

static ct_status read_metadata(const ct_state_dict *sd, const char *path, ct_train_checkpoint *out)
{
    const char *model = ct_state_dict_metadata(sd, KEY_MODEL);
    if (!model)
        return ct_train_fail(CT_ERR_IO, "%s has no '" KEY_MODEL "' in its __metadata__: it "
                             "was not saved by `ctorch train --save`, so the model to rebuild is unknown", path);
    if (!ct_train_model_parse(model, &out->kind))
        return ct_train_fail(CT_ERR_IO, "%s: the model '%s' in its __metadata__ is not one "
                             "of mlp, cnn", path, model);
    uint64_t features, classes;
    if (!metadata_number(sd, KEY_FEATURES, MAX_FEATURES, &features) ||
        !metadata_number(sd, KEY_CLASSES, MAX_CLASSES, &classes) ||
        !metadata_number(sd, KEY_SPLIT_SEED, UINT64_MAX, &out->split_seed))
        return ct_train_fail(CT_ERR_IO, "%s: its __metadata__ lacks a number (within bounds) for '"
                             KEY_FEATURES "', '" KEY_CLASSES "' or '" KEY_SPLIT_SEED "'", path);
    out->features = (int64_t)features;
    out->classes = (int64_t)classes;
    return CT_OK;
}

ct_status ct_train_checkpoint_load(const char *path, const char *map_location, ct_train_checkpoint *out)
{
    *out = (ct_train_checkpoint){0};
    ct_state_dict *sd = ct_load(path, map_location);
    if (!sd) return ct_train_fail_library("loading the checkpoint");
    ct_status status = read_metadata(sd, path, out);
    /* From here on every failure is the file's: CT_ERR_IO, as ct_load reports bad files. */
    if (status == CT_OK && ct_state_dict_strip_prefix(sd, "module.") != CT_OK) {
        ct_train_fail_library(path);
        status = CT_ERR_IO;
    }
    /* A resumable checkpoint's optimizer and generator state is not the model's. */
    if (status == CT_OK && ct_train_checkpoint_drop_resume_state(sd) != CT_OK) {
        ct_train_fail_library(path);
        status = CT_ERR_IO;
    }
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
