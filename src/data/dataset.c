/* Datasets of tensors in host memory (TensorDataset; a CSV file's features float32 [N, F] and
 * labels int64 [N]), their subsets, and the seeded train/test split.
 *
 * Every public function here runs nested in the API (ct_api_enter ... ct_api_return), so that
 * the tensors it makes and drops for itself never touch the caller's scopes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

/* Fills the sample description of tensor k from a [N, ...] tensor. */
static void describe_sample(ct_dataset *ds, int k, const ct_tensor *t)
{
    ct_sample_spec *spec = &ds->samples[k];
    spec->dtype = t->dtype;
    spec->ndim = t->ndim - 1;
    for (int d = 1; d < t->ndim; d++) spec->shape[d - 1] = t->shape[d];
    ds->sample_bytes[k] = (size_t)ct_shape_numel(spec->shape, spec->ndim) * ct_dtype_size(t->dtype);
}

/* A dataset taking over count checked, contiguous CPU tensors [N, ...]. */
static ct_dataset *adopt_tensors(ct_tensor **tensors, int count, int64_t num_classes)
{
    ct_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        for (int k = 0; k < count; k++) ct_release(tensors[k]);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for a dataset");
    }
    atomic_init(&ds->refcount, 1);
    ds->num_tensors = count;
    for (int k = 0; k < count; k++) {
        ds->tensors[k] = tensors[k];
        describe_sample(ds, k, tensors[k]);
    }
    ds->size = tensors[0]->shape[0];
    ds->num_features = ct_shape_numel(ds->samples[0].shape, ds->samples[0].ndim);
    ds->num_classes = num_classes;
    return ds;
}

ct_dataset *ct_dataset_adopt(ct_tensor *features, ct_tensor *labels, int64_t num_classes)
{
    return adopt_tensors((ct_tensor *[]){features, labels}, 2, num_classes);
}

ct_dataset *ct_dataset_retain(const ct_dataset *ds)
{
    ct_dataset *mutable_ds = (ct_dataset *)ds; /* the refcount is not the dataset's value */
    atomic_fetch_add(&mutable_ds->refcount, 1);
    return mutable_ds;
}

ct_dataset *ct_dataset_subset(const ct_dataset *ds, const int64_t *indices, int64_t count)
{
    ct_tensor *parts[CT_DATASET_MAX_TENSORS] = {0};
    for (int k = 0; k < ds->num_tensors; k++) {
        const ct_tensor *from = ds->tensors[k];
        int64_t shape[CT_MAX_DIMS];
        memcpy(shape, from->shape, sizeof shape);
        shape[0] = count;
        parts[k] = ct_tensor_alloc("ct_dataset_split", CT_DEVICE_CPU, from->dtype, shape, from->ndim);
        if (!parts[k]) {
            for (int j = 0; j < k; j++) ct_release(parts[j]);
            return NULL;
        }
        size_t row = ds->sample_bytes[k];
        const char *source = (const char *)ct_tensor_handle(from) + (size_t)from->offset * ct_dtype_size(from->dtype);
        char *to = ct_tensor_handle(parts[k]);
        for (int64_t i = 0; i < count && row; i++)
            memcpy(to + (size_t)i * row, source + (size_t)indices[i] * row, row);
    }
    return adopt_tensors(parts, ds->num_tensors, ds->num_classes);
}

/* ---- a dataset over the caller's tensors ---- */

static ct_status check_tensors(const ct_tensor *features, const ct_tensor *labels)
{
    static const char *FN = "ct_dataset_from_tensors";
    char shape[256], other[256], device[CT_DEVICE_STRING_MAX];
    if (!features) return ct_null_argument(FN, "features"), ct_last_error();
    if (!labels) return ct_null_argument(FN, "labels"), ct_last_error();
    if (features->ndim != 2 || labels->ndim != 1 || labels->shape[0] != features->shape[0])
        return ct_error(CT_ERR_SHAPE, "%s: features have shape %s and labels %s; they must be "
                        "[N, F] and [N]", FN, ct_shape_format(features->shape, features->ndim, shape, sizeof shape),
                        ct_shape_format(labels->shape, labels->ndim, other, sizeof other));
    if (features->dtype != CT_F32 || labels->dtype != CT_I64)
        return ct_error(CT_ERR_DTYPE, "%s: features are %s and labels %s; they must be float32 and "
                        "int64", FN, ct_dtype_name(features->dtype), ct_dtype_name(labels->dtype));
    const ct_tensor *away = features->storage->device.type != CT_CPU ? features
                          : labels->storage->device.type != CT_CPU ? labels : NULL;
    if (away)
        return ct_error(CT_ERR_DEVICE, "%s: the %s are on %s; a dataset lives on the CPU (move "
                        "them with ct_to first)", FN, away == features ? "features" : "labels",
                        ct_device_format(away->storage->device, device, sizeof device));
    return CT_OK;
}

