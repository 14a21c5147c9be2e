/* torch.nn.functional.conv2d as im2col + GEMM: the windows of a chunk of samples are unfolded
 * into a [k, l] matrix per sample (kernels/nn.ct), and each group's weight [og, kg] multiplies
 * its rows through the device's BLAS, one batched call per group and chunk, straight into the
 * output. The im2col buffer has the same size every call for a given layer and batch, so the
 * caching allocator hands the same block back each step. */
#include <limits.h>

#include "ops/nn_internal.h"
#include "ops/autocast.h"

static const char *const FN = "ct_conv2d";

/* The largest im2col buffer: a batch whose unfolded windows are larger runs in chunks. */
#define CT_CONV2D_MAX_COL_BYTES ((int64_t)64 << 20)
static _Atomic int64_t col_limit = CT_CONV2D_MAX_COL_BYTES;

void ct_conv2d_set_col_limit_for_testing(int64_t bytes)
{
    col_limit = bytes > 0 ? bytes : CT_CONV2D_MAX_COL_BYTES;
}

void ct_conv2d_make_setup(const int64_t *input_shape, const int64_t *weight_shape,
                          const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2], int64_t groups, ct_dtype dtype,
                          ct_conv2d_setup *s)
{
    ct_window2d *g = &s->g;
    s->n = input_shape[0];
    s->c = input_shape[1];
    g->h = input_shape[2];
    g->w = input_shape[3];
    s->o = weight_shape[0];
    g->kh = weight_shape[2];
    g->kw = weight_shape[3];
    g->sh = stride[0];
    g->sw = stride[1];
    g->ph = padding[0];
    g->pw = padding[1];
    g->dh = dilation[0];
    g->dw = dilation[1];
    g->out_h = (g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1;
    g->out_w = (g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
    s->groups = groups;
    s->cg = s->c / groups;
    s->og = s->o / groups;
    s->kg = s->cg * g->kh * g->kw;
    s->k = s->c * g->kh * g->kw;
    s->l = g->out_h * g->out_w;
    int64_t sample_bytes = s->k * s->l * (int64_t)ct_dtype_size(dtype);
    s->chunk = sample_bytes > 0 ? col_limit / sample_bytes : s->n;
    if (s->chunk > s->n) s->chunk = s->n;
    if (s->chunk < 1) s->chunk = 1;
}

ct_conv2d_args ct_conv2d_library_args(const ct_conv2d_setup *s, ct_conv_pass pass, const ct_tensor *x,
                                      const ct_tensor *w, const ct_tensor *bias, const ct_tensor *y)
{
    const ct_window2d *g = &s->g;
    ct_conv2d_args a = {.pass = pass, .dtype = x->dtype, .n = (long)s->n, .c = (long)s->c, .h = (long)g->h,
                        .w = (long)g->w, .o = (long)s->o, .kh = (long)g->kh, .kw = (long)g->kw,
                        .out_h = (long)g->out_h, .out_w = (long)g->out_w, .groups = (long)s->groups,
                        .stride = {(long)g->sh, (long)g->sw}, .padding = {(long)g->ph, (long)g->pw},
                        .dilation = {(long)g->dh, (long)g->dw}};
    a.x = ct_tensor_handle(x);
    a.x_offset = (long)x->offset;
    a.weight = ct_tensor_handle(w);
    a.weight_offset = (long)w->offset;
    a.y = ct_tensor_handle(y);
    a.y_offset = (long)y->offset;
    if (bias) {
        a.bias = ct_tensor_handle(bias);
        a.bias_offset = (long)bias->offset;
    }
    return a;
}

ct_tensor *ct_conv2d_alloc_col(const ct_conv2d_setup *s, ct_device device, ct_dtype dtype)
{
    int64_t shape[2] = {s->chunk * s->k, s->l};
    return ct_tensor_alloc(FN, device, dtype, shape, 2);
}

ct_status ct_conv2d_im2col(const ct_tensor *x, int64_t first, int64_t count,
                           const ct_conv2d_setup *s, ct_tensor *col)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(im2col);
    ct_kparams p = {0};
    ct_window2d_pack(&s->g, &p);
    p.n = (long)(count * s->k);
    p.off[0] = (long)col->offset;
    p.off[1] = (long)(x->offset + first * s->c * s->g.h * s->g.w);
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(col), ct_tensor_handle(x)};
    return ct_backend_launch(x->storage->device, kernels[x->dtype], buffers, &p, (long)s->l);
}

