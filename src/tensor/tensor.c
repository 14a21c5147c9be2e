/* Tensors and their storage: creation of the records, reference counts, what a tensor is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/graph_pool.h"
#include "device/capture.h"
#include "tensor/autograd_node.h"
#include "tensor/tensor_internal.h"

int64_t ct_shape_numel(const int64_t *shape, int ndim)
{
    /* An empty tensor may have other dims whose product overflows: its count is 0 all the same.
     * Other shapes were checked against the address space when their tensor was made. */
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0) return 0;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

void ct_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides)
{
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        /* Only an empty tensor can have dims whose product overflows (creation checks numel);
         * its strides are never used to address anything, so they saturate. */
        int64_t size = shape[d] > 1 ? shape[d] : 1;
        stride = stride > INT64_MAX / size ? INT64_MAX : stride * size;
    }
}

const char *ct_shape_format(const int64_t *shape, int ndim, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* The byte count of a new tensor, after checking dtype, dims, sizes and overflow. */
static ct_status checked_bytes(const char *function, ct_dtype dtype, const int64_t *shape, int ndim,
                               size_t *bytes)
{
    if (!ct_dtype_is_valid(dtype))
        return ct_error(CT_ERR_DTYPE, "%s: dtype %d is not a ct_dtype", function, (int)dtype);
    if (ndim < 0 || ndim > CT_MAX_DIMS)
        return ct_error(CT_ERR_SHAPE, "%s: %d dims asked; ctorch tensors have 0 to %d dims",
                        function, ndim, CT_MAX_DIMS);
    if (ndim > 0 && !shape) return ct_null_argument(function, "shape"), ct_last_error();
    *bytes = ct_dtype_size(dtype);
    for (int d = 0; d < ndim; d++) {
        char text[256];
        if (shape[d] < 0)
            return ct_error(CT_ERR_SHAPE, "%s: shape %s has a negative size in dim %d; sizes "
                            "must be >= 0", function, ct_shape_format(shape, ndim, text, sizeof text), d);
        if (shape[d] > 0 && *bytes > SIZE_MAX / (size_t)shape[d])
            return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: shape %s of %s is more bytes than "
                            "memory can address", function,
                            ct_shape_format(shape, ndim, text, sizeof text), ct_dtype_name(dtype));
        *bytes *= (size_t)shape[d];
    }
    return CT_OK;
}

/* A contiguous tensor over block (NULL for zero bytes), which it then owns. */
static ct_tensor *tensor_over_block(const char *function, ct_device device, ct_dtype dtype,
                                    const int64_t *shape, int ndim, ct_block *block, size_t bytes)
{
    ct_storage *storage = ct_zalloc(sizeof *storage);
    ct_tensor *t = ct_zalloc(sizeof *t);
    if (t) t->alive = CT_TENSOR_ALIVE;
    if (!storage || !t) {
        free(storage);
        free(t);
        ct_caching_allocator_free(block);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for a tensor record", function);
    }
    atomic_init(&storage->refcount, 1);
    storage->device = device;
    storage->block = block;
    storage->nbytes = bytes;
    atomic_init(&t->refcount, 1);
    t->storage = storage;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    ct_contiguous_strides(t->shape, ndim, t->strides);
    return t;
}

ct_tensor *ct_tensor_alloc(const char *function, ct_device device, ct_dtype dtype,
                           const int64_t *shape, int ndim)
{
    size_t bytes;
    if (checked_bytes(function, dtype, shape, ndim, &bytes) != CT_OK) return NULL;
    if (ct_device_resolve(device, &device) != CT_OK) return NULL;
    ct_block *block = NULL;
    if (bytes > 0 && !(block = ct_caching_allocator_malloc(device, bytes))) return NULL;
    return tensor_over_block(function, device, dtype, shape, ndim, block, bytes);
}

ct_tensor *ct_tensor_alloc_pinned(const char *function, ct_dtype dtype, const int64_t *shape, int ndim)
{
    size_t bytes;
    if (checked_bytes(function, dtype, shape, ndim, &bytes) != CT_OK) return NULL;
    ct_block *block = ct_pinned_malloc(bytes);
    if (!block) return NULL;
    return tensor_over_block(function, CT_DEVICE_CPU, dtype, shape, ndim, block, bytes);
}

ct_tensor *ct_tensor_view_of(const ct_tensor *base, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset)
{
    ct_tensor *t = ct_zalloc(sizeof *t);
    if (!t) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for a tensor record");
    t->alive = CT_TENSOR_ALIVE;
    atomic_init(&t->refcount, 1);
    t->storage = base->storage;
    atomic_fetch_add(&t->storage->refcount, 1);
    t->dtype = base->dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
    t->offset = offset;
    return t;
}

void *ct_tensor_handle(const ct_tensor *t)
{
    if (atomic_load_explicit(&t->storage->pending_event, memory_order_acquire)) ct_storage_wait_ready(t->storage);
    ct_block *block = t->storage->block;
    if (!block) return NULL;
    /* Captured work takes this memory: a graph keeps tensors from before its capture (its pool
     * keeps those it made), so that a replay never reads or writes memory they no longer own. */
    ct_capture *capture = ct_capture_joined(t->storage->device);
    if (capture && capture->hold && !(block->stream_id & CT_GRAPH_POOL_BIT)) capture->hold(capture, (ct_tensor *)t);
    return block->handle;
}

ct_tensor *ct_retain(ct_tensor *t)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_retain", "t", t)) return ct_api_return(NULL);
    atomic_fetch_add(&t->refcount, 1);
    return ct_api_return(t);
}

void ct_storage_retain(ct_storage *storage) { atomic_fetch_add(&storage->refcount, 1); }

