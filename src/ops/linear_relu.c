/* y = relu(x W^T + b) as one op with one node (nn.Sequential runs it for a Linear followed by a
 * ReLU): the product alone (beta 0), then one kernel that adds the bias to every row and applies
 * ReLU in place. Its backward is one kernel that masks the gradient by y > 0 and sums the masked
 * columns into the bias's gradient, then the two products of ct_linear_apply's backward. Run as
 * the two ops, a Linear and its ReLU cost a bias copy, the product and a relu forward, and a
 * relu backward (with its allocation), the products and a reduction for the bias backward.
 *
 * The elementwise chains folded into one kernel each (issue 16):
 *   - the bias + ReLU after a Linear, forward and backward: here (kernels/nn.ct);
 *   - cross-entropy from logits: its forward (softmax and every row's loss) and its backward
 *     are one kernel each (ops/cross_entropy.c), the forward's mean over rows aside;
 *   - the optimizer steps: every parameter's update of a step in one or a few launches
 *     (optim/optimizer_fused.c). */
#include "ops/autocast.h"
#include "ops/nn_internal.h"
#include "ops/work_split.h"

static const char *const NODE_NAME = "LinearReluBackward";
enum { LINEAR_RELU_CHUNK = 16 }; /* CT_LR_CHUNK of the backward kernel (kernels/nn.ct) */

/* relu(y2 + b) in place, y2 [rows, out] contiguous. */
static ct_status launch_bias_relu(ct_tensor *y2, const ct_tensor *b)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(linear_bias_relu);
    ct_kparams p = {0};
    p.n = (long)y2->shape[0];
    p.off[0] = (long)y2->offset;
    p.off[1] = (long)b->offset;
    p.stride[1][0] = (long)b->strides[0];
    p.l[1] = (long)y2->shape[1];
    if (p.n == 0 || p.l[1] == 0) return CT_OK;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(y2), ct_tensor_handle(b)};
    ct_device device = y2->storage->device;
    int group_size = 1;
    ct_status status = ct_split_row_groups(device, p.l[1], &group_size);
    if (status != CT_OK) return status;
    return ct_backend_launch_groups(device, kernels[y2->dtype], buffers, &p, 2 * p.l[1], group_size);
}

static ct_tensor *composed(const char *function, const ct_tensor *x, const ct_tensor *w,
                           const ct_tensor *b)
{
    ct_tensor *y = ct_linear_apply(function, x, w, b);
    ct_tensor *r = y ? ct_relu(y) : NULL;
    ct_release(y);
    return r;
}

static ct_status linear_relu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

ct_tensor *ct_linear_relu_apply(const char *function, const ct_tensor *x, const ct_tensor *w,
                                const ct_tensor *b)
{
    CT_AUTOCAST_INTERNAL3(CT_AUTOCAST_LOWER, ct_linear_relu_apply(function, c_[0], c_[1], c_[2]), x, w, b)
    if (!b || !ct_linear_takes(x, w, b)) return composed(function, x, w, b);
    /* The pieces are internal: only the result joins the graph, with this op's backward. */
    bool was_enabled = ct_set_grad_enabled(false);
    ct_tensor *x2 = NULL;
    ct_tensor *y2 = ct_linear_product(function, x, w, NULL, &x2);
    if (y2 && launch_bias_relu(y2, b) != CT_OK) {
        ct_release(y2);
        y2 = NULL;
    }
    ct_tensor *y = y2 ? ct_linear_output(x, y2) : NULL;
    ct_set_grad_enabled(was_enabled);

    const ct_tensor *inputs[3] = {x, w, b};
    ct_node *node;
    y = ct_record(y, NODE_NAME, linear_relu_backward, inputs, 3, &node);
    if (node && (ct_node_save(node, x2) != CT_OK || ct_node_save(node, w) != CT_OK ||
                 ct_node_save(node, y2) != CT_OK)) {
        ct_release(y);
        y = NULL;
    }
    ct_release(y2);
    ct_release(x2);
    return y;
}

/* masked [rows, out] = g2 where y2 > 0, else 0; bias_grad [out] = its column sums. A group per
 * tile of up to 32 adjacent columns, its other items splitting the rows (see the kernel). */
static ct_status launch_backward(const ct_tensor *g2, const ct_tensor *y2, ct_tensor *masked,
                                 ct_tensor *bias_grad)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(linear_relu_backward);
    long rows = (long)y2->shape[0], cols = (long)y2->shape[1];
    if (cols == 0) return CT_OK;
    ct_device device = y2->storage->device;
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    /* W items across a tile (a warp's 32 at most), each CT_ITEM_LANES columns, and as many down
     * as the chunks of rows take, within a group */
    long per_item = shape.lanes_per_item > 0 ? shape.lanes_per_item : 1;
    long items = (cols + per_item - 1) / per_item;
    long width = shape.group_size < 32 ? shape.group_size : 32, lanes = 1;
    while (width > 1 && width / 2 >= items) width /= 2; /* a power of 2, as group sizes are */
    long chunks = (rows + LINEAR_RELU_CHUNK - 1) / LINEAR_RELU_CHUNK;
    while (width * lanes * 2 <= shape.group_size && lanes < chunks) lanes *= 2;
    ct_kparams p = {0};
    p.n = (items + width - 1) / width;
    p.l[0] = width;
    p.l[1] = rows;
    p.l[2] = cols;
    p.off[0] = (long)masked->offset;
    p.off[1] = (long)bias_grad->offset;
    p.off[2] = (long)g2->offset;
    p.off[3] = (long)y2->offset;
    p.stride[2][0] = (long)g2->strides[0];
    p.stride[2][1] = (long)g2->strides[1];
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(masked), ct_tensor_handle(bias_grad),
                                            ct_tensor_handle(g2), ct_tensor_handle(y2)};
    return ct_backend_launch_groups(device, kernels[y2->dtype], buffers, &p, 3 * rows * width * per_item + 1,
                                    (int)(width * lanes));
}

/* grad_pre = grad where y > 0; grad_x = grad_pre W, grad_W = grad_pre^T x, grad_b = the sum of
 * grad_pre over rows. saved: x as [rows, in], W, y as [rows, out]. */
static ct_status linear_relu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *y2 = node->saved[2];
    ct_device device = y2->storage->device;
    ct_tensor *g2 = ct_linear_grad_rows(node, grad);
    if (g2 && g2->dtype != y2->dtype) { /* the kernel reads the gradient in y's dtype */
        ct_tensor *cast = ct_to_dtype(g2, y2->dtype);
        ct_release(g2);
        g2 = cast;
    }
    ct_tensor *masked = g2 ? ct_tensor_alloc(NODE_NAME, device, y2->dtype, y2->shape, 2) : NULL;
    ct_tensor *bias_grad = masked ? ct_tensor_alloc(NODE_NAME, device, y2->dtype, &y2->shape[1], 1) : NULL;
    ct_status status = bias_grad ? launch_backward(g2, y2, masked, bias_grad) : ct_last_error();
    if (status == CT_OK) status = ct_linear_backward_products(node, masked, grads);
    if (status == CT_OK && ct_node_needs_grad(node, 2)) grads[2] = ct_retain(bias_grad);
    ct_release(bias_grad);
    ct_release(masked);
    ct_release(g2);
    return status;
}
