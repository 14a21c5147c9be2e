/* ctorch tensors: refcounted storage on one device plus a view (shape, strides, offset, dtype).
 *
 * Ownership: every function that returns a ct_tensor * returns a new reference, which the
 * caller drops with ct_release (NULL-safe). Inputs are borrowed. Inside a scope
 * (ct_scope_push/ct_scope_pop) every returned reference is also recorded and released by the
 * pop, unless ct_scope_keep hands it to the enclosing scope (or to the caller at top level).
 *
 * Errors: a function that fails returns NULL and records the error (ct_last_error). A function
 * given a NULL tensor returns NULL and keeps the error already recorded, so a chain such as
 * ct_relu(ct_add(ct_matmul(x, w), b)) is checked once at the end. */
#ifndef CTORCH_TENSOR_H
#define CTORCH_TENSOR_H

#include <stdio.h>

#include "ctorch/device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CT_MAX_DIMS 8

typedef struct ct_tensor ct_tensor;

/* ---- lifetime ----
 * A released tensor (its last reference dropped, by ct_release or a scope's pop) is marked: every
 * call given one fails with CT_ERR_INVALID_ARGUMENT, "... is a tensor used after release", rather
 * than reading values that are no longer the tensor's (for the last 1024 tensors released; older
 * records are freed). */
/* Another reference to t (t itself), recorded in the current scope like any returned tensor. */
ct_tensor *ct_retain(ct_tensor *t);
/* Drops one reference (NULL-safe). Safe inside a scope on a tensor the scope recorded: the record
 * goes with it, and the pop does not release it again. Releasing a tensor more often than it has
 * references is noticed: CT_ERR_INVALID_ARGUMENT ("released already"), nothing else is freed. */
void ct_release(ct_tensor *t);
int ct_refcount(const ct_tensor *t);

void ct_scope_push(void);
/* Releases every reference returned since the matching push, except those kept. */
ct_status ct_scope_pop(void);
/* Keeps t alive past the current scope: it moves to the enclosing scope, or to the caller. */
ct_tensor *ct_scope_keep(ct_tensor *t);

/* ---- creation, directly on the target device ---- */
/* Copies numel(shape) elements of dtype from data (row-major). ndim 0 makes a scalar. */
ct_tensor *ct_tensor_from_data(const void *data, ct_dtype dtype, const int64_t *shape, int ndim,
                               ct_device device);
