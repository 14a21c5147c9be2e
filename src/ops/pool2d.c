/* torch.nn.functional.max_pool2d and avg_pool2d over [N, C, H, W]: the device's own pooling code
 * where it has one (the CPU's loops, backend/cpu/cpu_pool.c), else the dialect's kernels
 * (kernels/nn.ct): one work item per output row forward; backward one work item per input row,
 * which owns that row and gathers from the windows that cover it (max pooling through the
 * indices its forward kept), so gradients are summed in a fixed order without atomics. */
#include "ops/nn_internal.h"

static const char *const MAX_FN = "ct_max_pool2d";
static const char *const AVG_FN = "ct_avg_pool2d";

/* The node's integer arguments: kernel, stride, padding, count_include_pad. */
enum { POOL_INT_KERNEL = 0, POOL_INT_STRIDE = 2, POOL_INT_PADDING = 4, POOL_INT_INCLUDE_PAD = 6 };

static void make_window(const int64_t *input_shape, const int64_t kernel[2], const int64_t stride[2],
                        const int64_t padding[2], ct_window2d *g)
{
    g->h = input_shape[2];
    g->w = input_shape[3];
    g->kh = kernel[0];
    g->kw = kernel[1];
    g->sh = stride[0];
    g->sw = stride[1];
    g->ph = padding[0];
    g->pw = padding[1];
    g->dh = g->dw = 1;
    g->out_h = (g->h + 2 * g->ph - g->kh) / g->sh + 1;
    g->out_w = (g->w + 2 * g->pw - g->kw) / g->sw + 1;
}

/* Checks the input and the window arguments (kernel given; stride and padding resolved). */
static ct_status check_pool(const char *fn, const ct_tensor *input, const int64_t kernel[2],
                            const int64_t stride[2], const int64_t padding[2])
{
    const char *names[1] = {"input"};
    if (ct_check_operands(fn, &input, names, 1) != CT_OK) return ct_last_error();
    char si[256];
    ct_shape_format(input->shape, input->ndim, si, sizeof si);
    if (input->ndim != 4)
        return ct_error(CT_ERR_SHAPE, "%s: expected a 4-D input [N, C, H, W], but got input of "
                        "shape %s", fn, si);
    if (input->shape[1] == 0 || input->shape[2] == 0 || input->shape[3] == 0)
        return ct_error(CT_ERR_SHAPE, "%s: expected input [N, C, H, W] with C, H and W non-zero "
                        "(N may be 0), but got input of shape %s", fn, si);
    if (!ct_dtype_is_floating(input->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: input has dtype %s; pooling needs a floating dtype "
                        "(float32, float64, float16 or bfloat16)",
                        fn, ct_dtype_name(input->dtype));
    for (int d = 0; d < 2; d++) {
        if (kernel[d] <= 0 || kernel[d] > INT32_MAX)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: kernel_size must be positive (and below "
                            "2^31), but got kernel_size [%lld, %lld]", fn, (long long)kernel[0],
                            (long long)kernel[1]);
        if (stride[d] <= 0 || stride[d] > INT32_MAX)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: stride must be positive (and below "
                            "2^31), but got stride [%lld, %lld]", fn, (long long)stride[0],
                            (long long)stride[1]);
        if (padding[d] < 0 || padding[d] > kernel[d] / 2)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: padding must be between 0 and half the "
                            "kernel size, but got padding [%lld, %lld] for kernel_size [%lld, %lld]",
                            fn, (long long)padding[0], (long long)padding[1], (long long)kernel[0],
                            (long long)kernel[1]);
    }
    for (int d = 0; d < 2; d++)
        if (input->shape[2 + d] + 2 * padding[d] < kernel[d])
            return ct_error(CT_ERR_SHAPE, "%s: input %s is smaller than the kernel: kernel_size "
                            "[%lld, %lld] over the padded input %lld x %lld (padding [%lld, %lld]) "
                            "leaves no output", fn, si, (long long)kernel[0], (long long)kernel[1],
                            (long long)(input->shape[2] + 2 * padding[0]),
                            (long long)(input->shape[3] + 2 * padding[1]), (long long)padding[0],
                            (long long)padding[1]);
    return CT_OK;
}

/* Resolves the window arguments (stride defaults to the kernel) and checks everything. */
static ct_status pool_setup(const char *fn, const ct_tensor *input, const int64_t kernel_size[2],
                            const int64_t stride[2], const int64_t padding[2], ct_window2d *g)
{
    if (!input) return ct_null_argument(fn, "input"), ct_last_error(); /* keeps a chain's error */
    if (!kernel_size) return ct_null_argument(fn, "kernel_size"), ct_last_error();
    int64_t st[2], pad[2];
    ct_window_pair(stride, kernel_size[0], kernel_size[1], st);
    ct_window_pair(padding, 0, 0, pad);
    ct_status status = check_pool(fn, input, kernel_size, st, pad);
    if (status == CT_OK) make_window(input->shape, kernel_size, st, pad, g);
    return status;
}