static ct_dataset *from_tensors(const ct_tensor *features, const ct_tensor *labels)
{
    if (check_tensors(features, labels) != CT_OK) return NULL;
    ct_tensor *x = ct_contiguous(features), *y = x ? ct_contiguous(labels) : NULL;
    if (!y) {
        ct_release(x);
        return NULL;
    }
    const int64_t *values = (const int64_t *)ct_tensor_handle(y) + y->offset;
    int64_t largest = -1;
    for (int64_t i = 0; i < y->shape[0]; i++) {
        if (values[i] < 0) {
            ct_release(x);
            ct_release(y);
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_dataset_from_tensors: label %lld "
                                 "(of sample %lld) is negative; labels are class indices >= 0",
                                 (long long)values[i], (long long)i);
        }
        if (values[i] > largest) largest = values[i];
    }
    return ct_dataset_adopt(x, y, largest + 1);
}

ct_dataset *ct_dataset_from_tensors(const ct_tensor *features, const ct_tensor *labels)
{
    ct_api_enter();
    ct_dataset *ds = from_tensors(features, labels);
    ct_api_return(NULL);
    return ds;
}

/* ---- TensorDataset ---- */

/* Largest label + 1 when t is int64 [N] without negative values, else 0. */
static int64_t count_classes(const ct_tensor *t)
{
    if (t->dtype != CT_I64 || t->ndim != 1) return 0;
    const int64_t *values = (const int64_t *)ct_tensor_handle(t) + t->offset;
    int64_t largest = -1;
    for (int64_t i = 0; i < t->shape[0]; i++) {
        if (values[i] < 0) return 0;
        if (values[i] > largest) largest = values[i];
    }
    return largest + 1;
}

static ct_dataset *tensor_dataset(ct_tensor *const *tensors, int count)
{
    static const char *FN = "ct_tensor_dataset";
    char shape[256], device[CT_DEVICE_STRING_MAX];
    if (!tensors) return ct_null_argument(FN, "tensors");
    if (count < 1 || count > CT_DATASET_MAX_TENSORS)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: count is %d; a sample holds 1 to %d tensors", FN,
                             count, CT_DATASET_MAX_TENSORS);
    for (int k = 0; k < count; k++) {
        const ct_tensor *t = tensors[k];
        if (!t) return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: tensors[%d] is NULL", FN, k);
        if (t->ndim < 1)
            return ct_error_null(CT_ERR_SHAPE, "%s: tensors[%d] is a scalar; every tensor needs a first "
                                 "dimension of samples", FN, k);
        if (t->shape[0] != tensors[0]->shape[0])
            return ct_error_null(CT_ERR_SHAPE, "%s: tensors[%d] has shape %s but tensors[0] has %lld "
                                 "samples; every tensor must have the same size in its first dimension "
                                 "(Size mismatch between tensors)", FN, k,
                                 ct_shape_format(t->shape, t->ndim, shape, sizeof shape),
                                 (long long)tensors[0]->shape[0]);
        if (t->storage->device.type != CT_CPU)
            return ct_error_null(CT_ERR_DEVICE, "%s: tensors[%d] is on %s; a dataset lives on the CPU (move "
                                 "it with ct_to first)", FN, k,
                                 ct_device_format(t->storage->device, device, sizeof device));
    }
    ct_tensor *parts[CT_DATASET_MAX_TENSORS] = {0};
    for (int k = 0; k < count; k++) {
        parts[k] = ct_contiguous(tensors[k]);
        if (!parts[k]) {
            for (int j = 0; j < k; j++) ct_release(parts[j]);
            return NULL;
        }
    }
    return adopt_tensors(parts, count, count > 1 ? count_classes(parts[1]) : 0);
}

ct_dataset *ct_tensor_dataset(ct_tensor *const *tensors, int count)
{
    ct_api_enter();
    ct_dataset *ds = tensor_dataset(tensors, count);
    ct_api_return(NULL);
    return ds;
}

void ct_dataset_free(ct_dataset *ds)
{
    if (!ds || atomic_fetch_sub(&ds->refcount, 1) != 1) return;
    ct_api_enter();
    for (int k = 0; k < ds->num_tensors; k++) ct_release(ds->tensors[k]);
    ct_api_return(NULL);
    if (ds->callbacks.free_user) ds->callbacks.free_user(ds->user);
    ct_dataset_free(ds->parent);
    free(ds->indices);
    free(ds);
}

