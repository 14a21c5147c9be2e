/* The backward of ct_conv2d, per chunk of samples and per group, with G the output's gradient
 * [og, l] of a sample and col its im2col matrix [kg, l]:
 *   weight: grad_w_g += G_g @ col_g^T, summed over the samples (see accumulate_weight_grad);
 *   input:  col_grad_g = w_g^T @ G_g, then col2im folds the columns back onto the input, one
 *           work item per input element summing its contributions (deterministic, no atomics);
 *   bias:   G summed over samples and positions.
 * The im2col buffer of the forward's size serves both, one after the other. */
#include "ops/nn_internal.h"

static const char *const FN = "ConvolutionBackward";

static ct_status col2im(const ct_tensor *col, ct_tensor *grad_input, int64_t first, int64_t count,
                        const ct_conv2d_setup *s)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(col2im);
    ct_kparams p = {0};
    ct_window2d_pack(&s->g, &p);
    int64_t plane = s->g.h * s->g.w;
    p.n = (long)(count * s->c * plane);
    p.off[0] = (long)(grad_input->offset + first * s->c * plane);
    p.off[1] = (long)col->offset;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(grad_input), ct_tensor_handle(col)};
    return ct_backend_launch(col->storage->device, kernels[col->dtype], buffers, &p,
                             (long)(s->g.kh * s->g.kw));
}

/* The products G_g @ col_g^T of the chunk's samples, for every group: added in turn into
 * grad_w (beta 1, c_batch_stride 0) when per_sample is NULL, else written to per_sample
 * [count, o, kg] in one batched call per group. */
