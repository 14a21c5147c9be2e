/* Conformance entries of nn_functional.h: conv2d, the pools, batch and layer normalisation and
 * embedding (their backward is in table_backward.c). Cases reach every kernel: im2col with stride, padding,
 * dilation and groups, the bias fill (and its absence), pooling windows that overlap, skip
 * elements or hang over the padding, batch statistics with and without running statistics
 * (updated in place through strided rows), and evaluation. Tolerances:
 *  - conv2d multiplies through another BLAS on a device (CLBlast): 16 ulps of the convolution
 *    of |input|, |weight| and |bias|, as matmul (PoCL: 1.7 of those ulps);
 *  - max_pool2d selects values and positions: exact;
 *  - avg_pool2d sums a window in one order everywhere, then divides: 4 ulps of the mean of
 *    |input| (PoCL: exact);
 *  - batch_norm sums each channel in one order everywhere, but a device may fuse its
 *    multiply-adds (OpenCL contracts them by default): 32 ulps (PoCL: 5);
 *  - layer_norm: see its cases; embedding copies rows: exact.
 * float16 and bfloat16 (CONF_HALF) against float64: the pools and batch_norm compute in float
 * and round once (the default 2 units of the 16-bit format; batch_norm's statistics are float32
 * sums); conv2d's half_ulps is for when ct_matmul takes 16-bit dtypes (CONV2D_DTYPES). */
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"

/* ---- conv2d: input, weight, bias (count 2: no bias) ---- */

static const conf_case conv2d_cases[] = {
    {.name = "3x3, bias", .in = {{SHAPE(2, 3, 7, 6)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(4)}}},
    {.name = "no bias", .count = 2, .in = {{SHAPE(2, 3, 7, 6)}, {SHAPE(4, 3, 3, 3)}}},
    {.name = "stride 2, padding 1", .in = {{SHAPE(2, 3, 7, 6)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(4)}},
     .args = {.stride = {2, 2}, .padding = {1, 1}}},
    {.name = "rectangular kernel, stride [1, 2], padding [2, 0]",
     .in = {{SHAPE(2, 3, 8, 9)}, {SHAPE(5, 3, 5, 2)}, {SHAPE(5)}},
     .args = {.stride = {1, 2}, .padding = {2, 0}}},
    {.name = "dilation 2, padding [2, 1]", .in = {{SHAPE(1, 2, 9, 8)}, {SHAPE(3, 2, 3, 3)}, {SHAPE(3)}},
     .args = {.padding = {2, 1}, .dilation = {2, 2}}},
    {.name = "groups 2", .in = {{SHAPE(2, 4, 6, 5)}, {SHAPE(6, 2, 3, 3)}, {SHAPE(6)}},
     .args = {.groups = 2}},
    {.name = "depthwise, padding 1", .in = {{SHAPE(2, 3, 6, 6)}, {SHAPE(3, 1, 3, 3)}, {SHAPE(3)}},
     .args = {.padding = {1, 1}, .groups = 3}},
    {.name = "1x1 kernel", .in = {{SHAPE(2, 5, 4, 4)}, {SHAPE(3, 5, 1, 1)}, {SHAPE(3)}}},
    {.name = "stride larger than the kernel", .in = {{SHAPE(1, 2, 9, 9)}, {SHAPE(2, 2, 2, 2)}, {SHAPE(2)}},
     .args = {.stride = {3, 3}}},
    {.name = "kernel as large as the padded input",
     .in = {{SHAPE(1, 2, 3, 3)}, {SHAPE(2, 2, 5, 5)}, {SHAPE(2)}}, .args = {.padding = {1, 1}}},
    {.name = "channels-last input, transposed kernels, strided bias",
     .in = {{SHAPE(2, 6, 7, 3), .views = {PERMUTED(0, 3, 1, 2)}},
            {SHAPE(4, 3, 3, 3), .views = {TRANSPOSED(2, 3)}},
            {SHAPE(8), .views = {SLICED(0, 1, 8, 2)}}}},
    {.name = "expanded weight", .count = 2,
     .in = {{SHAPE(2, 3, 5, 5)}, {SHAPE(1, 3, 3, 3), .views = {EXPANDED(4, 3, 3, 3)}}}},
    {.name = "empty batch", .in = {{SHAPE(0, 3, 5, 5)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(4)}}},
    {.name = "sprinkled edge values",
     .in = {{SHAPE(2, 3, 7, 6), .values = CONF_SPRINKLED}, {SHAPE(4, 3, 3, 3)}, {SHAPE(4)}}},
    {.name = "larger", .in = {{SHAPE(4, 8, 16, 16)}, {SHAPE(16, 8, 3, 3)}, {SHAPE(16)}},
     .args = {.padding = {1, 1}}},
    {0}};

