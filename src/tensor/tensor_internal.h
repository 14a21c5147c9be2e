/* The tensor layer's insides, shared by the layers above (ops, and later autograd and nn). */
#ifndef CT_TENSOR_INTERNAL_H
#define CT_TENSOR_INTERNAL_H

#include <stdatomic.h>

#include "alloc/caching_allocator.h"
#include "backend/backend.h"
#include "core/core_internal.h"
#include "ctorch/tensor.h"

typedef struct ct_storage {
    atomic_int refcount;
    ct_device device;
    ct_block *block; /* NULL for zero bytes */
    size_t nbytes;
    /* A queued copy still writing into this (host) storage: an event of pending_device's backend
     * that anyone touching the data waits for first (ct_tensor_handle does). */
    _Atomic(void *) pending_event;
    ct_device pending_device;
} ct_storage;

struct ct_node;
struct ct_grad_hook;

/* A tensor's `alive` while it is one; ct_release's last reference writes CT_TENSOR_RELEASED
 * there, and the record is freed only after more releases (tensor.c's quarantine), so that a
 * released tensor used again is an error, "used after release", rather than plausible values. */
#define CT_TENSOR_ALIVE 0x7e45a11eu
#define CT_TENSOR_RELEASED 0xdeadbeefu

struct ct_tensor {
    atomic_int refcount;
    unsigned alive;
    ct_storage *storage;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS]; /* in elements */
    int64_t offset;               /* in elements */
    /* autograd (see autograd_node.h) */
    bool requires_grad;
    struct ct_tensor *grad;       /* accumulated gradient of a leaf */
    struct ct_node *grad_fn;      /* the node that made this tensor, NULL for leaves */
    struct ct_grad_hook *grad_hooks; /* post-accumulate-grad hooks of a leaf, in order */
    int pending_grads;            /* the engine's: edges into this leaf not yet run */
};

/* ---- the API boundary ----
 * Public functions that return tensors start with CT_API_ENTER and return through
 * ct_api_return: only the outermost call records its result in the current scope, so that
 * ctorch's own calls between public functions never touch the user's scopes. */
void ct_api_enter(void);
ct_tensor *ct_api_return(ct_tensor *t);
#define CT_API_ENTER ct_api_enter()
/* Is this code running inside another public call? */
bool ct_api_nested(void);
/* Removes one record of t from the current scope, if there is one (explicit release). */
void ct_scope_forget(ct_tensor *t);

/* ---- lifetimes ---- */
/* Records CT_ERR_INVALID_ARGUMENT: "<function>: <what> was used after release ...". */
void ct_tensor_released_error(const char *function, const char *what);
/* Is t NULL (CT_ERR_NULL_ARGUMENT recorded, keeping an earlier error) or a released tensor (an
 * error recorded)? The check every public function makes of a tensor argument. */
static inline bool ct_tensor_unusable(const char *function, const char *what, const ct_tensor *t)
{
    if (!t) {
        ct_null_argument(function, what);
        return true;
    }
    if (__builtin_expect(t->alive != CT_TENSOR_ALIVE, 0)) {
        ct_tensor_released_error(function, what);
        return true;
    }
    return false;
}

/* ---- making tensors (untracked; the public functions track) ---- */
/* A new contiguous tensor on a resolved device; checks ndim, sizes and byte-count overflow. */
ct_tensor *ct_tensor_alloc(const char *function, ct_device device, ct_dtype dtype,
                           const int64_t *shape, int ndim);
/* A view of base's storage with the given geometry. */
ct_tensor *ct_tensor_view_of(const ct_tensor *base, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset);
/* The buffer handle of t's storage, once any queued copy into it has finished. */
void *ct_tensor_handle(const ct_tensor *t);
/* A new contiguous CPU tensor in pinned host memory (see ct_pinned_malloc). */
ct_tensor *ct_tensor_alloc_pinned(const char *function, ct_dtype dtype, const int64_t *shape, int ndim);
void ct_storage_retain(ct_storage *storage);
void ct_storage_release(ct_storage *storage);
/* Waits for a queued copy into storage, if there is one. */
void ct_storage_wait_ready(ct_storage *storage);

