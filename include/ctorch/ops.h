/* ctorch ops: device-independent front ends. All operands must be on one device (an error names
 * both devices otherwise; ctorch never copies silently). Shapes broadcast as in PyTorch and
 * dtypes promote as in PyTorch (see ct_promote_types). Every result is a new reference. */
#ifndef CTORCH_OPS_H
#define CTORCH_OPS_H

#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise, two tensors ---- */
ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b);
/* True division: integers give float32. */
ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b);
/* Integer tensors to negative integer powers give 0 (bases 1 and -1 keep their magnitude), as
 * PyTorch's torch.pow of two tensors does; PyTorch refuses only a Python int exponent, which
 * ctorch has no counterpart of (ct_pow_scalar's exponent is a float: an integer tensor gives
 * float32). */
ct_tensor *ct_pow(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_maximum(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_minimum(const ct_tensor *a, const ct_tensor *b);
/* Comparisons give bool tensors. */
ct_tensor *ct_eq(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_ne(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_lt(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_le(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_gt(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_ge(const ct_tensor *a, const ct_tensor *b);
/* cond ? a : b, elementwise; cond is bool. */
ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);

/* ---- elementwise, a tensor and a scalar, typed as PyTorch types a Python number: a floating
 * tensor keeps its dtype. An integer tensor plus, minus or times an integral scalar keeps its
 * dtype (torch.tensor([1]) + 1 is int64; a bool tensor gives int64): the scalar wraps into the
 * dtype as PyTorch casts it (int32 + 2^40 adds 0, uint8 + -1 adds 255) and so does the
 * arithmetic. With a non-integral scalar (or one beyond int64) it gives float32 (the default
 * float dtype). ct_div_scalar is true division (float32 for
 * integers), ct_pow_scalar's exponent acts as a float (float32 for integers), comparisons give
 * bool. ---- */
ct_tensor *ct_add_scalar(const ct_tensor *a, double s);
ct_tensor *ct_sub_scalar(const ct_tensor *a, double s);
ct_tensor *ct_mul_scalar(const ct_tensor *a, double s);
ct_tensor *ct_div_scalar(const ct_tensor *a, double s);
ct_tensor *ct_pow_scalar(const ct_tensor *a, double exponent);
ct_tensor *ct_eq_scalar(const ct_tensor *a, double s);
ct_tensor *ct_ne_scalar(const ct_tensor *a, double s);
ct_tensor *ct_lt_scalar(const ct_tensor *a, double s);
ct_tensor *ct_le_scalar(const ct_tensor *a, double s);
ct_tensor *ct_gt_scalar(const ct_tensor *a, double s);
ct_tensor *ct_ge_scalar(const ct_tensor *a, double s);

/* ---- elementwise, one tensor (exp, log, sqrt, sigmoid, tanh, gelu of integers give float32) */
ct_tensor *ct_neg(const ct_tensor *a);
ct_tensor *ct_abs(const ct_tensor *a);
ct_tensor *ct_exp(const ct_tensor *a);
ct_tensor *ct_log(const ct_tensor *a);
ct_tensor *ct_sqrt(const ct_tensor *a);
ct_tensor *ct_relu(const ct_tensor *a);
ct_tensor *ct_sigmoid(const ct_tensor *a);
ct_tensor *ct_tanh(const ct_tensor *a);
ct_tensor *ct_gelu(const ct_tensor *a); /* exact: x * Phi(x) */
/* PyTorch's gelu(approximate='tanh') (GPT-2's): x / 2 * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
ct_tensor *ct_gelu_tanh(const ct_tensor *a);
/* torch.nn.functional.leaky_relu: x > 0 ? x : negative_slope * x (PyTorch's default 0.01). */
ct_tensor *ct_leaky_relu(const ct_tensor *a, double negative_slope);
/* torch.nn.functional.silu: x * sigmoid(x). */
ct_tensor *ct_silu(const ct_tensor *a);
/* torch.nn.functional.softplus: log(1 + exp(beta x)) / beta, and x where beta x > threshold
 * (PyTorch's defaults beta 1, threshold 20); beta nonzero. */
ct_tensor *ct_softplus(const ct_tensor *a, double beta, double threshold);
/* torch.nn.functional.elu: x > 0 ? x : alpha (exp(x) - 1) (PyTorch's default alpha 1). */
ct_tensor *ct_elu(const ct_tensor *a, double alpha);
/* (leaky_relu, silu, softplus and elu take floating tensors only, as PyTorch's.) */
ct_tensor *ct_log1p(const ct_tensor *a);      /* torch.log1p: log(1 + x), exact near 0 */
ct_tensor *ct_sin(const ct_tensor *a);        /* torch.sin */
ct_tensor *ct_cos(const ct_tensor *a);        /* torch.cos */
ct_tensor *ct_rsqrt(const ct_tensor *a);      /* torch.rsqrt: 1 / sqrt(x) */
ct_tensor *ct_reciprocal(const ct_tensor *a); /* torch.reciprocal: 1 / x */
ct_tensor *ct_erf(const ct_tensor *a);        /* torch.erf */
/* torch.sign, torch.floor, torch.round: keep the dtype (integers are their own floor and round);
 * sign(NaN) is 0, round is half to even (2.5 -> 2), as PyTorch. Their gradient is zero. */
ct_tensor *ct_sign(const ct_tensor *a);
ct_tensor *ct_floor(const ct_tensor *a);
ct_tensor *ct_round(const ct_tensor *a);
ct_tensor *ct_clamp(const ct_tensor *a, double min, double max);
ct_tensor *ct_clamp_min(const ct_tensor *a, double min);
ct_tensor *ct_clamp_max(const ct_tensor *a, double max);

/* ---- reductions: dims lists the dims to reduce (ndims 0 means all dims) ---- */
ct_tensor *ct_sum(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
ct_tensor *ct_mean(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
/* The largest / smallest value over dims (torch.amax / torch.amin). */
ct_tensor *ct_max(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
ct_tensor *ct_min(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
/* Variance with Bessel's correction `correction` (1 = unbiased, as torch.var's default). */
ct_tensor *ct_var(const ct_tensor *a, const int *dims, int ndims, int64_t correction, bool keepdim);
ct_tensor *ct_std(const ct_tensor *a, const int *dims, int ndims, int64_t correction, bool keepdim);
/* int64 indices of the first largest / smallest value along dim. */
ct_tensor *ct_argmax(const ct_tensor *a, int dim, bool keepdim);
ct_tensor *ct_argmin(const ct_tensor *a, int dim, bool keepdim);
/* Over all elements, as flattened (torch.argmax(t) with no dim). */
ct_tensor *ct_argmax_all(const ct_tensor *a);
ct_tensor *ct_argmin_all(const ct_tensor *a);

/* torch.any / torch.all: bool, whether any / every element is nonzero (NaN counts as nonzero);
 * over every element (ct_any, ct_all: 0-d) or along dim (ct_any_dim, ct_all_dim). The empty
 * any is false, the empty all true. */
ct_tensor *ct_any(const ct_tensor *a);
ct_tensor *ct_all(const ct_tensor *a);
ct_tensor *ct_any_dim(const ct_tensor *a, int dim, bool keepdim);
ct_tensor *ct_all_dim(const ct_tensor *a, int dim, bool keepdim);
/* torch.equal: same shape and the same values (NaN is unequal to everything, as PyTorch; dtypes
 * promote). A different shape gives false, not an error; operands on different devices are an
 * error. Reads one value back. */
ct_status ct_equal(const ct_tensor *a, const ct_tensor *b, bool *result);
/* torch.allclose: |a - b| <= atol + rtol |b| everywhere (a and b broadcast), infinities equal
 * when they match, NaNs equal each other when equal_nan (PyTorch's defaults rtol 1e-5, atol
 * 1e-8). Reads one value back. */
ct_status ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol,
                      bool equal_nan, bool *result);
/* torch.isclose: the elementwise test of ct_allclose, bool. */
ct_tensor *ct_isclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol, bool equal_nan);

ct_tensor *ct_softmax(const ct_tensor *a, int dim);
ct_tensor *ct_log_softmax(const ct_tensor *a, int dim);

/* ---- linear algebra: torch.matmul (1-D to batched N-D with broadcasting) ---- */
ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b);
/* torch.set_float32_matmul_precision: how float32 matrix products (ct_matmul, ct_conv2d,
 * the Linear and Conv2d modules, and their gradients) may round on CUDA. "highest" (the default, as in PyTorch): in
 * float32. "high" and "medium": cuBLAS may use TF32 tensor cores (inputs rounded to 10 mantissa
 * bits, float32 sums), many times faster on an A100 or H100. Per process, read at each product.
 * CTORCH_ALLOW_TF32=1 in the environment makes "high" the default (read once, at first use).
 * float64, the CPU (OpenBLAS) and OpenCL (CLBlast) have no TF32 and are unaffected. A string
 * other than the three is CT_ERR_INVALID_ARGUMENT, NULL CT_ERR_NULL_ARGUMENT. */
ct_status ct_set_float32_matmul_precision(const char *precision);
/* "highest", "high" or "medium" (a static string). */
const char *ct_get_float32_matmul_precision(void);

/* ---- joining and indexing ---- */
ct_tensor *ct_cat(const ct_tensor *const *tensors, int count, int dim);
ct_tensor *ct_stack(const ct_tensor *const *tensors, int count, int dim);
/* index is a 1-D int32/int64 tensor. */
ct_tensor *ct_index_select(const ct_tensor *a, int dim, const ct_tensor *index);
/* out[i][j] = a[i][index[i][j]] for dim 1, and so on (torch.gather). */
ct_tensor *ct_gather(const ct_tensor *a, int dim, const ct_tensor *index);
/* torch.scatter(self, dim, index, src): self with out[index[i][j]][j] = src[i][j] (dim 0; alike
 * for the others) over index's extent; index (int32/int64) has self's dims, no larger than src
 * anywhere nor than self but along dim, values in [0, self's size along dim). Duplicate targets
 * take the value of the last position along dim (deterministic; PyTorch leaves it undefined).
 * Any dtype (src's must be self's). Gradients: self's zero where replaced, src's gathered (as
 * PyTorch: with duplicates every one of them gets it). */
ct_tensor *ct_scatter(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *src);
/* torch.scatter_add: self plus src summed at the index (rules as ct_scatter); floating dtypes.
 * The sums run in index order in one work item per element: the same bits on every run and
 * device (no atomics). */
ct_tensor *ct_scatter_add(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *src);
/* torch.index_add(self, dim, index, src, alpha): self with alpha * src's slice k added to slice
 * index[k] along dim; index 1-D, src self's shape but index's length along dim; floating dtypes,
 * deterministic as ct_scatter_add. */
ct_tensor *ct_index_add(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *src,
                        double alpha);
/* torch.masked_select: the 1-D tensor of a's elements where mask (bool, broadcast with a) is true,
 * in row-major order; reads the mask back to count them (as PyTorch syncs). The gradient goes
 * back to the selected places. (x[mask] = v is ct_masked_fill.) */
ct_tensor *ct_masked_select(const ct_tensor *a, const ct_tensor *mask);
/* int64 one-hot of an integer tensor; num_classes -1 means max(index) + 1. */
ct_tensor *ct_one_hot(const ct_tensor *index, int64_t num_classes);
/* value where mask (bool) is true, a elsewhere (torch.masked_fill): value as ct_full takes it
 * in a's dtype, the result of a's dtype and of a's and mask's shapes broadcast together. The
 * gradient is zero where filled. */
ct_tensor *ct_masked_fill(const ct_tensor *a, const ct_tensor *mask, double value);

/* ---- triangles, running sums, sorting, sampling ---- */
/* The lower (tril) or upper (triu) triangle of the last two dims of a (any batch), the rest 0:
 * diagonal 0 is the main one, positive above it, negative below (torch.tril / torch.triu). */
ct_tensor *ct_tril(const ct_tensor *a, int64_t diagonal);
ct_tensor *ct_triu(const ct_tensor *a, int64_t diagonal);
/* Running sums along dim (torch.cumsum): integer and bool inputs give int64 (wrapping), floating
 * ones keep their dtype (float16 and bfloat16 sum in float32). */
ct_tensor *ct_cumsum(const ct_tensor *a, int dim);
/* The values of a sorted along dim, ascending or descending, and in *indices (when not NULL; a
 * new reference) their int64 places in a. Stable: equal values keep their order. NaN counts as
 * the largest value (last ascending, first descending), as in PyTorch. The gradient flows back
 * to the places the values came from. */
ct_tensor *ct_sort(const ct_tensor *a, int dim, bool descending, ct_tensor **indices);
/* The k largest (or smallest) values along dim and their int64 indices (torch.topk); k in
 * [0, size of dim]. The results are always sorted (as sorted = true; PyTorch leaves the order
 * unspecified otherwise), ties in index order. */
ct_tensor *ct_topk(const ct_tensor *a, int64_t k, int dim, bool largest, bool sorted,
                   ct_tensor **indices);
/* int64 category indices drawn from rows of non-negative weights (probs [C] gives [num_samples],
 * [N, C] gives [N, num_samples]), with the device's generator (ct_manual_seed: the same seed, the
 * same draws). Without replacement the indices of a row are distinct and num_samples may not
 * exceed its nonzero weights. Negative, NaN or infinite weights, or a row of zeros, are
 * CT_ERR_INVALID_ARGUMENT (checked on the host: one read back). */
ct_tensor *ct_multinomial(const ct_tensor *probs, int64_t num_samples, bool replacement);

/* ---- in place (PyTorch's add_, mul_, fill_, zero_): self takes the result, in its dtype (a
 * floating result into an integer self is CT_ERR_DTYPE) and shape (other broadcasts to it).
 * While grad mode is on they are refused (CT_ERR_INVALID_ARGUMENT) on a tensor that requires
 * grad: on a leaf as in PyTorch, and on a tensor of a recorded graph too, since ctorch records no
 * in-place op (it has no version counter); and when other requires grad. Under
 * ct_no_grad_push they are plain writes (as an optimizer step's). ---- */
ct_status ct_add_(ct_tensor *self, const ct_tensor *other);
ct_status ct_mul_(ct_tensor *self, const ct_tensor *other);
ct_status ct_add_scalar_(ct_tensor *self, double s);
ct_status ct_mul_scalar_(ct_tensor *self, double s);
ct_status ct_fill_(ct_tensor *self, double value);
ct_status ct_zero_(ct_tensor *self);

#ifdef __cplusplus
}
#endif
#endif