ct_tensor *ct_empty(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
ct_tensor *ct_zeros(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
ct_tensor *ct_ones(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
/* value must fit dtype, as PyTorch's torch.full: an integer dtype holds it once truncated toward
 * zero (300 in uint8, NaN or 1e30 in int32 are CT_ERR_INVALID_ARGUMENT), float32 up to FLT_MAX;
 * uint8 also takes the integers -255 to -1, which wrap (-1 gives 255), as PyTorch's integer fill
 * values do. */
ct_tensor *ct_full(const int64_t *shape, int ndim, double value, ct_dtype dtype, ct_device device);
/* Values start, start+step, ... below end (above end for a negative step). For arange and linspace
 * the first and last values must fit dtype (as ct_full's value). */
ct_tensor *ct_arange(double start, double end, double step, ct_dtype dtype, ct_device device);
ct_tensor *ct_linspace(double start, double end, int64_t steps, ct_dtype dtype, ct_device device);

/* Random numbers come from a counter-based generator (Philox 4x32-10) kept per device: one seed
 * gives the same numbers on every device. */
void ct_manual_seed(uint64_t seed);          /* seeds every device */
uint64_t ct_initial_seed(void);
/* Every device's generator state (the seed and each device's counter) as a new int64 CPU tensor,
 * and setting it back (torch.get_rng_state / set_rng_state for all devices at once): what a
 * training checkpoint keeps so that a resumed run draws the numbers an uninterrupted one would. */
ct_tensor *ct_get_rng_state(void);
ct_status ct_set_rng_state(const ct_tensor *state);
ct_tensor *ct_rand(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);  /* [0, 1) */
ct_tensor *ct_randn(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device); /* N(0, 1) */
/* torch.empty_like, zeros_like, ones_like, full_like, rand_like, randn_like: a new contiguous
 * tensor of t's shape, dtype and device (random ones from that device's generator; rand_like and
 * randn_like need a floating t, as PyTorch). */
ct_tensor *ct_empty_like(const ct_tensor *t);
ct_tensor *ct_zeros_like(const ct_tensor *t);
ct_tensor *ct_ones_like(const ct_tensor *t);
ct_tensor *ct_full_like(const ct_tensor *t, double value);
ct_tensor *ct_rand_like(const ct_tensor *t);
ct_tensor *ct_randn_like(const ct_tensor *t);
/* Integers in [low, high). */
ct_tensor *ct_randint(int64_t low, int64_t high, const int64_t *shape, int ndim, ct_dtype dtype,
                      ct_device device);

/* ---- what a tensor is ---- */
ct_dtype ct_tensor_dtype(const ct_tensor *t);
ct_device ct_tensor_device(const ct_tensor *t);
bool ct_tensor_is_cuda(const ct_tensor *t);
int ct_tensor_ndim(const ct_tensor *t);
/* The size of one dim; negative dims count from the end. -1 (and an error) when out of range. */
int64_t ct_tensor_size(const ct_tensor *t, int dim);
const int64_t *ct_tensor_shape(const ct_tensor *t);
const int64_t *ct_tensor_strides(const ct_tensor *t); /* in elements */
int64_t ct_tensor_offset(const ct_tensor *t);         /* in elements, into the storage */
int64_t ct_numel(const ct_tensor *t);
bool ct_is_contiguous(const ct_tensor *t);
/* torch.Tensor.data_ptr(): the address of a CPU tensor's first element (its offset included),
 * once any queued copy into it has finished; its other elements lie at the strides from there.
 * Borrowed: valid while the tensor's storage lives. NULL with CT_ERR_DEVICE for a tensor on an
 * accelerator, and NULL without an error for one of no bytes. */
void *ct_data_ptr(const ct_tensor *t);
/* Do two tensors share storage (one is a view of the other)? */
bool ct_tensor_shares_storage(const ct_tensor *a, const ct_tensor *b);

/* ---- views (share storage with the input) ---- */
/* One size may be -1. A view when the strides allow it, otherwise a copy (torch.reshape). */
ct_tensor *ct_reshape(const ct_tensor *t, const int64_t *shape, int ndim);
/* Always a view; an error when the strides do not allow it (torch.Tensor.view). */
ct_tensor *ct_view(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *ct_transpose(const ct_tensor *t, int dim0, int dim1);
ct_tensor *ct_permute(const ct_tensor *t, const int *dims, int ndim);
ct_tensor *ct_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length);
/* Python's t[start:end:step] along dim; start/end are clamped like Python's; step > 0. */
ct_tensor *ct_slice(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step);
ct_tensor *ct_select(const ct_tensor *t, int dim, int64_t index);
ct_tensor *ct_squeeze(const ct_tensor *t);            /* all dims of size 1 */
ct_tensor *ct_squeeze_dim(const ct_tensor *t, int dim);
ct_tensor *ct_unsqueeze(const ct_tensor *t, int dim);
/* -1 keeps a size; new leading dims may be added. */
ct_tensor *ct_expand(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *ct_flatten(const ct_tensor *t, int start_dim, int end_dim);
/* A contiguous tensor: t itself (retained) when it already is. */
ct_tensor *ct_contiguous(const ct_tensor *t);
/* torch.chunk: up to `chunks` views along dim; writes *count of them into out[0..capacity). */
ct_status ct_chunk(const ct_tensor *t, int chunks, int dim, ct_tensor **out, int capacity,
                   int *count);
/* torch.split with one size: views of split_size along dim (the last may be smaller). */
ct_status ct_split(const ct_tensor *t, int64_t split_size, int dim, ct_tensor **out, int capacity,
                   int *count);

/* ---- moving and copying ---- */
/* A new tensor on device; t itself, retained, when it is already there (PyTorch returns self). */
ct_tensor *ct_to(const ct_tensor *t, ct_device device);
/* Floating values converted to an integer dtype are truncated toward zero and saturated at the
 * dtype's limits, NaN gives 0; uint8 takes the saturated int64 modulo 256. The same on every
 * device. */
ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dtype);

typedef struct ct_to_options {
    ct_device device;
    int dtype;          /* a ct_dtype, or -1 to keep t's dtype */
    bool non_blocking;  /* return once the copy is queued (pinned host memory only) */
    bool copy;          /* always a new tensor, even when nothing changes */
} ct_to_options;
/* Options with device = t's device, dtype kept, blocking, no forced copy. */
ct_to_options ct_to_options_default(ct_device device);
ct_tensor *ct_to_with(const ct_tensor *t, const ct_to_options *options);
/* A new tensor with the same values on the same device. */
ct_tensor *ct_clone(const ct_tensor *t);
/* Copies src into dst in place (devices may differ); same shape and dtype required. A dst whose
 * elements overlap in memory (an expanded view) is refused (CT_ERR_INVALID_ARGUMENT), as in
 * PyTorch. */
ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src);

/* ---- reading back ---- */
/* Copies the elements, in row-major order and t's dtype, into dst (dst_bytes must be enough). */
ct_status ct_tensor_to_array(const ct_tensor *t, void *dst, size_t dst_bytes);
/* The value of a one-element tensor. */
ct_status ct_item(const ct_tensor *t, double *value);
/* A floating value that an int64 cannot hold (NaN, infinities, beyond 2^63) is
 * CT_ERR_INVALID_ARGUMENT; others are truncated toward zero. */
ct_status ct_item_int64(const ct_tensor *t, int64_t *value);

/* PyTorch's layout: tensor([[1., 2.], [3., 4.]], device='cpu'). The string is malloc'ed. */
char *ct_tensor_to_string(const ct_tensor *t);
/* print(t) with a newline. A NULL tensor (a failed chain) prints "(null)" and a released one
 * "(a tensor used after release)", each returning its error (the chain's first kept). */
ct_status ct_fprint(FILE *stream, const ct_tensor *t);
ct_status ct_print(const ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