static void save_window(ct_node *node, const ct_window2d *g)
{
    node->ints[POOL_INT_KERNEL] = g->kh;
    node->ints[POOL_INT_KERNEL + 1] = g->kw;
    node->ints[POOL_INT_STRIDE] = g->sh;
    node->ints[POOL_INT_STRIDE + 1] = g->sw;
    node->ints[POOL_INT_PADDING] = g->ph;
    node->ints[POOL_INT_PADDING + 1] = g->pw;
}

static void window_of_node(const ct_node *node, ct_window2d *g)
{
    const int64_t *ints = node->ints;
    make_window(node->inputs[0].shape, ints + POOL_INT_KERNEL, ints + POOL_INT_STRIDE,
                ints + POOL_INT_PADDING, g);
}

/* The elements a backward work item (an input row) touches: the row, and the output rows of
 * the windows that cover it. */
static long backward_row_work(const ct_window2d *g)
{
    int64_t covering_rows = (g->kh + g->sh - 1) / g->sh;
    return (long)(g->w + covering_rows * g->out_w);
}

/* Launches a pooling kernel over n work items (rows): buffers as the kernel wants them. */
static ct_status launch_window(ct_device device, ct_kernel_id kernel, const ct_window2d *g, int64_t n,
                               const ct_tensor *const *tensors, int count, long flag, long work)
{
    ct_kparams p = {0};
    ct_window2d_pack(g, &p);
    p.n = (long)n;
    p.l[0] = flag;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {NULL};
    for (int i = 0; i < count; i++) {
        buffers[i] = ct_tensor_handle(tensors[i]);
        p.off[i] = (long)tensors[i]->offset;
    }
    return ct_backend_launch(device, kernel, buffers, &p, work);
}

/* Runs a pass in the device's own pooling code when it has one for this (the CPU's loops), else
 * launches the dialect's kernel over n work items as launch_window does. x, y and indices are
 * the pass's tensors as ct_pool2d_args names them (indices NULL for average pooling). */
static ct_status run_pool(ct_device device, ct_pool_pass pass, ct_kernel_id kernel, const ct_window2d *g,
                          const ct_tensor *x, const ct_tensor *y, const ct_tensor *indices,
                          bool include_pad)
{
    ct_pool2d_args a = {.pass = pass, .dtype = x->dtype, .planes = (long)(x->shape[0] * x->shape[1]),
                        .h = (long)g->h, .w = (long)g->w, .out_h = (long)g->out_h, .out_w = (long)g->out_w,
                        .kernel = {(long)g->kh, (long)g->kw}, .stride = {(long)g->sh, (long)g->sw},
                        .padding = {(long)g->ph, (long)g->pw}, .count_include_pad = include_pad,
                        .x = ct_tensor_handle(x), .x_offset = (long)x->offset,
                        .y = ct_tensor_handle(y), .y_offset = (long)y->offset,
                        .indices = indices ? ct_tensor_handle(indices) : NULL,
                        .indices_offset = indices ? (long)indices->offset : 0};
    if (a.planes == 0) return CT_OK; /* an empty batch: nothing to pool (and no buffers) */
    if (ct_backend_pool2d_takes(device, &a)) return ct_backend_pool2d(device, &a);
    bool forward = pass == CT_POOL_MAX_FORWARD || pass == CT_POOL_AVG_FORWARD;
    int64_t planes = x->shape[0] * x->shape[1];
    /* The kernels' buffers: forward out (y), [indices], input (x); backward grad_in (x),
     * grad_out (y), [indices]. */
    const ct_tensor *tensors[3];
    int count = 0;
    if (forward) {
        tensors[count++] = y;
        if (indices) tensors[count++] = indices;
        tensors[count++] = x;
        return launch_window(device, kernel, g, planes * g->out_h, tensors, count, include_pad ? 1 : 0,
                             (long)(g->out_w * g->kh * g->kw));
    }
    tensors[count++] = x;
    tensors[count++] = y;
    if (indices) tensors[count++] = indices;
    return launch_window(device, kernel, g, planes * g->h, tensors, count, include_pad ? 1 : 0,
                         backward_row_work(g));
}

/* ---- max pooling ---- */

static ct_status max_pool2d_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(max_pool2d_backward);
    const ct_input_meta *in = &node->inputs[0];
    const ct_tensor *indices = node->saved[0];
    ct_window2d g;
    window_of_node(node, &g);
    ct_tensor *gout = ct_contiguous(grad);
    ct_tensor *gin = gout ? ct_tensor_alloc("MaxPool2DWithIndicesBackward", in->device, in->dtype,
                                            in->shape, 4) : NULL;
    ct_status status = gin ? CT_OK : ct_last_error();
    if (status == CT_OK)
        status = run_pool(in->device, CT_POOL_MAX_BACKWARD, kernels[in->dtype], &g, gin, gout, indices,
                          false);
    ct_release(gout);
    if (status != CT_OK) {
        ct_release(gin);
        return status;
    }
    grads[0] = gin;
    return CT_OK;
}