void ct_storage_release(ct_storage *storage)
{
    if (atomic_fetch_sub(&storage->refcount, 1) != 1) return;
    ct_storage_wait_ready(storage);
    ct_caching_allocator_free(storage->block);
    free(storage);
}

/* Released tensor records wait here, marked released, before they are freed: a use of one of
 * the last CT_QUARANTINE released tensors is reported as such, never a read of memory that a new
 * tensor took over. Lock-free: each slot's exchange hands its previous record to one releaser. */
#define CT_QUARANTINE 1024
static _Atomic(ct_tensor *) quarantine[CT_QUARANTINE];
static atomic_uint quarantine_next;

static void quarantine_record(ct_tensor *t)
{
    unsigned slot = atomic_fetch_add_explicit(&quarantine_next, 1, memory_order_relaxed) % CT_QUARANTINE;
    free(atomic_exchange_explicit(&quarantine[slot], t, memory_order_acq_rel));
}

void ct_tensor_released_error(const char *function, const char *what)
{
    ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s is a tensor used after release (its last reference was "
             "dropped by ct_release or a scope's pop; keep it with ct_retain or ct_scope_keep)", function, what);
}

void ct_release(ct_tensor *t)
{
    if (!t) return;
    if (t->alive != CT_TENSOR_ALIVE) {
        ct_error(CT_ERR_INVALID_ARGUMENT, "ct_release: the tensor was released already (a tensor "
                 "released twice, or used after release)");
        return;
    }
    if (!ct_api_nested()) ct_scope_forget(t);
    if (atomic_fetch_sub(&t->refcount, 1) != 1) return;
    ct_api_enter(); /* what t holds is released as ctorch's, not as the user's references */
    ct_release(t->grad);
    ct_node_release(t->grad_fn);
    ct_grad_hooks_free(t->grad_hooks);
    ct_api_return(NULL);
    ct_storage_release(t->storage);
    t->alive = CT_TENSOR_RELEASED;
    t->storage = NULL;
    quarantine_record(t);
}

/* The queries answer a neutral value for a NULL tensor and record CT_ERR_NULL_ARGUMENT (keeping
 * an earlier error, as every call given NULL does). */
#define CT_QUERY_NULL_CHECK(function, t, neutral)                                                \
    if (ct_tensor_unusable(function, #t, t)) return neutral;

int ct_refcount(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_refcount", t, 0);
    return atomic_load(&t->refcount);
}

/* ---- what a tensor is ---- */

ct_dtype ct_tensor_dtype(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_dtype", t, CT_F32);
    return t->dtype;
}
ct_device ct_tensor_device(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_device", t, CT_DEVICE_CPU);
    return t->storage->device;
}
bool ct_tensor_is_cuda(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_is_cuda", t, false);
    return t->storage->device.type == CT_CUDA;
}
int ct_tensor_ndim(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_ndim", t, 0);
    return t->ndim;
}
const int64_t *ct_tensor_shape(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_shape", t, NULL);
    return t->shape;
}
const int64_t *ct_tensor_strides(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_strides", t, NULL);
    return t->strides;
}
int64_t ct_tensor_offset(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_tensor_offset", t, 0);
    return t->offset;
}
int64_t ct_numel(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_numel", t, 0);
    return ct_shape_numel(t->shape, t->ndim);
}

int64_t ct_tensor_size(const ct_tensor *t, int dim)
{
    if (!t) {
        ct_null_argument("ct_tensor_size", "t");
        return -1;
    }
    int d = 0;
    if (ct_normalize_dim("ct_tensor_size", dim, t->ndim, false, &d) != CT_OK) return -1;
    return t->shape[d];
}

bool ct_is_contiguous(const ct_tensor *t)
{
    CT_QUERY_NULL_CHECK("ct_is_contiguous", t, false);
    if (ct_numel(t) == 0) return true; /* as PyTorch: no element is out of place */
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (t->strides[d] != expected) return false;
        expected *= t->shape[d];
    }
    return true;
}

bool ct_tensor_shares_storage(const ct_tensor *a, const ct_tensor *b)
{
    CT_QUERY_NULL_CHECK("ct_tensor_shares_storage", a, false);
    CT_QUERY_NULL_CHECK("ct_tensor_shares_storage", b, false);
    return a->storage == b->storage;
}

/* ---- checks ---- */

ct_status ct_normalize_dim(const char *function, int dim, int ndim, bool inserting, int *out)
{
    int range = inserting ? ndim + 1 : ndim;
    if (range == 0) range = 1; /* a 0-d tensor accepts dim 0 and -1, as in PyTorch */
    if (dim < -range || dim >= range)
        return ct_error(CT_ERR_INDEX, "%s: dim %d is out of range for a %d-d tensor; use %d to %d",
                        function, dim, ndim, -range, range - 1);
    *out = dim < 0 ? dim + range : dim;
    return CT_OK;
}

ct_status ct_check_same_device(const char *function, const ct_tensor *a, const ct_tensor *b)
{
    if (ct_tensor_unusable(function, "an operand", a) || ct_tensor_unusable(function, "an operand", b))
        return ct_last_error();
    if (ct_device_equal(a->storage->device, b->storage->device)) return CT_OK;
    char da[CT_DEVICE_STRING_MAX], db[CT_DEVICE_STRING_MAX];
    return ct_error(CT_ERR_DEVICE, "%s: expected all tensors to be on the same device, but found "
                    "at least two devices, %s and %s; move one with ct_to first", function,
                    ct_device_format(a->storage->device, da, sizeof da),
                    ct_device_format(b->storage->device, db, sizeof db));
}