static ct_tensor *run_conv2d(ct_tensor *const *in, const conf_args *a)
{
    return ct_conv2d(in[0], in[1], a->count > 2 ? in[2] : NULL, conf_window(a->stride),
                     conf_window(a->padding), conf_window(a->dilation), a->groups ? a->groups : 1);
}

/* ---- pools: input [N, C, H, W] ---- */

#define POOL_CASES                                                                               \
    {.name = "2x2", .in = {{SHAPE(2, 3, 8, 8)}}, .args = {.kernel = {2, 2}}},                    \
    {.name = "3x3, stride 2, padding 1", .in = {{SHAPE(2, 3, 9, 7)}},                            \
     .args = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},                           \
    {.name = "overlapping, stride 1", .in = {{SHAPE(1, 2, 6, 6)}},                               \
     .args = {.kernel = {3, 3}, .stride = {1, 1}}},                                              \
    {.name = "[2, 3], stride [1, 2], padding [1, 1]", .in = {{SHAPE(1, 2, 6, 9)}},               \
     .args = {.kernel = {2, 3}, .stride = {1, 2}, .padding = {1, 1}}},                           \
    {.name = "odd sizes, rows left over", .in = {{SHAPE(2, 2, 7, 5)}}, .args = {.kernel = {2, 2}}}, \
    {.name = "channels-last", .in = {{SHAPE(2, 8, 8, 3), .views = {PERMUTED(0, 3, 1, 2)}}},      \
     .args = {.kernel = {2, 2}}},                                                                \
    {.name = "sliced columns", .in = {{SHAPE(2, 3, 6, 13), .views = {SLICED(3, 1, 13, 2)}}},     \
     .args = {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}},                           \
    {.name = "empty batch", .in = {{SHAPE(0, 3, 4, 4)}}, .args = {.kernel = {2, 2}}},            \
    {.name = "sprinkled edge values", .in = {{SHAPE(2, 3, 8, 8), .values = CONF_SPRINKLED}},     \
     .args = {.kernel = {2, 2}}},                                                                \
    {.name = "sprinkled edge values, padding 1", .in = {{SHAPE(1, 2, 8, 8), .values = CONF_SPRINKLED}}, \
     .args = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},                           \
    {.name = "larger", .in = {{SHAPE(4, 16, 32, 32)}}, .args = {.kernel = {2, 2}}}

static const conf_case max_pool_cases[] = {POOL_CASES, {0}};

/* Averages also over windows that hang over the padding, counted or not. */
static const conf_case avg_pool_cases[] = {
    POOL_CASES,
    {.name = "3x3, stride 2, padding 1, padding counted", .in = {{SHAPE(2, 3, 9, 7)}},
     .args = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .flag = true}},
    {.name = "[2, 3], stride 1, padding [1, 1], padding counted", .in = {{SHAPE(1, 2, 6, 9)}},
     .args = {.kernel = {2, 3}, .stride = {1, 1}, .padding = {1, 1}, .flag = true}},
    {0}};

static ct_tensor *run_max_pool2d(ct_tensor *const *in, const conf_args *a)
{
    return ct_max_pool2d(in[0], a->kernel, conf_window(a->stride), conf_window(a->padding));
}

/* The indices (the values are ct_max_pool2d's). */
static ct_tensor *run_max_pool2d_with_indices(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *indices = NULL;
    ct_tensor *values = ct_max_pool2d_with_indices(in[0], a->kernel, conf_window(a->stride),
                                                   conf_window(a->padding), &indices);
    if (!values) return NULL;
    ct_release(values);
    return indices;
}

