/* Conformance entries of the backward passes that have kernels of their own: gelu's, gathering's
 * (scatter_add, with int64 and int32 indices), conv2d's (col2im and the weight products), the
 * pools' and batch_norm's. Each runs the op on leaves that require grad (ct_detach of the
 * inputs, so views stay views), backpropagates a given upstream gradient (the input after the
 * op's, in the output's shape, some of them views) with ct_backward_with, and returns every
 * leaf's .grad, flattened and joined. Tolerances:
 *  - gelu: 16 ulps, as its forward (erf and exp; PoCL: 1.7); gelu_tanh (tanh) alike;
 *  - layer_norm: row sums (another order on a device) of products that cancel: 32 ulps of the
 *    same terms in absolute value; the weight's and bias's sums run in one order everywhere;
 *  - embedding: each row adds its upstream rows in the order of the indices: exact;
 *  - relu: a select of the upstream gradient: exact;
 *  - gelu and relu in float16 and bfloat16 too: computed in float32 and rounded once, so within
 *    the default 2 units of the 16-bit format of the float64 reference;
 *  - cross_entropy (forward and backward, fused): a log-sum-exp per row and a mean over the
 *    batch, as softmax's: 16 ulps;
 *  - Sequential(Linear, ReLU) (one op): products through another BLAS on a device, as matmul:
 *    16 ulps of the op of |inputs|; the bias's gradient sums each column in one order everywhere;
 *  - gather and index_select: the kernel adds the gradients of repeated indices in one order
 *    everywhere: exact;
 *  - conv2d: products through another BLAS on a device (and summed over the batch by a
 *    reduction there): 16 ulps of the backward of |inputs|, as the forward (PoCL: 0.8);
 *  - max_pool2d: each input element sums the gradients of the windows it wins, in one order:
 *    exact; avg_pool2d: 4 ulps of the backward of |inputs| (PoCL: exact);
 *  - batch_norm: per-channel sums of products that cancel, whose multiply-adds a device may
 *    fuse: 16 ulps of the same sums over the terms' absolute values (PoCL: 1.3 of those; 72
 *    ulps of a float32 weight gradient that cancels over 16384 values, 200 of a float64 one).
 * float16 and bfloat16 against float64 (ENTRY_HALF's half_ulps, units of the 16-bit format):
 *  - cross_entropy: softmax and the loss in float32, each result rounded once: the default 2;
 *  - Sequential(Linear, ReLU): none (half_ulps -1): a pre-activation within a rounding of 0
 *    flips the ReLU's mask against float64, which no tolerance of the values covers; the devices
 *    are still held to the CPU;
 *  - max_pool2d, avg_pool2d: the backward adds each window's share into the 16-bit gradient in
 *    place, rounding every addition (as PyTorch's CPU kernels): up to 9 windows cover an element
 *    in these cases: 8;
 *  - batch_norm: float32 sums, each gradient rounded once, of the magnitude: the default 2;
 *  - conv2d: waits for 16-bit matrix products (see table_nn.c). */
#include "conformance.h"

/* A leaf that requires grad, on t's data and strides. */
static ct_tensor *leaf(const ct_tensor *t)
{
    ct_tensor *l = ct_detach(t);
    return l && ct_requires_grad_(l, true) == CT_OK ? l : NULL;
}

/* Backpropagates upstream from out; the leaves' gradients, flattened and joined. */
static ct_tensor *gradients(ct_tensor *out, const ct_tensor *upstream, ct_tensor *const *leaves,
                            int count)
{
    if (!out || ct_backward_with(out, upstream, false) != CT_OK) return NULL;
    ct_tensor *flat[4];
    for (int i = 0; i < count; i++) {
        ct_tensor *grad = ct_grad(leaves[i]);
        if (!grad) return NULL; /* a leaf the backward did not reach */
        flat[i] = ct_flatten(grad, 0, -1);
        if (!flat[i]) return NULL;
    }
    return count == 1 ? flat[0] : ct_cat((const ct_tensor *const *)flat, count, 0);
}

/* ---- gelu: x, upstream ---- */

static const conf_case gelu_cases[] = {
    {.name = "[4, 5]", .in = {{SHAPE(4, 5)}, {SHAPE(4, 5)}}},
    {.name = "transposed x", .in = {{SHAPE(5, 4), .views = {TRANSPOSED(0, 1)}}, {SHAPE(4, 5)}}},
    {.name = "expanded upstream", .in = {{SHAPE(4, 5)}, {SHAPE(1, 5), .views = {EXPANDED(4, 5)}}}},
    {.name = "0-d", .in = {{.ndim = 0}, {.ndim = 0}}},
    {.name = "empty", .in = {{SHAPE(0, 3)}, {SHAPE(0, 3)}}},
    {.name = "sprinkled edge values", .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}, {SHAPE(8, 8)}}},
    {.name = "large", .in = {{SHAPE(64, 320)}, {SHAPE(64, 320)}}},
    {0}};

static ct_tensor *run_gelu_backward(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_gelu(x), in[1], &x, 1);
}

