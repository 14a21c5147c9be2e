/* The one launch path of the elementwise ops. For operands of the compute dtype it allocates
 * nothing but the output, and tiny tensors stay on the calling thread (the backend decides from
 * work_per_item), which keeps a 4-element op well under a microsecond. */
#include "ops/elementwise_internal.h"

/* Is t laid out row-major over exactly `shape`, as a new tensor of that shape is? Then every
 * operand is flat over the same elements with no broadcast strides or merged dims to work out:
 * the common case (same-shape operands), which saves a small op a tenth of its launch path. */
static bool dense_over(const ct_tensor *t, const int64_t *shape, int ndim)
{
    if (t->ndim != ndim) return false;
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (t->shape[d] != shape[d] || (shape[d] != 1 && t->strides[d] != expected)) return false;
        expected *= shape[d];
    }
    return true;
}

ct_tensor *ct_elementwise_run(const ct_elementwise_launch *launch)
{
    const int count = launch->count;
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    if (ct_broadcast_shapes(launch->function, launch->inputs, count, shape, &ndim) != CT_OK)
        return NULL;

    ct_tensor *inputs[CT_ELEMENTWISE_MAX_INPUTS] = {0};
    ct_tensor *out = NULL;
    for (int k = 0; k < count; k++) {
        inputs[k] = ct_cast_if_needed(launch->inputs[k], launch->input_dtypes[k]);
        if (!inputs[k]) goto fail;
    }
    ct_device device = inputs[0]->storage->device;
    out = ct_tensor_alloc(launch->function, device, launch->out_dtype, shape, ndim);
    if (!out) goto fail;

    long numel = (long)ct_shape_numel(shape, ndim);
    if (numel > 0) {
        ct_kparams p = {0};
        void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out)};
        bool dense = true; /* the output is */
        for (int k = 0; k < count; k++) {
            dense = dense && dense_over(inputs[k], shape, ndim);
            p.off[k + 1] = inputs[k]->offset;
            buffers[k + 1] = ct_tensor_handle(inputs[k]);
        }
        bool flat = dense;
        if (dense) {
            p.n = numel;
            p.ndim = 1;
            p.size[0] = numel;
            for (int k = 0; k <= count; k++) p.stride[k][0] = 1;
        } else {
            int64_t strides[CT_ELEMENTWISE_MAX_INPUTS][CT_MAX_DIMS];
            const int64_t *operand_strides[1 + CT_ELEMENTWISE_MAX_INPUTS] = {out->strides};
            for (int k = 0; k < count; k++) {
                ct_broadcast_strides(inputs[k], shape, ndim, strides[k]);
                operand_strides[k + 1] = strides[k];
            }
            flat = ct_kparams_index_space(&p, shape, ndim, count + 1, operand_strides);
        }
        if (flat && ct_kparams_flat(&p, device, numel, count + 1) != CT_OK) goto fail;
        p.l[1] = launch->l[0];
        p.l[2] = launch->l[1];
        p.s[0] = launch->s[0];
        p.s[1] = launch->s[1];
        if (ct_backend_launch(device, launch->kernel, buffers, &p, launch->work_per_item) != CT_OK)
            goto fail;
    }
    for (int k = 0; k < count; k++) ct_release(inputs[k]);
    return out;

fail:
    for (int k = 0; k < count; k++) ct_release(inputs[k]);
    ct_release(out);
    return NULL;
}

void *ct_elementwise_dtype_error(const char *function, const char *what, ct_dtype dtype,
                                 const char *hint)
{
    return ct_error_null(CT_ERR_DTYPE, "%s: %s is not supported for %s tensors (%s)", function, what,
                         ct_dtype_name(dtype), hint);
}
