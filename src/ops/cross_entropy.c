/* Cross-entropy from logits with class indices as one op: a kernel computes each row's softmax
 * and loss, another its gradient (softmax - q) / N, each a group of work items per row (one
 * item on a CPU) sized by the device's shape (ops/work_split.c). Composed of ops (log_softmax,
 * one_hot, a cast, mul, sum, a scale, and their backwards) it took a dozen launches and
 * allocations per training step: more than the rest of a small MLP's step. (One of the chains
 * folded into a kernel each, listed in ops/linear_relu.c.) */
#include <stdio.h>

#include "device/capture.h"
#include "ops/nn_internal.h"
#include "ops/work_split.h"

static const char *const NODE_NAME = "CrossEntropyBackward";

/* The target's values must be class indices: in [0, classes). */
static ct_status check_classes(const char *function, const ct_tensor *target, int64_t classes)
{
    /* A graph capture cannot wait for the values: the kernels then give a NaN loss for a class
     * out of range (as a device-side assert would stop the step) and read nothing out of bounds. */
    if (ct_numel(target) == 0 || ct_capture_joined(target->storage->device)) return CT_OK;
    int64_t lo = 0, hi = 0;
    ct_status status = ct_index_value_range(function, target, &lo, &hi);
    if (status != CT_OK) return status;
    if (lo < 0)
        return ct_error(CT_ERR_INDEX, "%s: target: class value %lld is negative; class values must "
                        "be non-negative", function, (long long)lo);
    if (hi >= classes)
        return ct_error(CT_ERR_INDEX, "%s: target: class value %lld is out of range for num_classes "
                        "%lld (values must be in [0, %lld))", function, (long long)hi,
                        (long long)classes, (long long)classes);
    return CT_OK;
}

/* The per-row losses into rows and the softmax into probs, from contiguous logits and target. */
static ct_status launch_forward(const ct_tensor *logits, const ct_tensor *target, double smoothing,
                                ct_tensor *rows, ct_tensor *probs)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(cross_entropy_forward);
    ct_kparams p = {0};
    p.n = (long)logits->shape[0];
    p.off[0] = rows->offset;
    p.off[1] = logits->offset;
    p.off[2] = target->offset;
    p.off[3] = probs->offset;
    p.l[0] = (long)logits->shape[1];
    p.s[0] = smoothing;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(rows), ct_tensor_handle(logits),
                                            ct_tensor_handle(target), ct_tensor_handle(probs)};
    ct_device device = logits->storage->device;
    int group_size = 1;
    ct_status status = ct_split_row_groups(device, p.l[0], &group_size);
    if (status != CT_OK) return status;
    /* a row: three sweeps, one exp per element */
    return ct_backend_launch_groups(device, kernels[logits->dtype], buffers, &p, 16 * p.l[0],
                                    group_size);
}

/* The loss without a graph: the mean of the rows' losses; the softmax goes to *probs_out. The
 * rows' losses and the softmax of 16-bit logits are float32 (see ct_nn_accumulate_dtype): the
 * loss is rounded to the logits' dtype once, after the mean. */
static ct_tensor *forward(const char *function, const ct_tensor *logits, const ct_tensor *target,
                          double smoothing, ct_tensor **probs_out)
{
    int64_t n = logits->shape[0];
    ct_device device = logits->storage->device;
    ct_dtype wide = ct_nn_accumulate_dtype(logits->dtype);
    ct_tensor *z = ct_contiguous(logits), *t = ct_contiguous(target);
    ct_tensor *probs = z ? ct_tensor_alloc(function, device, wide, logits->shape, 2) : NULL;
    ct_tensor *rows = probs ? ct_tensor_alloc(function, device, wide, &n, 1) : NULL;
    ct_status status = rows && t ? CT_OK : ct_last_error();
    if (status == CT_OK && n > 0) status = launch_forward(z, t, smoothing, rows, probs);
    /* N = 0 gives NaN, the mean of nothing, as PyTorch does. */
    ct_tensor *loss = status == CT_OK ? ct_mean(rows, NULL, 0, false) : NULL;
    if (loss && wide != logits->dtype) {
        ct_tensor *rounded = ct_to_dtype(loss, logits->dtype);
        ct_release(loss);
        loss = rounded;
    }
    ct_release(rows);
    ct_release(t);
    ct_release(z);
    *probs_out = loss ? probs : NULL;
    if (!loss) ct_release(probs);
    return loss;
}

static ct_status cross_entropy_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

ct_tensor *ct_softmax_cross_entropy(const char *function, const ct_tensor *logits,
                                    const ct_tensor *target, double smoothing)
{
    if (check_classes(function, target, logits->shape[1]) != CT_OK) return NULL;
    /* The pieces are internal: only the result joins the graph, with this op's backward. */
    bool was_enabled = ct_set_grad_enabled(false);
    ct_tensor *probs = NULL;
    ct_tensor *loss = forward(function, logits, target, smoothing, &probs);
    ct_set_grad_enabled(was_enabled);
    ct_node *node;
    loss = ct_record(loss, NODE_NAME, cross_entropy_backward, &logits, 1, &node);
    if (node) {
        node->scalars[0] = smoothing;
        node->ints[0] = (int64_t)logits->dtype; /* the gradient's: the softmax may be wider */
        ct_tensor *t = ct_contiguous(target);
        if (!t || ct_node_save(node, probs) != CT_OK || ct_node_save(node, t) != CT_OK) {
            ct_release(loss);
            loss = NULL;
        }
        ct_release(t);
    }
    ct_release(probs);
    return loss;
}

/* grad_logits = grad / N * (softmax - q); saved: the softmax, the (contiguous) target; ints[0]
 * the logits' dtype. */
static ct_status cross_entropy_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(cross_entropy_backward);
    const ct_tensor *probs = node->saved[0], *target = node->saved[1];
    ct_dtype dtype = (ct_dtype)node->ints[0];
    ct_tensor *out = ct_tensor_alloc(NODE_NAME, probs->storage->device, dtype, probs->shape, 2);
    if (!out) return ct_last_error();
    ct_kparams p = {0};
    p.n = (long)probs->shape[0];
    p.off[0] = out->offset;
    p.off[1] = probs->offset;
    p.off[2] = target->offset;
    p.off[3] = grad->offset;
    p.l[0] = (long)probs->shape[1];
    p.s[0] = node->scalars[0];
    p.s[1] = 1.0 / (double)probs->shape[0];
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(probs),
                                            ct_tensor_handle(target), ct_tensor_handle(grad)};
    ct_device device = out->storage->device;
    int group_size = 1;
    ct_status status = p.n > 0 && p.l[0] > 0 ? ct_split_row_groups(device, p.l[0], &group_size) : CT_OK;
    if (status == CT_OK && p.n > 0 && p.l[0] > 0)
        status = ct_backend_launch_groups(device, kernels[out->dtype], buffers, &p, 3 * p.l[0],
                                          group_size);
    if (status != CT_OK) {
        ct_release(out);
        return status;
    }
    grads[0] = out;
    return CT_OK;
}