/* ---- relu: x, upstream (gelu's cases) ---- */

static ct_tensor *run_relu_backward(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_relu(x), in[1], &x, 1);
}

/* ---- cross_entropy: logits [N, C], int64 target [N], a 0-d upstream; s[0] the smoothing ---- */

static const conf_case cross_entropy_cases[] = {
    {.name = "[6, 5]", .in = {{SHAPE(6, 5)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 5}, {.ndim = 0}}},
    {.name = "label smoothing 0.1",
     .in = {{SHAPE(6, 5)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 5}, {.ndim = 0}},
     .args = {.s = {0.1}}},
    {.name = "transposed logits",
     .in = {{SHAPE(5, 6), .views = {TRANSPOSED(0, 1)}}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 5},
            {.ndim = 0}}},
    {.name = "one class", .in = {{SHAPE(4, 1)}, {SHAPE(4), .kind = CONF_IDX64, .lo = 0, .hi = 1}, {.ndim = 0}}},
    {.name = "large, smoothing 0.3",
     .in = {{SHAPE(256, 100)}, {SHAPE(256), .kind = CONF_IDX64, .lo = 0, .hi = 100}, {.ndim = 0}},
     .args = {.s = {0.3}}},
    {0}};

/* The loss, then the logits' gradient: both kernels of the fused op. */
static ct_tensor *run_cross_entropy_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *x = leaf(in[0]);
    ct_tensor *loss = ct_cross_entropy(x, in[1], a->s[0]);
    ct_tensor *value = loss ? ct_flatten(ct_detach(loss), 0, -1) : NULL;
    ct_tensor *grad = value ? gradients(loss, in[2], &x, 1) : NULL;
    return grad ? ct_cat((const ct_tensor *const[]){value, grad}, 2, 0) : NULL;
}

/* ---- nn.Sequential(Linear, ReLU), run as one op (ops/linear_relu.c): x [..., in], the
 * weight [out, in] and bias [out] copied into the Linear, an upstream in y's shape ---- */

static const conf_case linear_relu_cases[] = {
    {.name = "[6, 5] -> 7", .in = {{SHAPE(6, 5)}, {SHAPE(7, 5)}, {SHAPE(7)}, {SHAPE(6, 7)}}},
    {.name = "3-d input, expanded upstream",
     .in = {{SHAPE(2, 3, 5)}, {SHAPE(7, 5)}, {SHAPE(7)}, {SHAPE(1, 1, 7), .views = {EXPANDED(2, 3, 7)}}}},
    {.name = "transposed input, transposed upstream",
     .in = {{SHAPE(5, 6), .views = {TRANSPOSED(0, 1)}}, {SHAPE(7, 5)}, {SHAPE(7)},
            {SHAPE(7, 6), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "one row", .in = {{SHAPE(1, 5)}, {SHAPE(3, 5)}, {SHAPE(3)}, {SHAPE(1, 3)}}},
    {.name = "empty batch", .in = {{SHAPE(0, 5)}, {SHAPE(7, 5)}, {SHAPE(7)}, {SHAPE(0, 7)}}},
    {.name = "larger", .in = {{SHAPE(48, 64)}, {SHAPE(96, 64)}, {SHAPE(96)}, {SHAPE(48, 96)}}},
    {.name = "many rows, a part tile of columns",
     .in = {{SHAPE(300, 8)}, {SHAPE(40, 8)}, {SHAPE(40)}, {SHAPE(300, 40)}}},
    {0}};

/* y, then the gradients of x, the weight and the bias: both kernels of the fused op and its
 * products. */
static ct_tensor *run_linear_relu_backward(ct_tensor *const *in, const conf_args *a)
{
    int64_t outputs = ct_tensor_size(in[1], 0), features = ct_tensor_size(in[1], 1);
    ct_module *layers = ct_sequential((ct_module *[]){ct_linear(features, outputs, true), ct_relu_module()}, 2);
    if (!layers || ct_module_to(layers, a->device) != CT_OK || ct_module_to_dtype(layers, a->dtype) != CT_OK) {
        ct_module_release(layers);
        return NULL;
    }
    ct_tensor *params[3] = {leaf(in[0]), ct_module_parameter(layers, "0.weight"),
                            ct_module_parameter(layers, "0.bias")};
    ct_no_grad_push();
    bool copied = params[1] && params[2] && ct_copy_(params[1], in[1]) == CT_OK &&
                  ct_copy_(params[2], in[2]) == CT_OK;
    ct_no_grad_pop();
    ct_tensor *y = copied ? ct_module_forward(layers, params[0]) : NULL;
    ct_tensor *value = y ? ct_flatten(ct_detach(y), 0, -1) : NULL;
    ct_tensor *grads = value ? gradients(y, in[3], params, 3) : NULL;
    ct_tensor *out = grads ? ct_cat((const ct_tensor *const[]){value, grads}, 2, 0) : NULL;
    ct_release(params[1]);
    ct_release(params[2]);
    ct_module_release(layers);
    return out;
}

/* ---- gather: a, index, upstream (the index's shape) ---- */

static const conf_case gather_cases[] = {
    {.name = "dim 1, int64 index",
     .in = {{SHAPE(4, 6)}, {SHAPE(4, 3), .kind = CONF_IDX64, .lo = 0, .hi = 6}, {SHAPE(4, 3)}},
     .args = {.dim = 1}},
    {.name = "dim 0, int32 index",
     .in = {{SHAPE(4, 6)}, {SHAPE(2, 6), .kind = CONF_IDX32, .lo = 0, .hi = 4}, {SHAPE(2, 6)}},
     .args = {.dim = 0}},
    {.name = "repeated indices",
     .in = {{SHAPE(3, 4)}, {SHAPE(3, 12), .kind = CONF_IDX64, .lo = 0, .hi = 4}, {SHAPE(3, 12)}},
     .args = {.dim = 1}},
    {.name = "transposed a",
     .in = {{SHAPE(6, 4), .views = {TRANSPOSED(0, 1)}},
            {SHAPE(3, 5), .kind = CONF_IDX64, .lo = 0, .hi = 6}, {SHAPE(3, 5)}},
     .args = {.dim = 1}},
    {.name = "expanded index, transposed upstream, dim -1",
     .in = {{SHAPE(4, 6)}, {SHAPE(1, 3), .kind = CONF_IDX32, .lo = 0, .hi = 6, .views = {EXPANDED(4, 3)}},
            {SHAPE(3, 4), .views = {TRANSPOSED(0, 1)}}},
     .args = {.dim = -1}},
    {.name = "3-D, dim 1, int32 index",
     .in = {{SHAPE(3, 4, 5)}, {SHAPE(3, 2, 5), .kind = CONF_IDX32, .lo = 0, .hi = 4}, {SHAPE(3, 2, 5)}},
     .args = {.dim = 1}},
    {.name = "0-d",
     .in = {{.ndim = 0}, {.ndim = 0, .kind = CONF_IDX64, .lo = 0, .hi = 1}, {.ndim = 0}},
     .args = {.dim = 0}},
    {.name = "empty index", .in = {{SHAPE(4, 6)}, {SHAPE(0, 3), .kind = CONF_IDX64}, {SHAPE(0, 3)}},
     .args = {.dim = 1}},
    {.name = "large",
     .in = {{SHAPE(128, 200)}, {SHAPE(128, 160), .kind = CONF_IDX64, .lo = 0, .hi = 200},
            {SHAPE(128, 160)}},
     .args = {.dim = 1}},
    {0}};

static ct_tensor *run_gather_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_gather(x, a->dim, in[1]), in[2], &x, 1);
}

