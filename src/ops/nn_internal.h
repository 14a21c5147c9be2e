/* Shared by the nn ops (conv2d.c, conv2d_backward.c, pool2d.c, batch_norm.c): the 2-D window
 * geometry the nn kernels read (kernels/nn.ct), and the pieces of the convolution that its
 * backward reuses. */
#ifndef CT_OPS_NN_INTERNAL_H
#define CT_OPS_NN_INTERNAL_H

#include "ctorch/nn_functional.h"
#include "device/backend_interface.h"
#include "ops/ops_autograd.h"

/* The dtype the nn and batch-norm kernels keep their sums and per-row or per-channel tables in
 * (CT_REAL in the kernels): float32 for float16 and bfloat16 tensors, as PyTorch's kernels
 * accumulate them; the dtype itself otherwise. */
static inline ct_dtype ct_nn_accumulate_dtype(ct_dtype dtype)
{
    return dtype == CT_F16 || dtype == CT_BF16 ? CT_F32 : dtype;
}

/* A 2-D window op over planes [h, w] giving planes [out_h, out_w]. */
typedef struct ct_window2d {
    int64_t h, w, out_h, out_w;
    int64_t kh, kw;  /* kernel */
    int64_t sh, sw;  /* stride */
    int64_t ph, pw;  /* padding */
    int64_t dh, dw;  /* dilation */
} ct_window2d;

/* Puts the geometry where the nn kernels read it: the index-space fields, which they do not
 * otherwise use (p.size[0..5] = h, w, out_h, out_w, kh, kw; p.stride[0][0..5] = sh, sw, ph,
 * pw, dh, dw). */
static inline void ct_window2d_pack(const ct_window2d *g, ct_kparams *p)
{
    p->ndim = 0;
    p->size[0] = (long)g->h;
    p->size[1] = (long)g->w;
    p->size[2] = (long)g->out_h;
    p->size[3] = (long)g->out_w;
    p->size[4] = (long)g->kh;
    p->size[5] = (long)g->kw;
    p->stride[0][0] = (long)g->sh;
    p->stride[0][1] = (long)g->sw;
    p->stride[0][2] = (long)g->ph;
    p->stride[0][3] = (long)g->pw;
    p->stride[0][4] = (long)g->dh;
    p->stride[0][5] = (long)g->dw;
}

/* A window argument {height, width}, or its default when NULL. */
static inline void ct_window_pair(const int64_t *given, int64_t default_h, int64_t default_w,
                                  int64_t out[2])
{
    out[0] = given ? given[0] : default_h;
    out[1] = given ? given[1] : default_w;
}

/* ---- convolution ----
 * Input [n, c, h, w], weight [o, c / groups, kh, kw]. The im2col buffer of a chunk of samples
 * is [samples, k, l]: per sample, k = c * kh * kw rows (channel-major, so that group g's rows
 * are the block [g * kg, (g + 1) * kg)) of l = out_h * out_w columns. */
typedef struct ct_conv2d_setup {
    ct_window2d g;
    int64_t n, c, o, groups;
    int64_t cg, og, kg; /* per group: input channels, output channels, im2col rows */
    int64_t k, l;
    int64_t chunk;      /* samples per im2col buffer */
} ct_conv2d_setup;

/* The node's integer arguments: stride, padding, dilation, groups. */
enum { CT_CONV2D_INT_STRIDE = 0, CT_CONV2D_INT_PADDING = 2, CT_CONV2D_INT_DILATION = 4,
       CT_CONV2D_INT_GROUPS = 6 };

/* Fills s from checked shapes and arguments. */
void ct_conv2d_make_setup(const int64_t *input_shape, const int64_t *weight_shape,
                          const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2], int64_t groups, ct_dtype dtype,
                          ct_conv2d_setup *s);
/* col [chunk * k, l] (contiguous) = im2col of samples [first, first + count) of contiguous x. */
ct_status ct_conv2d_im2col(const ct_tensor *x, int64_t first, int64_t count,
                           const ct_conv2d_setup *s, ct_tensor *col);
/* The im2col buffer for s: [chunk * k, l] on device, from the caching allocator. */
/* The convolution of contiguous x, w and y as the backend's DNN library takes it (bias NULL: none;
 * only the forward reads it). */
ct_conv2d_args ct_conv2d_library_args(const ct_conv2d_setup *s, ct_conv_pass pass, const ct_tensor *x,
                                      const ct_tensor *w, const ct_tensor *bias, const ct_tensor *y);
ct_tensor *ct_conv2d_alloc_col(const ct_conv2d_setup *s, ct_device device, ct_dtype dtype);
/* Tests only: the largest im2col buffer in bytes (0 restores the default of 64 MiB), so that
 * a small batch runs in chunks. */
void ct_conv2d_set_col_limit_for_testing(int64_t bytes);
/* The backward of ct_conv2d (conv2d_backward.c): saved[0] = contiguous input, saved[1] =
 * contiguous weight. */
ct_status ct_conv2d_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

/* ---- cross-entropy ----
 * The mean over rows of -sum_c q_c log_softmax(logits)_c, q = (1 - smoothing) one_hot(target) +
 * smoothing / C, as one fused op with its own backward (cross_entropy.c). The caller has
 * checked the operands: logits [N, C] floating, target int64 [N], one device; the target's
 * values are checked here (CT_ERR_INDEX, named after function). */
ct_tensor *ct_softmax_cross_entropy(const char *function, const ct_tensor *logits,
                                    const ct_tensor *target, double smoothing);

/* ---- linear ----
 * y = x W^T + b (b may be NULL) for x [..., in], W [out, in], b [out]: one op with its own
 * backward (linear.c); operands it cannot take (other dtypes, devices, shapes) go through
 * transpose, matmul and add, which report what is wrong. */
ct_tensor *ct_linear_apply(const char *function, const ct_tensor *x, const ct_tensor *w,
                           const ct_tensor *b);
/* relu(x W^T + b) as one op with its own backward (linear_relu.c): the product, then one kernel
 * that adds the bias and applies ReLU; operands it cannot take (no bias, and those of
 * ct_linear_apply) go through ct_linear_apply and ct_relu, with their results and errors. */
ct_tensor *ct_linear_relu_apply(const char *function, const ct_tensor *x, const ct_tensor *w,
                                const ct_tensor *b);

/* The pieces both share (linear.c). Does the one-GEMM path take these operands (b may be NULL)? */
bool ct_linear_takes(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b);
/* For operands it takes, with grad mode off: y2 [rows, out] = x2 W^T (+ b when b is given: the
 * bias copied in first; when NULL the product alone), x seen as x2 [rows, in] laid out for BLAS
 * (a new reference in *x2, which the backward saves). NULL on failure (*x2 NULL too). */
ct_tensor *ct_linear_product(const char *function, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *b, ct_tensor **x2);
/* y2 [rows, out] seen with x's leading dims: [..., out] (a new reference). */
ct_tensor *ct_linear_output(const ct_tensor *x, ct_tensor *y2);
/* The gradients of x (input 0) and W (input 1) that the node needs, from the gradient g2 of
 * the product [rows, out]: g2 W and g2^T x2; saved[0] = x2, saved[1] = W. */
ct_status ct_linear_backward_products(ct_node *node, const ct_tensor *g2, ct_tensor **grads);
/* The node's output gradient as [rows, out] (saved[0] = x2, saved[1] = W): a new reference. */
ct_tensor *ct_linear_grad_rows(const ct_node *node, const ct_tensor *grad);

#endif
