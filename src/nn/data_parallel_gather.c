/* DataParallel's gather: the replicas' outputs, each on its device, copied into one tensor on the
 * output device along dim 0 (torch.nn.parallel.comm.gather). Its backward is the scatter of the
 * gradient: each output gets its rows, moved to its device. */
#include <stdio.h>
#include <string.h>

#include "nn/data_parallel_internal.h"
#include "ops/ops_autograd.h"

static ct_status gather_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    int64_t start = 0;
    for (int i = 0; i < node->ninputs; i++) {
        const ct_input_meta *meta = &node->inputs[i];
        int64_t rows = meta->shape[0];
        if (ct_node_needs_grad(node, i)) {
            ct_tensor *part = ct_narrow(grad, 0, start, rows);
            ct_to_options options = ct_to_options_default(meta->device);
            options.dtype = (int)meta->dtype;
            grads[i] = part ? ct_to_with(part, &options) : NULL;
            ct_release(part);
            if (!grads[i]) return ct_last_error();
        }
        start += rows;
    }
    return CT_OK;
}

/* Outputs that concatenate: the same dtype and ndim (>= 1), and equal sizes but along dim 0. */
static ct_status check_outputs(const char *function, ct_tensor *const *outputs, int count)
{
    const ct_tensor *first = outputs[0];
    for (int i = 0; i < count; i++) {
        const ct_tensor *t = outputs[i];
        char a[256], b[256], da[CT_DEVICE_STRING_MAX], db[CT_DEVICE_STRING_MAX];
        if (t->ndim == 0)
            return ct_error(CT_ERR_SHAPE, "%s: the output on %s is 0-d; outputs are gathered along "
                            "dim 0", function, ct_device_format(t->storage->device, da, sizeof da));
        if (t->dtype != first->dtype)
            return ct_error(CT_ERR_DTYPE, "%s: the replicas' outputs differ in dtype: %s on %s, %s "
                            "on %s", function, ct_dtype_name(first->dtype),
                            ct_device_format(first->storage->device, da, sizeof da),
                            ct_dtype_name(t->dtype), ct_device_format(t->storage->device, db, sizeof db));
        if (t->ndim != first->ndim ||
            memcmp(t->shape + 1, first->shape + 1, sizeof(int64_t) * (size_t)(t->ndim - 1)))
            return ct_error(CT_ERR_SHAPE, "%s: the replicas' outputs must have equal shapes but "
                            "along dim 0 to be gathered: %s on %s, %s on %s", function,
                            ct_shape_format(first->shape, first->ndim, a, sizeof a),
                            ct_device_format(first->storage->device, da, sizeof da),
                            ct_shape_format(t->shape, t->ndim, b, sizeof b),
                            ct_device_format(t->storage->device, db, sizeof db));
    }
    return CT_OK;
}

ct_tensor *ct_dp_gather(const char *function, ct_tensor *const *outputs, int count, ct_device device)
{
    if (check_outputs(function, outputs, count) != CT_OK) return NULL;
    const ct_tensor *first = outputs[0];
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, first->shape, sizeof(int64_t) * (size_t)first->ndim);
    shape[0] = 0;
    for (int i = 0; i < count; i++) shape[0] += outputs[i]->shape[0];
    ct_tensor *out = ct_tensor_alloc(function, device, first->dtype, shape, first->ndim);
    int64_t start = 0;
    for (int i = 0; out && i < count; i++) {
        int64_t part_shape[CT_MAX_DIMS];
        memcpy(part_shape, shape, sizeof part_shape);
        part_shape[0] = outputs[i]->shape[0];
        ct_tensor *part = ct_tensor_view_of(out, out->ndim, part_shape, out->strides,
                                            out->offset + start * out->strides[0]);
        ct_status status = part ? ct_copy_(part, outputs[i]) : ct_last_error();
        ct_release(part);
        if (status != CT_OK) {
            ct_release(out);
            out = NULL;
        }
        start += part_shape[0];
    }
    if (!out || !ct_autograd_needed((const ct_tensor *const *)outputs, count)) return out;
    if (ct_autograd_record(out, "GatherBackward", gather_backward, (const ct_tensor *const *)outputs, count))
        return out;
    ct_release(out);
    return NULL;
}