/* ---- index_select: a, index (1-D), upstream ---- */

static const conf_case index_select_cases[] = {
    {.name = "dim 0, int64 index",
     .in = {{SHAPE(5, 4)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 5}, {SHAPE(6, 4)}},
     .args = {.dim = 0}},
    {.name = "dim 1, int32 index",
     .in = {{SHAPE(5, 4)}, {SHAPE(3), .kind = CONF_IDX32, .lo = 0, .hi = 4}, {SHAPE(5, 3)}},
     .args = {.dim = 1}},
    {.name = "repeated indices",
     .in = {{SHAPE(3, 4)}, {SHAPE(20), .kind = CONF_IDX64, .lo = 0, .hi = 3}, {SHAPE(20, 4)}},
     .args = {.dim = 0}},
    {.name = "strided index, transposed upstream",
     .in = {{SHAPE(5, 4)}, {SHAPE(12), .kind = CONF_IDX32, .lo = 0, .hi = 5, .views = {SLICED(0, 0, 12, 2)}},
            {SHAPE(4, 6), .views = {TRANSPOSED(0, 1)}}},
     .args = {.dim = 0}},
    {.name = "transposed a, dim -1",
     .in = {{SHAPE(4, 5), .views = {TRANSPOSED(0, 1)}}, {SHAPE(7), .kind = CONF_IDX64, .lo = 0, .hi = 4},
            {SHAPE(5, 7)}},
     .args = {.dim = -1}},
    {.name = "3-D, dim 1",
     .in = {{SHAPE(3, 5, 4)}, {SHAPE(4), .kind = CONF_IDX32, .lo = 0, .hi = 5}, {SHAPE(3, 4, 4)}},
     .args = {.dim = 1}},
    {.name = "empty index", .in = {{SHAPE(5, 4)}, {SHAPE(0), .kind = CONF_IDX64}, {SHAPE(0, 4)}},
     .args = {.dim = 0}},
    {.name = "large",
     .in = {{SHAPE(200, 100)}, {SHAPE(300), .kind = CONF_IDX64, .lo = 0, .hi = 200}, {SHAPE(300, 100)}},
     .args = {.dim = 0}},
    {0}};

static ct_tensor *run_index_select_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_index_select(x, a->dim, in[1]), in[2], &x, 1);
}

/* ---- conv2d: input, weight, upstream (the output's shape), bias (count 3: none) ---- */