int64_t ct_dataset_size(const ct_dataset *ds)
{
    if (!ds) return ct_null_argument("ct_dataset_size", "ds"), -1;
    return ds->size;
}
int64_t ct_dataset_num_features(const ct_dataset *ds)
{
    if (!ds) return ct_null_argument("ct_dataset_num_features", "ds"), -1;
    return ds->num_features;
}
int64_t ct_dataset_num_classes(const ct_dataset *ds)
{
    if (!ds) return ct_null_argument("ct_dataset_num_classes", "ds"), -1;
    return ds->num_classes;
}
int ct_dataset_num_tensors(const ct_dataset *ds)
{
    if (!ds) return ct_null_argument("ct_dataset_num_tensors", "ds"), -1;
    return ds->num_tensors;
}

ct_status ct_dataset_sample_spec(const ct_dataset *ds, int k, ct_sample_spec *spec)
{
    static const char *FN = "ct_dataset_sample_spec";
    if (!ds) return ct_null_argument(FN, "ds"), ct_last_error();
    if (!spec) return ct_null_argument(FN, "spec"), ct_last_error();
    if (k < 0 || k >= ds->num_tensors)
        return ct_error(CT_ERR_INDEX, "%s: k is %d; this dataset's samples have %d tensors", FN, k, ds->num_tensors);
    *spec = ds->samples[k];
    return CT_OK;
}

static ct_tensor *tensor_at(const char *function, const ct_dataset *ds, int k)
{
    if (!ds) return ct_null_argument(function, "ds");
    if (k < 0 || k >= ds->num_tensors)
        return ct_error_null(CT_ERR_INDEX, "%s: this dataset's samples have %d tensors; there is no tensor "
                             "%d", function, ds->num_tensors, k);
    if (!ds->tensors[k])
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: this dataset is defined by callbacks and holds no "
                             "tensors (read samples with ct_dataset_get or a loader)", function);
    return ct_retain(ds->tensors[k]);
}

ct_tensor *ct_dataset_tensor(const ct_dataset *ds, int k)
{
    CT_API_ENTER;
    return ct_api_return(tensor_at("ct_dataset_tensor", ds, k));
}

ct_tensor *ct_dataset_features(const ct_dataset *ds)
{
    CT_API_ENTER;
    return ct_api_return(tensor_at("ct_dataset_features", ds, 0));
}

ct_tensor *ct_dataset_labels(const ct_dataset *ds)
{
    CT_API_ENTER;
    return ct_api_return(tensor_at("ct_dataset_labels", ds, 1));
}

/* ---- train/test split ---- */

static ct_status split(const ct_dataset *ds, double test_fraction, uint64_t seed,
                       ct_dataset **train, ct_dataset **test)
{
    static const char *FN = "ct_dataset_split";
    if (!ds) return ct_null_argument(FN, "ds"), ct_last_error();
    if (!train) return ct_null_argument(FN, "train"), ct_last_error();
    if (!test) return ct_null_argument(FN, "test"), ct_last_error();
    if (!(test_fraction > 0.0 && test_fraction < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: test_fraction is %g; it must lie strictly "
                        "between 0 and 1", FN, test_fraction);
    int64_t n = ds->size;
    /* ceil, but not of the product's rounding error: 0.1 of 30 samples is 3, not 4 */
    double exact = test_fraction * (double)n;
    int64_t n_test = (int64_t)ceil(exact - 1e-9 * fmax(1.0, exact));
    int64_t n_train = n - n_test;
    if (n_test < 1 || n_train < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: with %lld samples and test_fraction %g the "
                        "%s part would be empty", FN, (long long)n, test_fraction,
                        n_train < 1 ? "train" : "test");
    int64_t *order = malloc((size_t)n * sizeof *order);
    if (!order) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld indices", FN, (long long)n);
    ct_data_permutation(n, seed, order);
    ct_dataset *(*subset)(const ct_dataset *, const int64_t *, int64_t) =
        ds->tensors[0] ? ct_dataset_subset : ct_dataset_callback_subset;
    ct_dataset *test_part = subset(ds, order, n_test);
    ct_dataset *train_part = test_part ? subset(ds, order + n_test, n_train) : NULL;
    free(order);
    if (!train_part) {
        ct_dataset_free(test_part);
        return ct_last_error();
    }
    *train = train_part;
    *test = test_part;
    return CT_OK;
}

ct_status ct_dataset_split(const ct_dataset *ds, double test_fraction, uint64_t seed,
                           ct_dataset **train, ct_dataset **test)
{
    if (train) *train = NULL;
    if (test) *test = NULL;
    ct_api_enter();
    ct_status status = split(ds, test_fraction, seed, train, test);
    ct_api_return(NULL);
    return status;
}
