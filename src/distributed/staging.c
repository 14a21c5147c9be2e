/* Host memory for collectives on tensors MPI cannot take as they are (device tensors, views):
 * one pinned buffer per process group, grown when a larger collective needs it and kept between
 * collectives, so that a training loop's all-reduces touch no fresh pages and copy to and from
 * devices at full speed. */
#include "distributed/dist_internal.h"

/* Growth rounds up to this, so that slowly growing sizes do not reallocate every time. */
#define STAGING_GRANULE ((size_t)1 << 20)

void *ct_dist_host_data(const ct_tensor *t)
{
    if (t->storage->device.type != CT_CPU || !ct_is_contiguous(t) || ct_numel(t) == 0) return NULL;
    return (char *)ct_tensor_handle(t) + (size_t)t->offset * ct_dtype_size(t->dtype);
}

void ct_dist_staging_free(ct_dist_group *group)
{
    ct_release(group->staging);
    group->staging = NULL;
}

ct_tensor *ct_dist_staging_view(ct_dist_group *group, const char *function, ct_dtype dtype,
                                const int64_t *shape, int ndim)
{
    size_t bytes = (size_t)ct_shape_numel(shape, ndim) * ct_dtype_size(dtype);
    size_t held = group->staging ? group->staging->storage->nbytes : 0;
    if (!group->staging || bytes > held) {
        ct_dist_staging_free(group);
        size_t rounded = bytes ? (bytes + STAGING_GRANULE - 1) / STAGING_GRANULE * STAGING_GRANULE
                               : STAGING_GRANULE;
        int64_t size[1] = {(int64_t)rounded};
        group->staging = ct_tensor_alloc_pinned(function, CT_U8, size, 1);
        if (!group->staging) return NULL;
    }
    int64_t strides[CT_MAX_DIMS];
    ct_contiguous_strides(shape, ndim, strides);
    ct_tensor *view = ct_tensor_view_of(group->staging, ndim, shape, strides, 0);
    if (view) view->dtype = dtype;
    return view;
}