static const conf_case conv2d_cases[] = {
    {.name = "3x3, bias",
     .in = {{SHAPE(2, 3, 7, 6)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(2, 4, 5, 4)}, {SHAPE(4)}}},
    {.name = "no bias", .count = 3, .in = {{SHAPE(2, 3, 7, 6)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(2, 4, 5, 4)}}},
    {.name = "stride 2, padding 1",
     .in = {{SHAPE(2, 3, 7, 6)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(2, 4, 4, 3)}, {SHAPE(4)}},
     .args = {.stride = {2, 2}, .padding = {1, 1}}},
    {.name = "dilation 2, padding [2, 1]",
     .in = {{SHAPE(1, 2, 9, 8)}, {SHAPE(3, 2, 3, 3)}, {SHAPE(1, 3, 9, 6)}, {SHAPE(3)}},
     .args = {.padding = {2, 1}, .dilation = {2, 2}}},
    {.name = "groups 2", .in = {{SHAPE(2, 4, 6, 5)}, {SHAPE(6, 2, 3, 3)}, {SHAPE(2, 6, 4, 3)}, {SHAPE(6)}},
     .args = {.groups = 2}},
    {.name = "depthwise, padding 1",
     .in = {{SHAPE(2, 3, 6, 6)}, {SHAPE(3, 1, 3, 3)}, {SHAPE(2, 3, 6, 6)}, {SHAPE(3)}},
     .args = {.padding = {1, 1}, .groups = 3}},
    {.name = "stride larger than the kernel (rows no window reads)",
     .in = {{SHAPE(1, 2, 9, 9)}, {SHAPE(2, 2, 2, 2)}, {SHAPE(1, 2, 3, 3)}, {SHAPE(2)}},
     .args = {.stride = {3, 3}}},
    {.name = "channels-last input, transposed upstream",
     .in = {{SHAPE(2, 6, 7, 3), .views = {PERMUTED(0, 3, 1, 2)}}, {SHAPE(4, 3, 3, 3)},
            {SHAPE(2, 4, 5, 4), .views = {TRANSPOSED(2, 3)}}, {SHAPE(4)}}},
    {.name = "empty batch", .in = {{SHAPE(0, 3, 5, 5)}, {SHAPE(4, 3, 3, 3)}, {SHAPE(0, 4, 3, 3)}, {SHAPE(4)}}},
    {.name = "larger",
     .in = {{SHAPE(4, 8, 16, 16)}, {SHAPE(16, 8, 3, 3)}, {SHAPE(4, 16, 16, 16)}, {SHAPE(16)}},
     .args = {.padding = {1, 1}}},
    {0}};

static ct_tensor *run_conv2d_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *leaves[3] = {leaf(in[0]), leaf(in[1]), a->count > 3 ? leaf(in[3]) : NULL};
    ct_tensor *out = ct_conv2d(leaves[0], leaves[1], leaves[2], conf_window(a->stride),
                               conf_window(a->padding), conf_window(a->dilation),
                               a->groups ? a->groups : 1);
    return gradients(out, in[2], leaves, a->count > 3 ? 3 : 2);
}

/* ---- pools: input, upstream (the output's shape) ---- */

#define POOL_CASES                                                                               \
    {.name = "2x2", .in = {{SHAPE(2, 3, 8, 8)}, {SHAPE(2, 3, 4, 4)}}, .args = {.kernel = {2, 2}}}, \
    {.name = "3x3, stride 2, padding 1", .in = {{SHAPE(2, 3, 9, 7)}, {SHAPE(2, 3, 5, 4)}},       \
     .args = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},                           \
    {.name = "overlapping, stride 1", .in = {{SHAPE(1, 2, 6, 6)}, {SHAPE(1, 2, 4, 4)}},          \
     .args = {.kernel = {3, 3}, .stride = {1, 1}}},                                              \
    {.name = "[2, 3], stride [1, 2], padding [1, 1]", .in = {{SHAPE(1, 2, 6, 9)}, {SHAPE(1, 2, 7, 5)}}, \
     .args = {.kernel = {2, 3}, .stride = {1, 2}, .padding = {1, 1}}},                           \
    {.name = "odd sizes, rows left over", .in = {{SHAPE(2, 2, 7, 5)}, {SHAPE(2, 2, 3, 2)}},      \
     .args = {.kernel = {2, 2}}},                                                                \
    {.name = "channels-last input, transposed upstream",                                         \
     .in = {{SHAPE(2, 8, 8, 3), .views = {PERMUTED(0, 3, 1, 2)}},                                \
            {SHAPE(2, 3, 4, 4), .views = {TRANSPOSED(2, 3)}}},                                   \
     .args = {.kernel = {2, 2}}},                                                                \
    {.name = "empty batch", .in = {{SHAPE(0, 3, 4, 4)}, {SHAPE(0, 3, 2, 2)}}, .args = {.kernel = {2, 2}}}, \
    {.name = "sprinkled edge values, overlapping",                                               \
     .in = {{SHAPE(1, 2, 8, 8), .values = CONF_SPRINKLED}, {SHAPE(1, 2, 4, 4)}},                 \
     .args = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},                           \
    {.name = "larger", .in = {{SHAPE(4, 16, 32, 32)}, {SHAPE(4, 16, 16, 16)}}, .args = {.kernel = {2, 2}}}