/* ---- checks ---- */

static ct_status check_window_arguments(const int64_t stride[2], const int64_t padding[2],
                                        const int64_t dilation[2], int64_t groups)
{
    if (groups <= 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: groups must be positive, but got %lld", FN,
                        (long long)groups);
    const char *names[3] = {"stride", "padding", "dilation"};
    const int64_t *values[3] = {stride, padding, dilation};
    for (int a = 0; a < 3; a++) {
        int64_t lowest = a == 1 ? 0 : 1;
        for (int d = 0; d < 2; d++) {
            if (values[a][d] < lowest || values[a][d] > INT_MAX)
                return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s must be %s (and below 2^31), but "
                                "got %s [%lld, %lld]", FN, names[a],
                                a == 1 ? "non-negative" : "positive", names[a],
                                (long long)values[a][0], (long long)values[a][1]);
        }
    }
    return CT_OK;
}

static ct_status check_dtypes(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias)
{
    if (!ct_dtype_is_floating(input->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: input has dtype %s; convolution needs a floating "
                        "dtype (float32, float64, float16 or bfloat16)", FN,
                        ct_dtype_name(input->dtype));
    const ct_tensor *others[2] = {weight, bias};
    const char *names[2] = {"weight", "bias"};
    for (int i = 0; i < 2; i++)
        if (others[i] && others[i]->dtype != input->dtype)
            return ct_error(CT_ERR_DTYPE, "%s: input is %s but %s is %s; they must have the same "
                            "dtype (convert one with ct_to_dtype)", FN,
                            ct_dtype_name(input->dtype), names[i], ct_dtype_name(others[i]->dtype));
    return CT_OK;
}

static ct_status check_shapes(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias,
                              const int64_t padding[2], const int64_t dilation[2], int64_t groups)
{
    char si[256], sw[256], sb[256];
    ct_shape_format(input->shape, input->ndim, si, sizeof si);
    ct_shape_format(weight->shape, weight->ndim, sw, sizeof sw);
    if (input->ndim != 4)
        return ct_error(CT_ERR_SHAPE, "%s: expected a 4-D input [N, C, H, W], but got input of "
                        "shape %s", FN, si);
    if (weight->ndim != 4)
        return ct_error(CT_ERR_SHAPE, "%s: expected a 4-D weight [O, C / groups, kH, kW], but got "
                        "weight of shape %s", FN, sw);
    const int64_t *is = input->shape, *ws = weight->shape;
    if (ws[0] % groups != 0)
        return ct_error(CT_ERR_SHAPE, "%s: weight %s has %lld output channels, which groups = "
                        "%lld does not divide", FN, sw, (long long)ws[0], (long long)groups);
    if (is[1] % groups != 0)
        return ct_error(CT_ERR_SHAPE, "%s: input %s has %lld channels, which groups = %lld does "
                        "not divide", FN, si, (long long)is[1], (long long)groups);
    if (ws[1] * groups != is[1])
        return ct_error(CT_ERR_SHAPE, "%s: weight %s with groups = %lld expects an input with "
                        "%lld channels, but input %s has %lld", FN, sw, (long long)groups,
                        (long long)(ws[1] * groups), si, (long long)is[1]);
    if (ws[2] <= 0 || ws[3] <= 0)
        return ct_error(CT_ERR_SHAPE, "%s: weight %s has an empty kernel", FN, sw);
    if (bias && (bias->ndim != 1 || bias->shape[0] != ws[0]))
        return ct_error(CT_ERR_SHAPE, "%s: expected bias of shape [%lld] (one per output channel "
                        "of weight %s), but got bias of shape %s", FN, (long long)ws[0], sw,
                        ct_shape_format(bias->shape, bias->ndim, sb, sizeof sb));
    for (int d = 0; d < 2; d++) {
        int64_t span = dilation[d] * (ws[2 + d] - 1) + 1, padded = is[2 + d] + 2 * padding[d];
        if (span > padded)
            return ct_error(CT_ERR_SHAPE, "%s: the kernel %lld x %lld (dilation [%lld, %lld]: %lld "
                            "x %lld effective) is larger than the padded input %lld x %lld (input %s, "
                            "padding [%lld, %lld])", FN, (long long)ws[2], (long long)ws[3],
                            (long long)dilation[0], (long long)dilation[1],
                            (long long)(dilation[0] * (ws[2] - 1) + 1),
                            (long long)(dilation[1] * (ws[3] - 1) + 1),
                            (long long)(is[2] + 2 * padding[0]), (long long)(is[3] + 2 * padding[1]),
                            si, (long long)padding[0], (long long)padding[1]);
    }
    return CT_OK;
}

static ct_status check_blas_sizes(const ct_conv2d_setup *s)
{
    if (s->og > INT_MAX || s->kg > INT_MAX || s->l > INT_MAX)
        return ct_error(CT_ERR_SHAPE, "%s: the products of this convolution (%lld x %lld by %lld "
                        "x %lld per group) are too large for BLAS (sizes must be below 2^31)", FN,
                        (long long)s->og, (long long)s->kg, (long long)s->kg, (long long)s->l);
    return CT_OK;
}

/* ---- the forward ---- */

/* out [N, O, L] = bias per channel (the GEMM then adds to it), or zeros when there is no bias
 * and nothing to multiply. */
static ct_status start_output(ct_tensor *out, const ct_tensor *bias, const ct_conv2d_setup *s)
{
    if (!bias) return s->kg == 0 ? ct_tensor_fill(out, 0.0) : CT_OK;
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(conv2d_bias_fill);
    ct_kparams p = {0};
    p.n = (long)(s->n * s->o); /* a row of l per work item */
    p.off[0] = (long)out->offset;
    p.off[1] = (long)bias->offset;
    p.stride[1][0] = (long)bias->strides[0];
    p.l[0] = (long)s->l;
    p.l[1] = (long)s->o;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(bias)};
    return ct_backend_launch(out->storage->device, kernels[out->dtype], buffers, &p, (long)s->l);
}