static ct_tensor *run_avg_pool2d(ct_tensor *const *in, const conf_args *a)
{
    return ct_avg_pool2d(in[0], a->kernel, conf_window(a->stride), conf_window(a->padding), a->flag);
}

/* ---- batch_norm: input, running statistics [2, C] (mean; variance), affine [2, C] (weight;
 * bias). count 1: neither; count 2: no affine part. s: momentum, eps; flag: training. ---- */

#define BN_TRAINING .s = {0.1, 1e-5}, .flag = true
#define BN_EVAL .s = {0.1, 1e-5}, .flag = false

/* Every case but the sprinkled edge values (see the 16-bit entry below). */
#define BN_CASES                                                                                 \
    {.name = "[N, C], training", .in = {{SHAPE(8, 5)}, {SHAPE(2, 5)}, {SHAPE(2, 5)}},            \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "[N, C, H, W], training", .in = {{SHAPE(4, 3, 5, 6)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}}, \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "[N, C, L], training, momentum 0.7, eps 0.5",                                       \
     .in = {{SHAPE(4, 3, 7)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}}, .args = {.s = {0.7, 0.5}, .flag = true}}, \
    {.name = "training, no affine part", .count = 2, .in = {{SHAPE(4, 3, 5)}, {SHAPE(2, 3)}},    \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "training, batch statistics only", .count = 1, .in = {{SHAPE(4, 3, 5)}},            \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "evaluation", .in = {{SHAPE(4, 3, 5, 6)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}}, .args = {BN_EVAL}}, \
    {.name = "evaluation, no affine part", .count = 2, .in = {{SHAPE(8, 5)}, {SHAPE(2, 5)}},     \
     .args = {BN_EVAL}},                                                                         \
    {.name = "channels-last input, strided statistics and affine part",                          \
     .in = {{SHAPE(4, 5, 6, 3), .views = {PERMUTED(0, 3, 1, 2)}},                                \
            {SHAPE(3, 2), .views = {TRANSPOSED(0, 1)}},                                          \
            {SHAPE(3, 2), .views = {TRANSPOSED(0, 1)}}},                                         \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "one sample of 5 positions", .in = {{SHAPE(1, 3, 5)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}}, \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "two values per channel", .in = {{SHAPE(2, 4)}, {SHAPE(2, 4)}, {SHAPE(2, 4)}},      \
     .args = {BN_TRAINING}},                                                                     \
    {.name = "empty batch", .in = {{SHAPE(0, 3, 4)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}}, .args = {BN_TRAINING}}
#define BN_LARGER                                                                                \
    {.name = "larger", .in = {{SHAPE(16, 4, 32, 32)}, {SHAPE(2, 4)}, {SHAPE(2, 4)}},             \
     .args = {BN_TRAINING}}

static const conf_case batch_norm_cases[] = {
    BN_CASES,
    {.name = "sprinkled edge values",
     .in = {{SHAPE(6, 4, 5), .values = CONF_SPRINKLED}, {SHAPE(2, 4)}, {SHAPE(2, 4)}},
     .args = {BN_TRAINING}},
    BN_LARGER,
    {0}};
/* bfloat16 holds 1e30, whose square overflows the float32 sums of the statistics (as PyTorch's);
 * where the sums reach infinity or NaN then depends on rounding, so the sprinkled edge values
 * are a float32 and float64 case only. */
static const conf_case batch_norm_16_bit_cases[] = {BN_CASES, BN_LARGER, {0}};

/* A new 2-D tensor with t's values, laid out as t is (row- or column-major): rows of it have
 * t's strides, and writing into them leaves t as it is. */
static ct_tensor *own_copy(const ct_tensor *t)
{
    if (ct_tensor_strides(t)[0] >= ct_tensor_strides(t)[1]) return ct_clone(t);
    return ct_transpose(ct_clone(ct_transpose(t, 0, 1)), 0, 1);
}