static const conf_case max_pool_cases[] = {POOL_CASES, {0}};
static const conf_case avg_pool_cases[] = {
    POOL_CASES,
    {.name = "3x3, stride 2, padding 1, padding counted", .in = {{SHAPE(2, 3, 9, 7)}, {SHAPE(2, 3, 5, 4)}},
     .args = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .flag = true}},
    {0}};

static ct_tensor *run_max_pool2d_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_max_pool2d(x, a->kernel, conf_window(a->stride), conf_window(a->padding)),
                     in[1], &x, 1);
}

static ct_tensor *run_avg_pool2d_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_avg_pool2d(x, a->kernel, conf_window(a->stride), conf_window(a->padding), a->flag),
                     in[1], &x, 1);
}

/* ---- batch_norm: input, upstream, running statistics [2, C], affine [2, C] (weight; bias):
 * count 2: neither, 3: no affine part. s: momentum, eps; flag: training ---- */

#define BN_TRAINING .s = {0.1, 1e-5}, .flag = true
#define BN_EVAL .s = {0.1, 1e-5}, .flag = false

static const conf_case batch_norm_cases[] = {
    {.name = "[N, C], training", .in = {{SHAPE(8, 5)}, {SHAPE(8, 5)}, {SHAPE(2, 5)}, {SHAPE(2, 5)}},
     .args = {BN_TRAINING}},
    {.name = "[N, C, H, W], training",
     .in = {{SHAPE(4, 3, 5, 6)}, {SHAPE(4, 3, 5, 6)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}}, .args = {BN_TRAINING}},
    {.name = "training, batch statistics only", .count = 2, .in = {{SHAPE(4, 3, 5)}, {SHAPE(4, 3, 5)}},
     .args = {BN_TRAINING}},
    {.name = "training, no affine part", .count = 3,
     .in = {{SHAPE(4, 3, 5)}, {SHAPE(4, 3, 5)}, {SHAPE(2, 3)}}, .args = {BN_TRAINING}},
    {.name = "evaluation", .in = {{SHAPE(4, 3, 5, 6)}, {SHAPE(4, 3, 5, 6)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}},
     .args = {BN_EVAL}},
    {.name = "evaluation, no affine part", .count = 3, .in = {{SHAPE(8, 5)}, {SHAPE(8, 5)}, {SHAPE(2, 5)}},
     .args = {BN_EVAL}},
    {.name = "channels-last input, transposed upstream, strided affine part",
     .in = {{SHAPE(4, 5, 6, 3), .views = {PERMUTED(0, 3, 1, 2)}},
            {SHAPE(4, 3, 6, 5), .views = {TRANSPOSED(2, 3)}}, {SHAPE(2, 3)},
            {SHAPE(3, 2), .views = {TRANSPOSED(0, 1)}}},
     .args = {BN_TRAINING}},
    {.name = "two values per channel", .in = {{SHAPE(2, 4)}, {SHAPE(2, 4)}, {SHAPE(2, 4)}, {SHAPE(2, 4)}},
     .args = {BN_TRAINING}},
    {.name = "larger", .in = {{SHAPE(16, 4, 32, 32)}, {SHAPE(16, 4, 32, 32)}, {SHAPE(2, 4)}, {SHAPE(2, 4)}},
     .args = {BN_TRAINING}},
    {0}};

/* The gradients of the input and (when given) of the affine part [2, C]: weight and bias are
 * leaves of their own (rows of input 3), so that their gradients arrive as the op gives them. */
static ct_tensor *run_batch_norm_backward(ct_tensor *const *in, const conf_args *a)
{
    bool affine = a->count > 3;
    ct_tensor *leaves[3] = {leaf(in[0]), affine ? leaf(ct_select(in[3], 0, 0)) : NULL,
                            affine ? leaf(ct_select(in[3], 0, 1)) : NULL};
    /* The running statistics change in place: a copy, so that the input stays as it is. */
    ct_tensor *running = a->count > 2 ? ct_clone(in[2]) : NULL;
    ct_tensor *mean = running ? ct_select(running, 0, 0) : NULL;
    ct_tensor *var = running ? ct_select(running, 0, 1) : NULL;
    if (!leaves[0] || (a->count > 2 && !var) || (affine && !leaves[2])) return NULL;
    ct_tensor *out = ct_batch_norm(leaves[0], mean, var, leaves[1], leaves[2], a->flag, a->s[0], a->s[1]);
    return gradients(out, in[1], leaves, affine ? 3 : 1);
}

/* The magnitude of its gradients' elements: each sum over the absolute values of its terms,
 *   weight: sum |g| |x^|, bias: sum |g|,
 *   input: |a| (|g| + (|x^| sum |g| |x^| + sum |g|) / M) in training, |a| |g| otherwise,
 * with a = weight * invstd per channel, M the values per channel. */