static ct_status weight_products(const ct_tensor *grad, const ct_tensor *col, ct_tensor *grad_w,
                                 ct_tensor *per_sample, int64_t first, int64_t count,
                                 const ct_conv2d_setup *s)
{
    for (int64_t g = 0; g < s->groups; g++) {
        ct_gemm_args a = {.dtype = grad_w->dtype, .alpha = 1.0, .trans_b = true};
        a.m = (long)s->og;
        a.n = (long)s->kg;
        a.k = (long)s->l;
        a.batch = (long)count;
        a.a = ct_tensor_handle(grad);
        a.a_offset = (long)(grad->offset + (first * s->o + g * s->og) * s->l);
        a.lda = (long)s->l;
        a.a_batch_stride = (long)(s->o * s->l);
        a.b = ct_tensor_handle(col);
        a.b_offset = (long)(col->offset + g * s->kg * s->l);
        a.ldb = (long)s->l;
        a.b_batch_stride = (long)(s->k * s->l);
        const ct_tensor *c = per_sample ? per_sample : grad_w;
        a.c = ct_tensor_handle(c);
        a.c_offset = (long)(c->offset + g * s->og * s->kg);
        a.ldc = (long)s->kg;
        a.beta = per_sample ? 0.0 : 1.0;
        a.c_batch_stride = per_sample ? (long)(s->o * s->kg) : 0;
        ct_status status = ct_gemm_of("ct_conv2d backward", &a, grad, col, (ct_tensor *)c);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* grad_w += the chunk's products summed over its samples. On the CPU, BLAS adds them in turn
 * (each call is a plain loop there); on other devices one batched call per group fills
 * per_sample and a reduction sums it, rather than `count` calls that run one after another. */
static ct_status accumulate_weight_grad(const ct_tensor *grad, const ct_tensor *col, ct_tensor *grad_w,
                                        ct_tensor *per_sample, int64_t first, int64_t count,
                                        const ct_conv2d_setup *s)
{
    if (!per_sample) return weight_products(grad, col, grad_w, NULL, first, count, s);
    ct_status status = weight_products(grad, col, grad_w, per_sample, first, count, s);
    if (status != CT_OK) return status;
    int64_t size = s->o * s->kg, shape[2] = {count, size}, strides[2] = {size, 1}, flat_stride = 1;
    ct_tensor *samples = ct_tensor_view_of(per_sample, 2, shape, strides, per_sample->offset);
    ct_tensor *flat = ct_tensor_view_of(grad_w, 1, &size, &flat_stride, grad_w->offset);
    ct_tensor *summed = samples ? ct_sum(samples, (int[]){0}, 1, false) : NULL;
    ct_tensor *total = summed && flat ? (first == 0 ? ct_retain(summed) : ct_add(flat, summed)) : NULL;
    status = total ? ct_tensor_copy_into(flat, total) : ct_last_error();
    ct_release(total);
    ct_release(summed);
    ct_release(flat);
    ct_release(samples);
    return status;
}

/* col_g = w_g^T @ G_g for the chunk's samples, for every group. */
static ct_status column_grad(const ct_tensor *w, const ct_tensor *grad, ct_tensor *col, int64_t first,
                             int64_t count, const ct_conv2d_setup *s)
{
    for (int64_t g = 0; g < s->groups; g++) {
        ct_gemm_args a = {.dtype = col->dtype, .alpha = 1.0, .beta = 0.0, .trans_a = true};
        a.m = (long)s->kg;
        a.n = (long)s->l;
        a.k = (long)s->og;
        a.batch = (long)count;
        a.a = ct_tensor_handle(w);
        a.a_offset = (long)(w->offset + g * s->og * s->kg);
        a.lda = (long)s->kg;
        a.a_batch_stride = 0;
        a.b = ct_tensor_handle(grad);
        a.b_offset = (long)(grad->offset + (first * s->o + g * s->og) * s->l);
        a.ldb = (long)s->l;
        a.b_batch_stride = (long)(s->o * s->l);
        a.c = ct_tensor_handle(col);
        a.c_offset = (long)(col->offset + g * s->kg * s->l);
        a.ldc = (long)s->l;
        a.c_batch_stride = (long)(s->k * s->l);
        ct_status status = ct_gemm_of("ct_conv2d backward", &a, w, grad, col);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* Both by the device's DNN library, when it takes them: true, with the status in *status. */
static bool library_grads(const ct_tensor *x, const ct_tensor *w, const ct_tensor *grad,
                          const ct_conv2d_setup *s, ct_tensor *grad_input, ct_tensor *grad_w,
                          ct_status *status)
{
    ct_device device = x->storage->device;
    ct_conv2d_args data = ct_conv2d_library_args(s, CT_CONV_BACKWARD_DATA, grad_input ? grad_input : x, w,
                                                 NULL, grad);
    ct_conv2d_args weight = ct_conv2d_library_args(s, CT_CONV_BACKWARD_WEIGHT, x, grad_w ? grad_w : w,
                                                   NULL, grad);
    if ((grad_input && !ct_backend_conv2d_takes(device, &data)) ||
        (grad_w && !ct_backend_conv2d_takes(device, &weight)))
        return false;
    *status = CT_OK;
    if (grad_w) *status = ct_backend_conv2d(device, &weight);
    if (grad_input && *status == CT_OK) *status = ct_backend_conv2d(device, &data);
    return true;
}

/* Fills grad_w (when not NULL) and grad_input (when not NULL), both new and contiguous. */
static ct_status input_and_weight_grads(const ct_tensor *x, const ct_tensor *w, const ct_tensor *grad,
                                        const ct_conv2d_setup *s, ct_tensor *grad_input,
                                        ct_tensor *grad_w)
{
    ct_status status = CT_OK;
    bool products = s->og > 0 && s->kg > 0 && s->n > 0;
    if (products && library_grads(x, w, grad, s, grad_input, grad_w, &status)) return status;
    if (grad_w) status = ct_tensor_fill(grad_w, 0.0);
    if (grad_input && !products) return status == CT_OK ? ct_tensor_fill(grad_input, 0.0) : status;
    if (!products || status != CT_OK) return status;
    ct_device device = x->storage->device;
    ct_tensor *col = ct_conv2d_alloc_col(s, device, x->dtype), *per_sample = NULL;
    if (col && grad_w && device.type != CT_CPU) {
        int64_t shape[3] = {s->chunk, s->o, s->kg};
        per_sample = ct_tensor_alloc(FN, device, x->dtype, shape, 3);
        if (!per_sample) status = ct_last_error();
    }
    if (!col) status = ct_last_error();
    for (int64_t first = 0; status == CT_OK && first < s->n; first += s->chunk) {
        int64_t count = s->n - first < s->chunk ? s->n - first : s->chunk;
        if (grad_w) {
            status = ct_conv2d_im2col(x, first, count, s, col);
            if (status == CT_OK)
                status = accumulate_weight_grad(grad, col, grad_w, per_sample, first, count, s);
        }
        if (grad_input && status == CT_OK) {
            status = column_grad(w, grad, col, first, count, s);
            if (status == CT_OK) status = col2im(col, grad_input, first, count, s);
        }
    }
    ct_release(per_sample);
    ct_release(col);
    return status;
}

ct_status ct_conv2d_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0], *w = node->saved[1];
    const int64_t *ints = node->ints;
    ct_conv2d_setup s;
    ct_conv2d_make_setup(x->shape, w->shape, ints + CT_CONV2D_INT_STRIDE,
                         ints + CT_CONV2D_INT_PADDING, ints + CT_CONV2D_INT_DILATION,
                         ints[CT_CONV2D_INT_GROUPS], x->dtype, &s);
    ct_device device = x->storage->device;
    ct_tensor *g = ct_contiguous(grad);
    if (!g) return ct_last_error();
    ct_tensor *grad_input = NULL, *grad_w = NULL;
    ct_status status = CT_OK;
    if (ct_node_needs_grad(node, 0)) {
        grad_input = ct_tensor_alloc(FN, device, x->dtype, x->shape, 4);
        if (!grad_input) status = ct_last_error();
    }
    if (status == CT_OK && ct_node_needs_grad(node, 1)) {
        grad_w = ct_tensor_alloc(FN, device, w->dtype, w->shape, 4);
        if (!grad_w) status = ct_last_error();
    }
    if (status == CT_OK) status = input_and_weight_grads(x, w, g, &s, grad_input, grad_w);
    if (status == CT_OK && ct_node_needs_grad(node, 2)) {
        grads[2] = ct_sum(g, (int[]){0, 2, 3}, 3, false);
        if (!grads[2]) status = ct_last_error();
    }
    ct_release(g);
    if (status != CT_OK) {
        ct_release(grad_input);
        ct_release(grad_w);
        ct_release(grads[2]);
        grads[2] = NULL;
        return status;
    }
    grads[0] = grad_input;
    grads[1] = grad_w;
    return CT_OK;
}