/* The output, followed (when given) by the running statistics after the call. */
static ct_tensor *run_batch_norm(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *running = a->count > 1 ? own_copy(in[1]) : NULL;
    ct_tensor *mean = running ? ct_select(running, 0, 0) : NULL;
    ct_tensor *var = running ? ct_select(running, 0, 1) : NULL;
    ct_tensor *weight = a->count > 2 ? ct_select(in[2], 0, 0) : NULL;
    ct_tensor *bias = a->count > 2 ? ct_select(in[2], 0, 1) : NULL;
    if ((a->count > 1 && !var) || (a->count > 2 && !bias)) return NULL;
    ct_tensor *out = ct_batch_norm(in[0], mean, var, weight, bias, a->flag, a->s[0], a->s[1]);
    if (!out || !running) return out;
    const ct_tensor *parts[2] = {ct_flatten(out, 0, -1), ct_flatten(running, 0, -1)};
    return parts[0] && parts[1] ? ct_cat(parts, 2, 0) : NULL;
}

/* conv2d's products go through ct_backend_gemm, which takes float16 and bfloat16 only with the
 * 16-bit matrix products (branch half-matmul): CONF_HALF joins then. Its 16-bit half_ulps: sums
 * of up to 72 products in float32, one rounding. */
/* ---- layer_norm: x, weight, bias (count 1: no affine part); normalized over x's last
 * args.ndim dims, eps args.s[1]. Rows of odd lengths, longer than a group and not a multiple
 * of it, of one element, and views. Each row sums in one order on a device, but another than
 * the CPU's, and divides and takes a square root (3 ulps in OpenCL C): 32 ulps. ---- */
#define LN_EPS(count) .ndim = count, .s = {0, 1e-5}
static const conf_case layer_norm_cases[] = {
    {.name = "[4, 7]", .in = {{SHAPE(4, 7)}, {SHAPE(7)}, {SHAPE(7)}}, .args = {LN_EPS(1)}},
    {.name = "no affine part", .count = 1, .in = {{SHAPE(3, 5, 9)}}, .args = {LN_EPS(1)}},
    {.name = "over 2 dims", .in = {{SHAPE(3, 2, 5)}, {SHAPE(2, 5)}, {SHAPE(2, 5)}}, .args = {LN_EPS(2)}},
    {.name = "rows of 1", .in = {{SHAPE(6, 1)}, {SHAPE(1)}, {SHAPE(1)}}, .args = {LN_EPS(1)}},
    {.name = "rows of 301 (past a group, not a multiple of it)",
     .in = {{SHAPE(5, 301)}, {SHAPE(301)}, {SHAPE(301)}}, .args = {LN_EPS(1)}},
    {.name = "transposed x, eps 0.1", .in = {{SHAPE(6, 4), .views = {TRANSPOSED(0, 1)}}, {SHAPE(6)}, {SHAPE(6)}},
     .args = {.ndim = 1, .s = {0, 0.1}}},
    {.name = "strided weight", .in = {{SHAPE(3, 4)}, {SHAPE(8), .views = {SLICED(0, 0, 8, 2)}}, {SHAPE(4)}},
     .args = {LN_EPS(1)}},
    {.name = "no rows", .in = {{SHAPE(0, 5)}, {SHAPE(5)}, {SHAPE(5)}}, .args = {LN_EPS(1)}},
    {.name = "[40, 769]", .in = {{SHAPE(40, 769)}, {SHAPE(769)}, {SHAPE(769)}}, .args = {LN_EPS(1)}},
    {0}};

static ct_tensor *run_layer_norm(ct_tensor *const *in, const conf_args *a)
{
    int ndim = ct_tensor_ndim(in[0]);
    const int64_t *shape = ct_tensor_shape(in[0]) + (ndim - a->ndim);
    return ct_layer_norm(in[0], shape, a->ndim, a->count > 1 ? in[1] : NULL,
                         a->count > 2 ? in[2] : NULL, a->s[1]);
}