static ct_tensor *batch_norm_backward_magnitude(ct_tensor *const *in, const conf_args *a)
{
    ct_dtype dtype = ct_tensor_dtype(in[0]);
    if (dtype == CT_F16 || dtype == CT_BF16) { /* in float64, given in the result's dtype */
        ct_tensor *wide[4] = {0};
        for (int i = 0; i < a->count; i++)
            if (!(wide[i] = ct_to_dtype(in[i], CT_F64))) return NULL;
        ct_tensor *m = batch_norm_backward_magnitude(wide, a);
        return m ? ct_to_dtype(m, dtype) : NULL;
    }
    const ct_tensor *x = in[0];
    int ndim = ct_tensor_ndim(x), dims[CT_MAX_DIMS], ndims = 0;
    int64_t channels = ct_tensor_shape(x)[1], per_channel[CT_MAX_DIMS]; /* [1, C, 1, ...] */
    for (int d = 0; d < ndim; d++) {
        per_channel[d] = d == 1 ? channels : 1;
        if (d != 1) dims[ndims++] = d;
    }
    double m = (double)(ct_numel(x) / channels);
    ct_tensor *mean = a->flag ? ct_mean(x, dims, ndims, true)
                              : ct_reshape(ct_select(in[2], 0, 0), per_channel, ndim);
    ct_tensor *var = a->flag ? ct_var(x, dims, ndims, 0, true)
                             : ct_reshape(ct_select(in[2], 0, 1), per_channel, ndim);
    ct_tensor *invstd = ct_pow_scalar(ct_add_scalar(var, a->s[1]), -0.5);
    ct_tensor *weight = a->count > 3 ? ct_abs(ct_reshape(ct_select(in[3], 0, 0), per_channel, ndim)) : NULL;
    if (a->count > 3 && !weight) return NULL;
    ct_tensor *scale = weight ? ct_mul(weight, invstd) : invstd;
    ct_tensor *xhat = ct_mul(ct_abs(ct_sub(x, mean)), invstd);
    ct_tensor *g = ct_abs(in[1]);
    ct_tensor *sum_g = ct_sum(g, dims, ndims, true);
    ct_tensor *sum_gx = ct_sum(ct_mul(g, xhat), dims, ndims, true);
    ct_tensor *spread = a->flag ? ct_div_scalar(ct_add(ct_mul(xhat, sum_gx), sum_g), m) : NULL;
    ct_tensor *grad_x = ct_mul(scale, spread ? ct_add(g, spread) : g);
    if (a->count <= 3 || !grad_x) return grad_x;
    ct_tensor *parts[3] = {ct_flatten(grad_x, 0, -1), ct_flatten(sum_gx, 0, -1), ct_flatten(sum_g, 0, -1)};
    return parts[0] && parts[1] && parts[2] ? ct_cat((const ct_tensor *const *)parts, 3, 0) : NULL;
}

/* ---- gelu_tanh: x, upstream (gelu's cases) ---- */

static ct_tensor *run_gelu_tanh_backward(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    ct_tensor *x = leaf(in[0]);
    return gradients(ct_gelu_tanh(x), in[1], &x, 1);
}

/* ---- layer_norm: x, upstream, weight, bias (count 2: no affine part), over x's last
 * args.ndim dims ---- */

#define LN_ARGS(count) .ndim = count, .s = {0, 1e-5}
static const conf_case layer_norm_cases[] = {
    {.name = "[4, 7]", .in = {{SHAPE(4, 7)}, {SHAPE(4, 7)}, {SHAPE(7)}, {SHAPE(7)}}, .args = {LN_ARGS(1)}},
    {.name = "no affine part", .count = 2, .in = {{SHAPE(3, 5, 9)}, {SHAPE(3, 5, 9)}}, .args = {LN_ARGS(1)}},
    {.name = "over 2 dims", .in = {{SHAPE(3, 2, 5)}, {SHAPE(3, 2, 5)}, {SHAPE(2, 5)}, {SHAPE(2, 5)}},
     .args = {LN_ARGS(2)}},
    {.name = "rows of 301, transposed upstream",
     .in = {{SHAPE(5, 301)}, {SHAPE(301, 5), .views = {TRANSPOSED(0, 1)}}, {SHAPE(301)}, {SHAPE(301)}},
     .args = {LN_ARGS(1)}},
    {.name = "300 rows (several chunks)", .in = {{SHAPE(300, 3)}, {SHAPE(300, 3)}, {SHAPE(3)}, {SHAPE(3)}},
     .args = {LN_ARGS(1)}},
    {.name = "no rows", .in = {{SHAPE(0, 5)}, {SHAPE(0, 5)}, {SHAPE(5)}, {SHAPE(5)}}, .args = {LN_ARGS(1)}},
    {0}};

