/* The data of `ctorch train`: a CSV file (the shipped digits by default), split with a seed. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "train.h"

static int compare_labels(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* How many distinct labels ds holds (-1 when they cannot be read back): what a message about a
 * label far above the rest reports. */
static int64_t distinct_labels(const ct_dataset *ds)
{
    ct_tensor *labels = ct_dataset_labels(ds);
    int64_t n = labels ? ct_numel(labels) : 0, distinct = -1;
    int64_t *values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
    if (labels && values && ct_tensor_to_array(labels, values, (size_t)n * sizeof *values) == CT_OK) {
        qsort(values, (size_t)n, sizeof *values, compare_labels);
        distinct = 0;
        for (int64_t i = 0; i < n; i++) distinct += i == 0 || values[i] != values[i - 1];
    }
    free(values);
    ct_release(labels);
    return distinct;
}

double ct_train_data_default_scale(const char *path)
{
    if (!path) return CT_TRAIN_DIGITS_SCALE;
    const char *digits = ct_default_dataset_path();
    struct stat a, b;
    bool same = digits && stat(path, &a) == 0 && stat(digits, &b) == 0 && a.st_dev == b.st_dev &&
                a.st_ino == b.st_ino;
    if (!digits) ct_clear_error(); /* not finding the digits only means path is not them */
    return same ? CT_TRAIN_DIGITS_SCALE : 1.0;
}

ct_status ct_train_data_load(const char *path, uint64_t split_seed, ct_train_data *out)
{
    return ct_train_data_load_scaled(path, 0, split_seed, out);
}

ct_status ct_train_data_load_scaled(const char *path, double scale, uint64_t split_seed, ct_train_data *out)
{
    *out = (ct_train_data){0};
    if (scale == 0) scale = ct_train_data_default_scale(path);
    if (!path) {
        path = ct_default_dataset_path();
        if (!path) return ct_train_fail_library("the digits data set");
    }
    ct_csv_options options = ct_csv_options_default();
    options.feature_scale = scale;
    ct_dataset *all = ct_csv_dataset_load(path, &options);
    if (!all) return ct_train_fail_library("reading the data");
    int64_t classes = ct_dataset_num_classes(all);
    if (classes > CT_TRAIN_MAX_CLASSES) {
        int64_t distinct = distinct_labels(all);
        ct_dataset_free(all);
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "%s: the largest label (the last column) is %lld, so the "
                             "model would have %lld classes, more than the %d that train and eval take; %lld "
                             "distinct label%s seen: number the classes from 0", path, (long long)classes - 1,
                             (long long)classes, CT_TRAIN_MAX_CLASSES, (long long)distinct,
                             distinct == 1 ? " was" : "s were");
    }
    if (classes < 2) {
        ct_dataset_free(all);
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "%s: the labels (the last column) hold %lld "
                             "class; training needs at least 2", path, (long long)classes);
    }
    ct_status status = ct_dataset_split(all, CT_TRAIN_TEST_FRACTION, split_seed, &out->train, &out->test);
    out->features = ct_dataset_num_features(all);
    out->classes = classes;
    out->feature_scale = scale;
    ct_dataset_free(all);
    if (status != CT_OK) return ct_train_fail_library("splitting the data");
    return CT_OK;
}

ct_status ct_train_data_hold_out(ct_train_data *data, double fraction, uint64_t seed)
{
    if (fraction == 0.0) return CT_OK;
    int64_t n = ct_dataset_size(data->train);
    if (!(fraction > 0.0 && fraction < 1.0))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--val-fraction %g is not a fraction above 0 and below 1 "
                             "(0: no validation)", fraction);
    /* ct_dataset_split's count, checked first to say it in the options' terms. */
    double held = ceil(fraction * (double)n);
    if (held < 1.0 || held >= (double)n)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--val-fraction %g of the %lld training samples leaves %s "
                             "without a sample", fraction, (long long)n, held < 1.0 ? "validation" : "training");
    ct_dataset *train = NULL, *val = NULL;
    if (ct_dataset_split(data->train, fraction, seed, &train, &val) != CT_OK)
        return ct_train_fail_library("holding out the validation samples");
    ct_dataset_free(data->train);
    data->train = train;
    data->val = val;
    return CT_OK;
}

/* FNV-1a over a dataset's features and labels: ranks that read different data (another file, or
 * one that differs on another machine) would train different models without a word. false when
 * there is no memory to read them back. */
bool ct_train_data_digest(const ct_dataset *ds, uint64_t *out)
{
    uint64_t h = 14695981039346656037ULL;
    ct_tensor *parts[2] = {ct_dataset_features(ds), ct_dataset_labels(ds)};
    bool read = true;
    for (int p = 0; p < 2 && read; p++) {
        size_t bytes = parts[p] ? (size_t)ct_numel(parts[p]) * ct_dtype_size(ct_tensor_dtype(parts[p])) : 0;
        unsigned char *copy = malloc(bytes ? bytes : 1);
        read = parts[p] && copy && ct_tensor_to_array(parts[p], copy, bytes) == CT_OK;
        for (size_t i = 0; read && i < bytes; i++) h = (h ^ copy[i]) * 1099511628211ULL;
        free(copy);
    }
    ct_release(parts[0]);
    ct_release(parts[1]);
    *out = h;
    return read;
}

void ct_train_data_free(ct_train_data *data)
{
    if (!data) return;
    ct_dataset_free(data->train);
    ct_dataset_free(data->test);
    ct_dataset_free(data->val);
    *data = (ct_train_data){0};
}