/* ---- embedding: weight, indices; padding_idx args.n (-1: none). Rows copied: exact. ---- */
static const conf_case embedding_cases[] = {
    {.name = "int64 [2, 3] indices", .in = {{SHAPE(5, 4)}, {SHAPE(2, 3), .kind = CONF_IDX64, .lo = 0, .hi = 5}},
     .args = {.n = -1}},
    {.name = "int32 indices, padding row 1",
     .in = {{SHAPE(6, 3)}, {SHAPE(7), .kind = CONF_IDX32, .lo = 0, .hi = 6}}, .args = {.n = 1}},
    {.name = "0-d index", .in = {{SHAPE(4, 5)}, {.ndim = 0, .kind = CONF_IDX64, .lo = 0, .hi = 4}},
     .args = {.n = -1}},
    {.name = "transposed weight, strided indices",
     .in = {{SHAPE(7, 9), .views = {TRANSPOSED(0, 1)}},
            {SHAPE(4, 6), .kind = CONF_IDX64, .lo = 0, .hi = 9, .views = {SLICED(1, 0, 6, 2)}}},
     .args = {.n = -1}},
    {.name = "no indices", .in = {{SHAPE(3, 4)}, {SHAPE(0, 2), .kind = CONF_IDX64, .lo = 0, .hi = 3}},
     .args = {.n = -1}},
    {0}};

static ct_tensor *run_embedding(ct_tensor *const *in, const conf_args *a)
{
    return ct_embedding(in[0], in[1], a->n);
}

#define CONV2D_DTYPES (CONF_FLOAT | CONF_HALF)

/* ---- scaled_dot_product_attention: q, k, v, attn_mask (count 3: none); flag: is_causal.
 * Without a mask the fused path runs (kernels/attention.ct; the CPU's own for float32 and
 * float64), CTORCH_SDPA=fused even where auto would compose, with one the composed ops. Sizes
 * where the tiles change: T = 1, T not a multiple of a tile (16 rows on the CPU, a group on a
 * device), Tq != Tk, D = 16, 64 and 128. ---- */

#define ATTENTION_CASES                                                                          \
    {.name = "T 1, D 16", .count = 3, .in = {{SHAPE(2, 3, 1, 16)}, {SHAPE(2, 3, 1, 16)}, {SHAPE(2, 3, 1, 16)}}}, \
    {.name = "T 37, D 16, causal", .count = 3,                                                    \
     .in = {{SHAPE(1, 2, 37, 16)}, {SHAPE(1, 2, 37, 16)}, {SHAPE(1, 2, 37, 16)}}, .args = {.flag = true}}, \
    {.name = "Tq 20, Tk 13, D 64, Dv 24", .count = 3,                                             \
     .in = {{SHAPE(2, 2, 20, 64)}, {SHAPE(2, 2, 13, 64)}, {SHAPE(2, 2, 13, 24)}}},                \
    {.name = "Tq 70, Tk 33, D 64, causal", .count = 3,                                            \
     .in = {{SHAPE(1, 2, 70, 64)}, {SHAPE(1, 2, 33, 64)}, {SHAPE(1, 2, 33, 64)}}, .args = {.flag = true}}, \
    {.name = "T 19, D 128, causal, 3 dims", .count = 3,                                           \
     .in = {{SHAPE(2, 19, 128)}, {SHAPE(2, 19, 128)}, {SHAPE(2, 19, 128)}}, .args = {.flag = true}}, \
    {.name = "q, k, v as [B, T, H, D] transposed", .count = 3,                                    \
     .in = {{SHAPE(2, 9, 3, 16), .views = {TRANSPOSED(1, 2)}}, {SHAPE(2, 9, 3, 16), .views = {TRANSPOSED(1, 2)}}, \
            {SHAPE(2, 9, 3, 16), .views = {TRANSPOSED(1, 2)}}}, .args = {.flag = true}}

static const conf_case attention_cases[] = {
    ATTENTION_CASES,
    {.name = "bool mask [Tq, Tk]",
     .in = {{SHAPE(2, 3, 9, 16)}, {SHAPE(2, 3, 11, 16)}, {SHAPE(2, 3, 11, 16)}, {SHAPE(9, 11), .kind = CONF_BOOL}}},
    {.name = "float mask [H, 1, Tk], broadcast",
     .in = {{SHAPE(2, 3, 9, 16)}, {SHAPE(2, 3, 11, 16)}, {SHAPE(2, 3, 11, 16)}, {SHAPE(3, 1, 11)}}},
    {0}};

ct_tensor *conf_attention_fused(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                bool is_causal)
{
    const char *set = getenv("CTORCH_SDPA");
    char before[32] = "";
    bool had = set != NULL;
    if (had) snprintf(before, sizeof before, "%s", set);
    setenv("CTORCH_SDPA", "fused", 1);
    ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, NULL, 0.0, is_causal, 0.0);
    if (had) setenv("CTORCH_SDPA", before, 1);
    else unsetenv("CTORCH_SDPA");
    return out;
}

