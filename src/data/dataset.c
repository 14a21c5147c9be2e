/* Datasets in host memory: features float32 [N, F] and labels int64 [N], their subsets, and the
 * seeded train/test split.
 *
 * Every public function here runs nested in the API (ct_api_enter ... ct_api_return), so that
 * the tensors it makes and drops for itself never touch the caller's scopes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

ct_dataset *ct_dataset_adopt(ct_tensor *features, ct_tensor *labels, int64_t num_classes)
{
    ct_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        ct_release(features);
        ct_release(labels);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for a dataset");
    }
    ds->features = features;
    ds->labels = labels;
    ds->size = features->shape[0];
    ds->num_features = features->shape[1];
    ds->num_classes = num_classes;
    return ds;
}

static const float *features_data(const ct_dataset *ds)
{
    return (const float *)ct_tensor_handle(ds->features) + ds->features->offset;
}

static const int64_t *labels_data(const ct_dataset *ds)
{
    return (const int64_t *)ct_tensor_handle(ds->labels) + ds->labels->offset;
}

ct_dataset *ct_dataset_subset(const ct_dataset *ds, const int64_t *indices, int64_t count)
{
    int64_t fshape[2] = {count, ds->num_features}, lshape[1] = {count};
    ct_tensor *features = ct_tensor_alloc("ct_dataset_split", CT_DEVICE_CPU, CT_F32, fshape, 2);
    ct_tensor *labels = features ? ct_tensor_alloc("ct_dataset_split", CT_DEVICE_CPU, CT_I64, lshape, 1) : NULL;
    if (!labels) {
        ct_release(features);
        return NULL;
    }
    const float *from_x = features_data(ds);
    const int64_t *from_y = labels_data(ds);
    float *to_x = ct_tensor_handle(features);
    int64_t *to_y = ct_tensor_handle(labels);
    size_t row = (size_t)ds->num_features;
    for (int64_t i = 0; i < count; i++) {
        if (row) memcpy(to_x + (size_t)i * row, from_x + (size_t)indices[i] * row, row * sizeof(float));
        to_y[i] = from_y[indices[i]];
    }
    return ct_dataset_adopt(features, labels, ds->num_classes);
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

void ct_dataset_free(ct_dataset *ds)
{
    if (!ds) return;
    ct_api_enter();
    ct_release(ds->features);
    ct_release(ds->labels);
    ct_api_return(NULL);
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

ct_tensor *ct_dataset_features(const ct_dataset *ds)
{
    CT_API_ENTER;
    if (!ds) return ct_api_return(ct_null_argument("ct_dataset_features", "ds"));
    return ct_api_return(ct_retain(ds->features));
}

ct_tensor *ct_dataset_labels(const ct_dataset *ds)
{
    CT_API_ENTER;
    if (!ds) return ct_api_return(ct_null_argument("ct_dataset_labels", "ds"));
    return ct_api_return(ct_retain(ds->labels));
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
    ct_dataset *test_part = ct_dataset_subset(ds, order, n_test);
    ct_dataset *train_part = test_part ? ct_dataset_subset(ds, order + n_test, n_train) : NULL;
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