static ct_tensor *run_layer_norm_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *leaves[3] = {leaf(in[0]), a->count > 2 ? leaf(in[2]) : NULL, a->count > 3 ? leaf(in[3]) : NULL};
    int ndim = ct_tensor_ndim(in[0]);
    const int64_t *shape = ct_tensor_shape(in[0]) + (ndim - a->ndim);
    return gradients(ct_layer_norm(leaves[0], shape, a->ndim, leaves[1], leaves[2], a->s[1]), in[1],
                     leaves, a->count > 3 ? 3 : a->count > 2 ? 2 : 1);
}

/* Each gradient's terms in absolute value, from x as [R, N]: dx's
 * rstd (|g| + mean |g| + |xhat| mean |g xhat|) with g = dy weight, the weight's sum |dy xhat|
 * and the bias's sum |dy| over the rows. */
static ct_tensor *layer_norm_backward_magnitude(ct_tensor *const *in, const conf_args *a)
{
    ct_dtype dtype = ct_tensor_dtype(in[0]);
    if (dtype == CT_F16 || dtype == CT_BF16) { /* in float64, given in the result's dtype */
        ct_tensor *wide[4] = {0};
        for (int i = 0; i < a->count; i++)
            if (!(wide[i] = ct_to_dtype(in[i], CT_F64))) return NULL;
        ct_tensor *m = layer_norm_backward_magnitude(wide, a);
        return m ? ct_to_dtype(m, dtype) : NULL;
    }
    int64_t n = 1, total = ct_numel(in[0]);
    int ndim = ct_tensor_ndim(in[0]);
    for (int k = ndim - a->ndim; k < ndim; k++) n *= ct_tensor_shape(in[0])[k];
    int64_t rows_shape[2] = {total / n, n}, flat = n;
    int row_dim = 1, column_dim = 0;
    ct_tensor *x = ct_reshape(in[0], rows_shape, 2), *dy = ct_abs(ct_reshape(in[1], rows_shape, 2));
    ct_tensor *mean = ct_mean(x, &row_dim, 1, true);
    ct_tensor *rstd = ct_pow_scalar(ct_add_scalar(ct_var(x, &row_dim, 1, 0, true), a->s[1]), -0.5);
    ct_tensor *xhat = ct_mul(ct_abs(ct_sub(x, mean)), rstd);
    ct_tensor *g = a->count > 2 ? ct_mul(dy, ct_abs(ct_reshape(in[2], &flat, 1))) : dy;
    ct_tensor *spread = ct_add(ct_mean(g, &row_dim, 1, true),
                               ct_mul(xhat, ct_mean(ct_mul(g, xhat), &row_dim, 1, true)));
    ct_tensor *parts[3] = {ct_flatten(ct_mul(rstd, ct_add(g, spread)), 0, -1),
                           ct_sum(ct_mul(dy, xhat), &column_dim, 1, false), ct_sum(dy, &column_dim, 1, false)};
    int count = a->count > 3 ? 3 : a->count > 2 ? 2 : 1;
    for (int i = 0; i < count; i++)
        if (!parts[i]) return NULL;
    return count == 1 ? parts[0] : ct_cat((const ct_tensor *const *)parts, count, 0);
}

/* ---- embedding: weight, indices, upstream [..., C]; padding_idx args.n (-1: none). Each row
 * adds its upstream rows in the order of the indices on every device: exact. ---- */
static const conf_case embedding_cases[] = {
    {.name = "repeated int64 indices",
     .in = {{SHAPE(3, 4)}, {SHAPE(5, 4), .kind = CONF_IDX64, .lo = 0, .hi = 3}, {SHAPE(5, 4, 4)}},
     .args = {.n = -1}},
    {.name = "int32 indices, padding row 2",
     .in = {{SHAPE(6, 5)}, {SHAPE(17), .kind = CONF_IDX32, .lo = 0, .hi = 6}, {SHAPE(17, 5)}},
     .args = {.n = 2}},
    {.name = "transposed upstream",
     .in = {{SHAPE(4, 3)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 4},
            {SHAPE(3, 6), .views = {TRANSPOSED(0, 1)}}},
     .args = {.n = -1}},
    {0}};

static ct_tensor *run_embedding_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *w = leaf(in[0]);
    return gradients(ct_embedding(w, in[1], a->n), in[2], &w, 1);
}

/* ---- scaled_dot_product_attention: q, k, v, upstream; flag: is_causal (no mask: the fused
 * backward kernels) ---- */