static ct_tensor *run_attention(ct_tensor *const *in, const conf_args *a)
{
    if (a->count <= 3) return conf_attention_fused(in[0], in[1], in[2], a->flag);
    return ct_scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0.0, a->flag, 0.0);
}

/* The losses with a reduction (args.n: a ct_reduction) */
static const conf_case pointwise_loss_cases[] = {
    {.name = "mean", .in = {{SHAPE(4, 3)}, {SHAPE(4, 3)}, {SHAPE(3)}}, .args = {.n = CT_REDUCTION_MEAN}},
    {.name = "sum, transposed input", .in = {{SHAPE(3, 4), .views = {TRANSPOSED(0, 1)}}, {SHAPE(4, 3)}, {SHAPE(3)}},
     .args = {.n = CT_REDUCTION_SUM}},
    {.name = "none", .in = {{SHAPE(2, 5, 3)}, {SHAPE(2, 5, 3)}, {SHAPE(5, 1)}}, .args = {.n = CT_REDUCTION_NONE}},
    {.name = "large, mean", .in = {{SHAPE(64, 50)}, {SHAPE(64, 50)}, {SHAPE(50)}}, .args = {.n = CT_REDUCTION_MEAN}},
    {0}};
#define CONF_PROBABILITY {0.02, 0.98, 0, 1, 0, 1}

static ct_tensor *run_bce(ct_tensor *const *in, const conf_args *a)
{
    return ct_binary_cross_entropy(in[0], in[1], in[2], (ct_reduction)a->n);
}

static ct_tensor *run_bce_with_logits(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *pos_weight = ct_abs(in[2]);
    ct_tensor *out = ct_binary_cross_entropy_with_logits(in[0], in[1], in[2], pos_weight, (ct_reduction)a->n);
    ct_release(pos_weight);
    return out;
}

static ct_tensor *run_l1(ct_tensor *const *in, const conf_args *a) { return ct_l1_loss(in[0], in[1], (ct_reduction)a->n); }
static ct_tensor *run_smooth_l1(ct_tensor *const *in, const conf_args *a)
{
    return ct_smooth_l1_loss(in[0], in[1], (ct_reduction)a->n, 1.5);
}
static ct_tensor *run_huber(ct_tensor *const *in, const conf_args *a)
{
    return ct_huber_loss(in[0], in[1], (ct_reduction)a->n, 0.75);
}
static ct_tensor *run_kl_div(ct_tensor *const *in, const conf_args *a)
{
    return ct_kl_div(in[0], in[1], (ct_reduction)a->n, false);
}

/* cross-entropy / nll: scores [N, C, d...], int64 targets, class weights; class 0 is the
 * ignore_index, so that some targets are ignored */
static const conf_case class_loss_cases[] = {
    {.name = "[N, C], mean", .in = {{SHAPE(6, 4)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 4}, {SHAPE(4)}},
     .args = {.n = CT_REDUCTION_MEAN}},
    {.name = "[N, C, d1, d2], sum",
     .in = {{SHAPE(2, 3, 2, 2)}, {SHAPE(2, 2, 2), .kind = CONF_IDX64, .lo = 0, .hi = 3}, {SHAPE(3)}},
     .args = {.n = CT_REDUCTION_SUM}},
    {.name = "[N, C, d], none, transposed",
     .in = {{SHAPE(2, 5, 3), .views = {TRANSPOSED(1, 2)}}, {SHAPE(2, 5), .kind = CONF_IDX64, .lo = 0, .hi = 3}, {SHAPE(3)}},
     .args = {.n = CT_REDUCTION_NONE}},
    {.name = "large", .in = {{SHAPE(64, 40)}, {SHAPE(64), .kind = CONF_IDX64, .lo = 0, .hi = 40}, {SHAPE(40)}},
     .args = {.n = CT_REDUCTION_MEAN}},
    {0}};

static ct_tensor *run_cross_entropy_ex(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *weight = ct_abs(in[2]);
    ct_cross_entropy_options o = {(ct_reduction)a->n, 0, weight, 0.1};
    ct_tensor *out = ct_cross_entropy_ex(in[0], in[1], &o);
    ct_release(weight);
    return out;
}

