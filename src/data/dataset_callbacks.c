/* Datasets defined by code (torch.utils.data.Dataset: __len__ and __getitem__), their subsets
 * (torch.utils.data.Subset), and reading one sample of any dataset into caller buffers. */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

#define FN_CREATE "ct_dataset_from_callbacks"

static ct_status check_spec(const ct_sample_spec *spec, int k)
{
    if (!ct_dtype_is_valid((int)spec->dtype))
        return ct_error(CT_ERR_DTYPE, FN_CREATE ": samples[%d].dtype is %d, which is no ctorch dtype", k,
                        (int)spec->dtype);
    if (spec->ndim < 0 || spec->ndim > CT_MAX_DIMS - 1)
        return ct_error(CT_ERR_SHAPE, FN_CREATE ": samples[%d].ndim is %d; it must be 0 (a scalar) to %d "
                        "(one dimension is left for the batch)", k, spec->ndim, CT_MAX_DIMS - 1);
    for (int d = 0; d < spec->ndim; d++)
        if (spec->shape[d] < 0)
            return ct_error(CT_ERR_SHAPE, FN_CREATE ": samples[%d].shape[%d] is %lld; sizes must be >= 0", k, d,
                            (long long)spec->shape[d]);
    return CT_OK;
}

static ct_dataset *from_callbacks(const ct_dataset_callbacks *callbacks, void *user, const ct_sample_spec *samples,
                                  int count)
{
    if (!callbacks) return ct_null_argument(FN_CREATE, "callbacks");
    if (!callbacks->len) return ct_null_argument(FN_CREATE, "callbacks->len");
    if (!callbacks->get_item) return ct_null_argument(FN_CREATE, "callbacks->get_item");
    if (!samples) return ct_null_argument(FN_CREATE, "samples");
    if (count < 1 || count > CT_DATASET_MAX_TENSORS)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": count is %d; a sample holds 1 to %d tensors",
                             count, CT_DATASET_MAX_TENSORS);
    for (int k = 0; k < count; k++)
        if (check_spec(&samples[k], k) != CT_OK) return NULL;
    int64_t size = callbacks->len(user);
    if (size < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": len() returned %lld; a dataset has >= 0 "
                             "samples", (long long)size);
    ct_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) return ct_error_null(CT_ERR_OUT_OF_MEMORY, FN_CREATE ": no host memory for a dataset");
    atomic_init(&ds->refcount, 1);
    ds->num_tensors = count;
    for (int k = 0; k < count; k++) {
        ds->samples[k] = samples[k];
        ds->sample_bytes[k] = (size_t)ct_shape_numel(samples[k].shape, samples[k].ndim) * ct_dtype_size(samples[k].dtype);
    }
    ds->callbacks = *callbacks;
    ds->user = user;
    ds->size = size;
    ds->num_features = ct_shape_numel(samples[0].shape, samples[0].ndim);
    return ds;
}

ct_dataset *ct_dataset_from_callbacks(const ct_dataset_callbacks *callbacks, void *user, const ct_sample_spec *samples,
                                      int count)
{
    ct_dataset *ds = from_callbacks(callbacks, user, samples, count);
    if (!ds && callbacks && callbacks->free_user) callbacks->free_user(user); /* taken over, also on failure */
    return ds;
}

ct_dataset *ct_dataset_callback_subset(const ct_dataset *ds, const int64_t *indices, int64_t count)
{
    ct_dataset *part = calloc(1, sizeof *part);
    int64_t *map = part ? malloc(sizeof *map * (size_t)(count ? count : 1)) : NULL;
    if (!map) {
        free(part);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_dataset_split: no host memory for a subset");
    }
    atomic_init(&part->refcount, 1);
    part->num_tensors = ds->num_tensors;
    memcpy(part->samples, ds->samples, sizeof part->samples);
    memcpy(part->sample_bytes, ds->sample_bytes, sizeof part->sample_bytes);
    /* a subset of a subset maps straight to the dataset with the callbacks */
    part->parent = ct_dataset_retain(ds->parent ? ds->parent : ds);
    for (int64_t i = 0; i < count; i++) map[i] = ds->indices ? ds->indices[indices[i]] : indices[i];
    part->indices = map;
    part->size = count;
    part->num_features = ds->num_features;
    part->num_classes = ds->num_classes;
    return part;
}

ct_status ct_dataset_read_sample(const ct_dataset *ds, int64_t index, void *const *buffers, const char *function)
{
    if (ds->parent) {
        index = ds->indices[index];
        ds = ds->parent;
    }
    if (ds->callbacks.get_item) {
        ct_status status = ds->callbacks.get_item(ds->user, index, buffers);
        if (status == CT_OK) return CT_OK;
        return ct_error(status == CT_END_OF_DATA ? CT_ERR_INVALID_ARGUMENT : status, "%s: the dataset's get_item "
                        "returned %s for sample %lld", function, ct_status_name(status), (long long)index);
    }
    for (int k = 0; k < ds->num_tensors; k++) {
        const ct_tensor *t = ds->tensors[k];
        const char *base = (const char *)ct_tensor_handle(t) + (size_t)t->offset * ct_dtype_size(t->dtype);
        if (ds->sample_bytes[k]) memcpy(buffers[k], base + (size_t)index * ds->sample_bytes[k], ds->sample_bytes[k]);
    }
    return CT_OK;
}

static ct_status get(const ct_dataset *ds, int64_t index, ct_tensor **out, int count)
{
    static const char *FN = "ct_dataset_get";
    if (!ds) return ct_null_argument(FN, "ds"), ct_last_error();
    if (!out) return ct_null_argument(FN, "out"), ct_last_error();
    if (count != ds->num_tensors)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: count is %d but this dataset's samples have %d tensors", FN,
                        count, ds->num_tensors);
    if (index < 0 || index >= ds->size)
        return ct_error(CT_ERR_INDEX, "%s: index %lld is out of range for a dataset of %lld samples", FN,
                        (long long)index, (long long)ds->size);
    void *buffers[CT_DATASET_MAX_TENSORS];
    for (int k = 0; k < count; k++) {
        out[k] = ct_tensor_alloc(FN, CT_DEVICE_CPU, ds->samples[k].dtype, ds->samples[k].shape, ds->samples[k].ndim);
        if (!out[k]) return ct_last_error();
        buffers[k] = ct_tensor_handle(out[k]);
    }
    return ct_dataset_read_sample(ds, index, buffers, FN);
}

ct_status ct_dataset_get(const ct_dataset *ds, int64_t index, ct_tensor **out, int count)
{
    ct_tensor *made[CT_DATASET_MAX_TENSORS] = {0};
    ct_api_enter();
    ct_status status = get(ds, index, made, count);
    ct_api_return(NULL);
    for (int k = 0; k < CT_DATASET_MAX_TENSORS; k++) {
        if (status != CT_OK) {
            ct_api_enter();
            ct_release(made[k]);
            ct_api_return(NULL);
            continue;
        }
        if (k >= count) break;
        ct_api_enter(); /* recorded in the caller's scope like any returned tensor */
        out[k] = ct_api_return(made[k]);
    }
    if (status != CT_OK && out)
        for (int k = 0; k < count && k < CT_DATASET_MAX_TENSORS; k++) out[k] = NULL;
    return status;
}