ct_tensor *ct_max_pool2d_with_indices(const ct_tensor *input, const int64_t kernel_size[2],
                                      const int64_t stride[2], const int64_t padding[2],
                                      ct_tensor **indices)
{
    CT_API_ENTER;
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(max_pool2d);
    if (indices) *indices = NULL;
    ct_window2d g;
    if (pool_setup(MAX_FN, input, kernel_size, stride, padding, &g) != CT_OK) return ct_api_return(NULL);
    ct_device device = input->storage->device;
    int64_t shape[4] = {input->shape[0], input->shape[1], g.out_h, g.out_w};
    ct_tensor *x = ct_contiguous(input);
    ct_tensor *out = x ? ct_tensor_alloc(MAX_FN, device, input->dtype, shape, 4) : NULL;
    ct_tensor *chosen = out ? ct_tensor_alloc(MAX_FN, device, CT_I64, shape, 4) : NULL;
    ct_status status = chosen ? CT_OK : ct_last_error();
    if (status == CT_OK)
        status = run_pool(device, CT_POOL_MAX_FORWARD, kernels[input->dtype], &g, x, out, chosen, false);
    ct_release(x);
    if (status != CT_OK) {
        ct_release(out);
        ct_release(chosen);
        return ct_api_return(NULL);
    }
    ct_node *node;
    out = ct_record(out, "MaxPool2DWithIndicesBackward", max_pool2d_backward, &input, 1, &node);
    if (node) {
        save_window(node, &g);
        if (ct_node_save(node, chosen) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    if (!out || !indices) {
        ct_release(chosen);
        return ct_api_return(out);
    }
    out = ct_api_return(out);
    if (!out) {
        ct_release(chosen);
        return NULL;
    }
    ct_api_enter(); /* the second result goes into the caller's scope as the first does */
    *indices = ct_api_return(chosen);
    return out;
}

ct_tensor *ct_max_pool2d(const ct_tensor *input, const int64_t kernel_size[2],
                         const int64_t stride[2], const int64_t padding[2])
{
    return ct_max_pool2d_with_indices(input, kernel_size, stride, padding, NULL);
}

/* ---- average pooling ---- */

static ct_status avg_pool2d_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(avg_pool2d_backward);
    const ct_input_meta *in = &node->inputs[0];
    ct_window2d g;
    window_of_node(node, &g);
    ct_tensor *gout = ct_contiguous(grad);
    ct_tensor *gin = gout ? ct_tensor_alloc("AvgPool2DBackward", in->device, in->dtype, in->shape, 4)
                          : NULL;
    ct_status status = gin ? CT_OK : ct_last_error();
    if (status == CT_OK)
        status = run_pool(in->device, CT_POOL_AVG_BACKWARD, kernels[in->dtype], &g, gin, gout, NULL,
                          node->ints[POOL_INT_INCLUDE_PAD] != 0);
    ct_release(gout);
    if (status != CT_OK) {
        ct_release(gin);
        return status;
    }
    grads[0] = gin;
    return CT_OK;
}

ct_tensor *ct_avg_pool2d(const ct_tensor *input, const int64_t kernel_size[2],
                         const int64_t stride[2], const int64_t padding[2], bool count_include_pad)
{
    CT_API_ENTER;
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(avg_pool2d);
    ct_window2d g;
    if (pool_setup(AVG_FN, input, kernel_size, stride, padding, &g) != CT_OK) return ct_api_return(NULL);
    ct_device device = input->storage->device;
    int64_t shape[4] = {input->shape[0], input->shape[1], g.out_h, g.out_w};
    ct_tensor *x = ct_contiguous(input);
    ct_tensor *out = x ? ct_tensor_alloc(AVG_FN, device, input->dtype, shape, 4) : NULL;
    ct_status status = out ? CT_OK : ct_last_error();
    if (status == CT_OK)
        status = run_pool(device, CT_POOL_AVG_FORWARD, kernels[input->dtype], &g, x, out, NULL,
                          count_include_pad);
    ct_release(x);
    if (status != CT_OK) {
        ct_release(out);
        return ct_api_return(NULL);
    }
    ct_node *node;
    out = ct_record(out, "AvgPool2DBackward", avg_pool2d_backward, &input, 1, &node);
    if (node) {
        save_window(node, &g);
        node->ints[POOL_INT_INCLUDE_PAD] = count_include_pad ? 1 : 0;
    }
    return ct_api_return(out);
}