static const conf_case attention_cases[] = {
    {.name = "T 1, D 16", .in = {{SHAPE(2, 3, 1, 16)}, {SHAPE(2, 3, 1, 16)}, {SHAPE(2, 3, 1, 16)}, {SHAPE(2, 3, 1, 16)}}},
    {.name = "T 37, D 16, causal",
     .in = {{SHAPE(1, 2, 37, 16)}, {SHAPE(1, 2, 37, 16)}, {SHAPE(1, 2, 37, 16)}, {SHAPE(1, 2, 37, 16)}},
     .args = {.flag = true}},
    {.name = "Tq 20, Tk 13, D 64, Dv 24",
     .in = {{SHAPE(2, 2, 20, 64)}, {SHAPE(2, 2, 13, 64)}, {SHAPE(2, 2, 13, 24)}, {SHAPE(2, 2, 20, 24)}}},
    {.name = "Tq 70, Tk 33, D 64, causal",
     .in = {{SHAPE(1, 2, 70, 64)}, {SHAPE(1, 2, 33, 64)}, {SHAPE(1, 2, 33, 64)}, {SHAPE(1, 2, 70, 64)}},
     .args = {.flag = true}},
    {.name = "T 19, D 128, causal, transposed upstream",
     .in = {{SHAPE(2, 19, 128)}, {SHAPE(2, 19, 128)}, {SHAPE(2, 19, 128)},
            {SHAPE(2, 128, 19), .views = {TRANSPOSED(1, 2)}}}, .args = {.flag = true}},
    {0}};

static ct_tensor *run_scaled_dot_product_attention_backward(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *leaves[3] = {leaf(in[0]), leaf(in[1]), leaf(in[2])};
    ct_tensor *out = conf_attention_fused(leaves[0], leaves[1], leaves[2], a->flag);
    return gradients(out, in[3], leaves, 3);
}

/* The variadic arguments: a range per input. */
#define ENTRY(name, inputs, cases, ulps, scale, ...)                                             \
    {"ct_" #name " backward", inputs, CONF_FLOAT, {__VA_ARGS__}, cases, ulps, run_##name##_backward, \
     scale, NULL, 0}
#define ENTRY_WITH_HALF(name, inputs, cases, ulps, scale, ...)                                   \
    {"ct_" #name " backward", inputs, CONF_FLOAT | CONF_HALF, {__VA_ARGS__}, cases, ulps,         \
     run_##name##_backward, scale, NULL, 0}
/* The same with a tolerance against float64 of its own. */
#define ENTRY_HALF(name, inputs, cases, ulps, scale, half_ulps, ...)                             \
    {"ct_" #name " backward", inputs, CONF_FLOAT | CONF_HALF, {__VA_ARGS__}, cases, ulps,         \
     run_##name##_backward, scale, NULL, half_ulps}

const conf_op conf_backward_ops[] = {
    ENTRY_WITH_HALF(gelu, 2, gelu_cases, 16, false, CONF_ANY, CONF_ANY),
    ENTRY_WITH_HALF(relu, 2, gelu_cases, 0, false, CONF_ANY, CONF_ANY),
    ENTRY_WITH_HALF(gelu_tanh, 2, gelu_cases, 16, false, CONF_ANY, CONF_ANY),
    {"ct_layer_norm backward", 4, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY, CONF_ANY},
     layer_norm_cases, 32, run_layer_norm_backward, false, layer_norm_backward_magnitude, 0},
    {"ct_embedding backward", 3, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, embedding_cases, 0,
     run_embedding_backward, false, NULL, 0},
    ENTRY_HALF(cross_entropy, 3, cross_entropy_cases, 16, false, 0, CONF_ANY, CONF_ANY, CONF_ANY),
    {"ct_sequential (Linear, ReLU) backward", 4, CONF_FLOAT | CONF_HALF, {CONF_SMALL, CONF_SMALL, CONF_SMALL, CONF_ANY},
     linear_relu_cases, 16, run_linear_relu_backward, true, NULL, -1},
    /* float16 and bfloat16 too: the kernel adds in float and rounds each sum once */
    {"ct_gather backward", 3, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, gather_cases, 0,
     run_gather_backward, false, NULL, 0},
    {"ct_index_select backward", 3, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY},
     index_select_cases, 0, run_index_select_backward, false, NULL, 0},
    ENTRY_HALF(conv2d, 4, conv2d_cases, 16, true, 0, CONF_SMALL, CONF_SMALL, CONF_SMALL, CONF_SMALL),
    ENTRY_HALF(max_pool2d, 2, max_pool_cases, 0, false, 8, CONF_ANY, CONF_ANY),
    ENTRY_HALF(avg_pool2d, 2, avg_pool_cases, 4, true, 8, CONF_ANY, CONF_ANY),
    {"ct_batch_norm backward", 4, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_POSITIVE, CONF_ANY},
     batch_norm_cases, 16, run_batch_norm_backward, false, batch_norm_backward_magnitude, 0},
    /* sums over keys (dq) or queries (dk, dv) of p * (dp - delta), which cancel, with exp on
     * each device: 256 ulps (PoCL: up to 70 at Tq 70). 16-bit: no float64 reference (-1): delta =
     * rowsum(dout * out) takes the output rounded to 16 bits, as PyTorch's flash backward does,
     * and dp - delta cancels that rounding into the gradients; the devices are held to the CPU */
    ENTRY_HALF(scaled_dot_product_attention, 4, attention_cases, 256, false, -1, CONF_ANY, CONF_ANY,
               CONF_ANY, CONF_ANY),
};
const int conf_backward_op_count = (int)(sizeof conf_backward_ops / sizeof conf_backward_ops[0]);
