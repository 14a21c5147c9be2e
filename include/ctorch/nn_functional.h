/* ctorch nn functional: convolution, pooling, batch and layer normalisation, embedding
 * (torch.nn.functional's conv2d, max_pool2d, avg_pool2d, batch_norm, layer_norm, embedding).
 * They take floating tensors on one device, record their backward for autograd, and return new
 * references (NULL with an error on bad input, as every op).
 *
 * Window arguments are pairs {height, width}. NULL means PyTorch's default: stride 1 for
 * ct_conv2d and the kernel size for the pools, padding 0, dilation 1. */
#ifndef CTORCH_NN_FUNCTIONAL_H
#define CTORCH_NN_FUNCTIONAL_H

#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or NULL: output [N, O, H', W']
 * with H' = (H + 2 * padding[0] - dilation[0] * (kH - 1) - 1) / stride[0] + 1 (W' alike).
 * im2col + GEMM through the device's BLAS. */
ct_tensor *ct_conv2d(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias,
                     const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                     int64_t groups);

/* The largest value of each window of input [N, C, H, W]; padding (at most half the kernel)
 * counts as -inf; NaN wins. Output [N, C, H', W'] with H' = (H + 2 * padding[0] - kernel[0]) /
 * stride[0] + 1. The gradient goes to the (first) largest element of each window. */
ct_tensor *ct_max_pool2d(const ct_tensor *input, const int64_t kernel_size[2],
                         const int64_t stride[2], const int64_t padding[2]);
/* The same, also giving (when indices is not NULL) an int64 tensor of the output's shape with
 * each maximum's position in its input plane (h * W + w), as return_indices=True does. */
ct_tensor *ct_max_pool2d_with_indices(const ct_tensor *input, const int64_t kernel_size[2],
                                      const int64_t stride[2], const int64_t padding[2],
                                      ct_tensor **indices);

/* The mean of each window of input [N, C, H, W] (output size as ct_max_pool2d). Windows that
 * overlap the padding divide by the whole window (count_include_pad) or by the elements of the
 * input they cover. */
ct_tensor *ct_avg_pool2d(const ct_tensor *input, const int64_t kernel_size[2],
                         const int64_t stride[2], const int64_t padding[2], bool count_include_pad);

/* Batch normalisation over dim 1 of input [N, C] or [N, C, ...] (BatchNorm1d/2d):
 * y = (x - mean) / sqrt(var + eps) * weight + bias, per channel. weight and bias ([C]) may be
 * NULL (no affine part).
 * training: mean and the biased variance of the batch; running_mean and running_var ([C], the
 * input's dtype; may be NULL) are updated in place, outside autograd:
 *     running = (1 - momentum) * running + momentum * batch_statistic
 * with the unbiased variance for running_var (PyTorch's rule; for its momentum=None cumulative
 * average pass momentum = 1 / batches_seen). Needs more than one value per channel.
 * Not training: normalises with running_mean and running_var, which must then be given. */
ct_tensor *ct_batch_norm(const ct_tensor *input, ct_tensor *running_mean, ct_tensor *running_var,
                         const ct_tensor *weight, const ct_tensor *bias, bool training,
                         double momentum, double eps);

/* Layer normalisation over the last ndim dims of x, whose sizes must be normalized_shape:
 * y = (x - mean) / sqrt(var + eps) * weight + bias, the mean and biased variance taken over
 * those dims for each of the leading positions. weight and bias (normalized_shape, x's dtype)
 * may be NULL. eps >= 0 (PyTorch's default 1e-5). float16 and bfloat16 compute in float32; the
 * weight's and bias's gradients are added in a fixed order (the same bits run to run). */
ct_tensor *ct_layer_norm(const ct_tensor *x, const int64_t *normalized_shape, int ndim,
                         const ct_tensor *weight, const ct_tensor *bias, double eps);

/* The rows of weight [V, C] that the int32 or int64 indices (any shape) name: [..., C].
 * padding_idx -1 means none; a row in [0, V) gets no gradient (its output is still the row).
 * PyTorch's negative padding_idx counting from the end is refused, since -1 means none here:
 * pass V + padding_idx. An index outside [0, V) is CT_ERR_INDEX naming it (checked on the
 * device, read back before any row is read, as ct_index_select). The weight's gradient is the
 * sum of the output's gradient rows that each row was picked by, added in the order of the
 * indices: the same bits run to run and on every device (no atomics). */
ct_tensor *ct_embedding(const ct_tensor *weight, const ct_tensor *indices, int64_t padding_idx);
/* torch.nn.functional.scaled_dot_product_attention:
 *     out = softmax(q k^T * scale + mask) v     (dropout on the softmax's weights)
 * q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]: out [..., Tq, Dv]. The leading dims broadcast
 * as in ct_matmul (PyTorch's rule); q, k and v share one floating dtype and one device.
 * attn_mask: NULL, bool (true = attend) or q's dtype (added to the scores), broadcastable to
 * [..., Tq, Tk]. is_causal: query i attends keys j <= i (the top-left aligned lower triangle, as
 * PyTorch); giving it with attn_mask is an error. scale 0 means 1 / sqrt(D). dropout_p in [0, 1)
 * drops weights with the device's generator (ct_manual_seed) and scales the rest by 1 / (1 - p).
 * A query row whose keys are all masked gives 0 (and gradient 0), as PyTorch's
 * F.scaled_dot_product_attention does since 2.5 (its safe softmax; a plain softmax gives NaN).
 * Two paths: a fused one (FlashAttention-2: tiled, online softmax, memory linear in T; saves the
 * log-sum-exp of each row for its fused backward) when there is no attn_mask (is_causal is
 * fine), no dropout, D and Dv <= 128 and q, k, v have the same leading dims; otherwise the ops
 * composed (matmul, softmax, ...). The environment variable CTORCH_SDPA=math forces the composed
 * path, CTORCH_SDPA=fused the fused one (an error where it cannot serve), auto (the default)
 * chooses the faster: the fused one, but on the CPU for float16 and bfloat16, whose fused
 * kernels there are slower than the composed path (the CPU's float32 and float64 ones run over
 * the BLAS). float16 and bfloat16 compute in float32 inside the fused kernels. Under autocast q,
 * k and v run in the region's low dtype. */
ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k,
                                           const ct_tensor *v, const ct_tensor *attn_mask,
                                           double dropout_p, bool is_causal, double scale);

#ifdef __cplusplus
}
#endif
#endif