/* out[first .. first + count) += weight_g @ col_g for every group. */
static ct_status multiply_chunk(const ct_tensor *w, const ct_tensor *col, ct_tensor *out,
                                int64_t first, int64_t count, const ct_conv2d_setup *s, double beta)
{
    for (int64_t g = 0; g < s->groups; g++) {
        ct_gemm_args a = {.dtype = out->dtype, .alpha = 1.0, .beta = beta};
        a.m = (long)s->og;
        a.n = (long)s->l;
        a.k = (long)s->kg;
        a.batch = (long)count;
        a.a = ct_tensor_handle(w);
        a.a_offset = (long)(w->offset + g * s->og * s->kg);
        a.lda = (long)s->kg;
        a.a_batch_stride = 0;
        a.b = ct_tensor_handle(col);
        a.b_offset = (long)(col->offset + g * s->kg * s->l);
        a.ldb = (long)s->l;
        a.b_batch_stride = (long)(s->k * s->l);
        a.c = ct_tensor_handle(out);
        a.c_offset = (long)(out->offset + (first * s->o + g * s->og) * s->l);
        a.ldc = (long)s->l;
        a.c_batch_stride = (long)(s->o * s->l);
        ct_status status = ct_gemm_of("ct_conv2d", &a, w, col, out);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* The convolution of contiguous x and w (bias may be NULL). */
static ct_tensor *conv2d_forward(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                                 const ct_conv2d_setup *s)
{
    ct_device device = x->storage->device;
    int64_t shape[4] = {s->n, s->o, s->g.out_h, s->g.out_w};
    ct_tensor *out = ct_tensor_alloc(FN, device, x->dtype, shape, 4);
    if (!out || ct_numel(out) == 0) return out;
    ct_tensor *b = bias && s->kg > 0 ? ct_contiguous(bias) : NULL;
    ct_conv2d_args library = ct_conv2d_library_args(s, CT_CONV_FORWARD, x, w, b, out);
    if (s->kg > 0 && (!bias || b) && ct_backend_conv2d_takes(device, &library)) {
        ct_status status = ct_backend_conv2d(device, &library);
        ct_release(b);
        if (status == CT_OK) return out;
        ct_release(out);
        return NULL;
    }
    ct_release(b);
    ct_status status = start_output(out, bias, s);
    if (status != CT_OK || s->kg == 0) {
        if (status == CT_OK) return out;
        ct_release(out);
        return NULL;
    }
    ct_tensor *col = ct_conv2d_alloc_col(s, device, x->dtype);
    if (!col) status = ct_last_error();
    for (int64_t first = 0; status == CT_OK && first < s->n; first += s->chunk) {
        int64_t count = s->n - first < s->chunk ? s->n - first : s->chunk;
        status = ct_conv2d_im2col(x, first, count, s, col);
        if (status == CT_OK) status = multiply_chunk(w, col, out, first, count, s, bias ? 1.0 : 0.0);
    }
    ct_release(col);
    if (status != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_conv2d(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias,
                     const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                     int64_t groups)
{
    CT_API_ENTER;
    CT_AUTOCAST3(CT_AUTOCAST_LOWER, ct_conv2d(c_[0], c_[1], c_[2], stride, padding, dilation, groups), input, weight, bias)
    const ct_tensor *operands[3] = {input, weight, bias};
    const char *names[3] = {"input", "weight", "bias"};
    int64_t st[2], pad[2], dil[2];
    ct_window_pair(stride, 1, 1, st);
    ct_window_pair(padding, 0, 0, pad);
    ct_window_pair(dilation, 1, 1, dil);
    if (ct_check_operands(FN, operands, names, bias ? 3 : 2) != CT_OK ||
        check_window_arguments(st, pad, dil, groups) != CT_OK ||
        check_dtypes(input, weight, bias) != CT_OK ||
        check_shapes(input, weight, bias, pad, dil, groups) != CT_OK)
        return ct_api_return(NULL);
    ct_conv2d_setup s;
    ct_conv2d_make_setup(input->shape, weight->shape, st, pad, dil, groups, input->dtype, &s);
    if (check_blas_sizes(&s) != CT_OK) return ct_api_return(NULL);

    ct_no_grad_push(); /* the pieces are not part of the graph: the node below is */
    ct_tensor *x = ct_contiguous(input), *w = ct_contiguous(weight);
    ct_tensor *out = x && w ? conv2d_forward(x, w, bias, &s) : NULL;
    ct_no_grad_pop();

    ct_node *node;
    out = ct_record(out, "ConvolutionBackward", ct_conv2d_backward, operands, 3, &node);
    if (node) {
        int64_t *ints = node->ints;
        for (int d = 0; d < 2; d++) {
            ints[CT_CONV2D_INT_STRIDE + d] = st[d];
            ints[CT_CONV2D_INT_PADDING + d] = pad[d];
            ints[CT_CONV2D_INT_DILATION + d] = dil[d];
        }
        ints[CT_CONV2D_INT_GROUPS] = groups;
        if (ct_node_save(node, x) != CT_OK || ct_node_save(node, w) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(x);
    ct_release(w);
    return ct_api_return(out);
}