int64_t ct_shape_numel(const int64_t *shape, int ndim);
void ct_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
/* "[2, 3]" into buf. */
const char *ct_shape_format(const int64_t *shape, int ndim, char *buf, size_t size);

/* ---- checks that record precise errors ---- */
/* Does dtype hold value (an integer dtype: once truncated toward zero; see value_range.c)? */
bool ct_dtype_holds(ct_dtype dtype, double value);
/* "integers from 0 to 255" */
const char *ct_dtype_range_text(ct_dtype dtype);
/* CT_OK, or CT_ERR_INVALID_ARGUMENT: "<function>: <what> 300 cannot be converted to uint8 ...". */
ct_status ct_check_value_fits(const char *function, const char *what, double value, ct_dtype dtype);
/* dim in [-ndim, ndim) (or [-(ndim+1), ndim] when `inserting`), made non-negative into *out. */
ct_status ct_normalize_dim(const char *function, int dim, int ndim, bool inserting, int *out);
/* The same device, or an error naming both devices. */
ct_status ct_check_same_device(const char *function, const ct_tensor *a, const ct_tensor *b);

/* ---- running kernels over tensors ---- */
/* Fills p's index space from shape and the strides of `count` operands (offsets from the
 * tensors are set by the caller), merging dims that are contiguous in every operand. Returns
 * true when every operand is contiguous over the whole space (a flat loop will do). */
bool ct_kparams_index_space(ct_kparams *p, const int64_t *shape, int ndim, int count,
                            const int64_t *const *strides);
/* ---- moving bytes (counted in the transfer statistics); offsets in bytes ---- */
ct_status ct_transfer_host_to_device(ct_device device, void *dst, size_t dst_offset, const void *src,
                                     size_t bytes);
/* Blocks until the bytes are on the host (a host synchronization). */
ct_status ct_transfer_device_to_host(ct_device device, void *dst, const void *src, size_t src_offset,
                                     size_t bytes);
/* Between any two devices: within one device, peer to peer, or through the host. */
ct_status ct_transfer_between_devices(ct_device to, void *dst, size_t dst_offset, ct_device from,
                                      const void *src, size_t src_offset, size_t bytes);

/* Makes p a flat launch (see dialect.h) over numel elements of `count` operands, buffers
 * 0..count-1 at p->off[]: CT_FLAT_VECTOR items of the device's elementwise_width when every
 * offset is a multiple of it, else CT_FLAT_ONE. Sets p->n, l[0], and for vector items ndim and
 * size[0]. Inline for what every small op on a CPU takes: a look at the device's width, asked of
 * its work shape once (a work shape never changes) and kept here (0: not asked yet). */
extern atomic_int ct_elementwise_widths[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];
static inline bool ct_elementwise_width_cached(ct_device device)
{
    return (unsigned)device.type < CT_DEVICE_TYPE_COUNT && (unsigned)device.index < CT_MAX_DEVICES_PER_TYPE;
}
static inline int ct_elementwise_width_known(ct_device device)
{
    return ct_elementwise_width_cached(device)
               ? atomic_load_explicit(&ct_elementwise_widths[device.type][device.index],
                                      memory_order_relaxed)
               : 0;
}
ct_status ct_kparams_flat_asking(ct_kparams *p, ct_device device, long numel, int count);
static inline ct_status ct_kparams_flat(ct_kparams *p, ct_device device, long numel, int count)
{
    if (ct_elementwise_width_known(device) != 1) return ct_kparams_flat_asking(p, device, numel, count);
    p->n = numel;
    p->l[0] = CT_FLAT_ONE;
    return CT_OK;
}

/* dst = src elementwise, with dst's dtype; same device and same shape. */
ct_status ct_tensor_copy_into(ct_tensor *dst, const ct_tensor *src);
/* Fills a contiguous tensor with value. */
ct_status ct_tensor_fill(ct_tensor *t, double value);

#endif