static ct_tensor *run_nll_loss_ex(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *weight = ct_abs(in[2]);
    ct_cross_entropy_options o = {(ct_reduction)a->n, 0, weight, 0.0};
    ct_tensor *out = ct_nll_loss_ex(in[0], in[1], &o);
    ct_release(weight);
    return out;
}

const conf_op conf_nn_ops[] = {
    {"ct_conv2d", 3, CONV2D_DTYPES, {CONF_SMALL, CONF_SMALL, CONF_SMALL}, conv2d_cases, 16, run_conv2d, true,
     NULL, 2},
    {"ct_max_pool2d", 1, CONF_FLOAT | CONF_HALF, {CONF_ANY}, max_pool_cases, 0, run_max_pool2d, false, NULL, 0},
    {"ct_max_pool2d_with_indices", 1, CONF_FLOAT | CONF_HALF, {CONF_ANY}, max_pool_cases, 0,
     run_max_pool2d_with_indices, false, NULL, 0},
    {"ct_avg_pool2d", 1, CONF_FLOAT | CONF_HALF, {CONF_ANY}, avg_pool_cases, 4, run_avg_pool2d, true, NULL, 0},
    {"ct_batch_norm", 3, CONF_FLOAT, {CONF_ANY, CONF_POSITIVE, CONF_ANY}, batch_norm_cases, 32,
     run_batch_norm, false, NULL, 0},
    {"ct_batch_norm, 16-bit", 3, CONF_HALF, {CONF_ANY, CONF_POSITIVE, CONF_ANY}, batch_norm_16_bit_cases, 32,
     run_batch_norm, false, NULL, 0},
    {"ct_layer_norm", 3, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, layer_norm_cases, 32,
     run_layer_norm, false, NULL, 0},
    {"ct_embedding", 2, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY}, embedding_cases, 0, run_embedding,
     false, NULL, 0},
    /* exp on each device, sums of Tk terms in one order everywhere: 64 ulps; 16-bit: the fused
     * kernels compute in float32 and round once, the masked cases round each op's result */
    {"ct_scaled_dot_product_attention", 4, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY, CONF_ANY},
     attention_cases, 64, run_attention, false, NULL, 16},
    /* composed of elementwise ops and sums (the same order everywhere): exp, log and the sums'
     * rounding */
    {"ct_binary_cross_entropy", 3, CONF_FLOAT, {CONF_PROBABILITY, CONF_PROBABILITY, CONF_POSITIVE},
     pointwise_loss_cases, 16, run_bce, false, NULL, 0},
    {"ct_binary_cross_entropy_with_logits", 3, CONF_FLOAT, {CONF_ANY, CONF_PROBABILITY, CONF_ANY},
     pointwise_loss_cases, 16, run_bce_with_logits, false, NULL, 0},
    {"ct_l1_loss", 2, CONF_FLOAT, {CONF_ANY, CONF_ANY}, pointwise_loss_cases, 8, run_l1, false, NULL, 0},
    {"ct_smooth_l1_loss", 2, CONF_FLOAT, {CONF_ANY, CONF_ANY}, pointwise_loss_cases, 8, run_smooth_l1, false, NULL, 0},
    {"ct_huber_loss", 2, CONF_FLOAT, {CONF_ANY, CONF_ANY}, pointwise_loss_cases, 8, run_huber, false, NULL, 0},
    {"ct_kl_div", 2, CONF_FLOAT, {CONF_ANY, CONF_PROBABILITY}, pointwise_loss_cases, 16, run_kl_div, false, NULL, 0},
    {"ct_cross_entropy_ex", 3, CONF_FLOAT, {CONF_ANY, CONF_ANY, CONF_POSITIVE}, class_loss_cases, 32,
     run_cross_entropy_ex, false, NULL, 0},
    {"ct_nll_loss_ex", 3, CONF_FLOAT, {CONF_ANY, CONF_ANY, CONF_POSITIVE}, class_loss_cases, 16,
     run_nll_loss_ex, false, NULL, 0},
};
const int conf_nn_op_count = (int)(sizeof conf_nn_ops / sizeof conf_nn_ops[0]);
