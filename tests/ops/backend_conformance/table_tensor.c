/* Conformance entries of the tensor calls that compute on a device: creation made there
 * (zeros, ones, full, arange, linspace, random numbers, from data), views (taken on the device,
 * then read through the device's strided copy), copies and casts. All exact, except:
 *  - arange and linspace, 2 ulps: start + i * step may become one fused multiply-add on a device
 *    (OpenCL C contracts by default; PoCL on this machine does) and not on the CPU, which moves
 *    float64 values by an ulp;
 *  - randn, 4 ulps: Box-Muller through the device's log and cos. */
#include <stdlib.h>

#include "conformance.h"

/* ---- creation: no tensor inputs; shapes and values in the arguments ---- */

static const conf_case shape_cases[] = {
    {.name = "[3, 4]", .args = {.ndim = 2, .shape = {3, 4}, .s = {2.5}}},
    {.name = "0-d", .args = {.ndim = 0, .s = {-1.0}}},
    {.name = "empty", .args = {.ndim = 2, .shape = {0, 3}, .s = {1.0}}},
    {.name = "large", .args = {.ndim = 2, .shape = {200, 200}, .s = {77.0}}},
    /* a device fills 4 elements per item: a last item of 1 to 3 */
    {.name = "[1]", .args = {.ndim = 1, .shape = {1}, .s = {3.0}}},
    {.name = "[2, 7]", .args = {.ndim = 2, .shape = {2, 7}, .s = {-2.0}}},
    {.name = "large, [20483]", .args = {.ndim = 1, .shape = {20483}, .s = {5.0}}},
    {0}};

/* start, end, step; the values stay in [0, 250] so that every dtype holds them. */
static const conf_case arange_cases[] = {
    {.name = "0 to 10", .args = {.s = {0, 10, 1}}},
    {.name = "fractional step", .args = {.s = {2, 11.5, 0.75}}},
    {.name = "downwards", .args = {.s = {10, 0, -1.5}}},
    {.name = "empty", .args = {.s = {5, 5, 1}}},
    {.name = "large", .args = {.s = {0, 250, 0.0125}}},
    {0}};

/* start, end in s, steps in n. */
static const conf_case linspace_cases[] = {
    {.name = "0 to 1 in 5", .args = {.s = {0, 1}, .n = 5}},
    {.name = "2 to 9 in 8", .args = {.s = {2, 9}, .n = 8}},
    {.name = "downwards", .args = {.s = {9, 2.5}, .n = 7}},
    {.name = "one step", .args = {.s = {3, 7}, .n = 1}},
    {.name = "no steps", .args = {.s = {3, 7}, .n = 0}},
    {.name = "large", .args = {.s = {0, 250}, .n = 20000}},
    {0}};

static ct_tensor *run_zeros(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    return ct_zeros(a->shape, a->ndim, a->dtype, a->device);
}

static ct_tensor *run_ones(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    return ct_ones(a->shape, a->ndim, a->dtype, a->device);
}

static ct_tensor *run_full(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    return ct_full(a->shape, a->ndim, a->s[0], a->dtype, a->device);
}

static ct_tensor *run_arange(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    return ct_arange(a->s[0], a->s[1], a->s[2], a->dtype, a->device);
}

static ct_tensor *run_linspace(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    return ct_linspace(a->s[0], a->s[1], a->n, a->dtype, a->device);
}

/* The random calls reseed first: one seed gives the same numbers on every device. */
static ct_tensor *run_rand(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    ct_manual_seed(77);
    return ct_rand(a->shape, a->ndim, a->dtype, a->device);
}

static ct_tensor *run_randn(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    ct_manual_seed(78);
    return ct_randn(a->shape, a->ndim, a->dtype, a->device);
}

static ct_tensor *run_randint(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    static const int64_t low[CT_DTYPE_COUNT] = {-1000, -1000, -1000, INT64_MIN / 2, 0, 0, -1000, -256};
    static const int64_t high[CT_DTYPE_COUNT] = {1000, 1000, 1000, INT64_MAX / 2, 256, 2, 1000, 256};
    ct_manual_seed(79);
    return ct_randint(low[a->dtype], high[a->dtype], a->shape, a->ndim, a->dtype, a->device);
}

/* Host data (i * 7 mod 251, alternating in sign where the dtype has one) copied to the device. */
static ct_tensor *run_tensor_from_data(ct_tensor *const *in, const conf_args *a)
{
    (void)in;
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
    size_t size = ct_dtype_size(a->dtype);
    unsigned char *data = malloc((size_t)(n > 0 ? n : 1) * size);
    if (!data) return NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (i * 7) % 251;
        int64_t sv = (i % 2) ? -v : v;
        void *at = data + (size_t)i * size;
        switch (a->dtype) {
        case CT_F32: *(float *)at = (float)sv / 4.0f; break;
        case CT_F64: *(double *)at = (double)sv / 4.0; break;
        case CT_F16: *(uint16_t *)at = ct_float_to_f16((float)sv / 4.0f); break;
        case CT_BF16: *(uint16_t *)at = ct_float_to_bf16((float)sv / 4.0f); break;
        case CT_I32: *(int32_t *)at = (int32_t)sv; break;
        case CT_I64: *(int64_t *)at = sv * 1000003; break;
        case CT_U8: *(uint8_t *)at = (uint8_t)v; break;
        default: *(uint8_t *)at = (uint8_t)(v & 1); break;
        }
    }
    ct_tensor *t = ct_tensor_from_data(data, a->dtype, a->shape, a->ndim, a->device);
    free(data);
    return t;
}

/* ---- views and copies: one input, every kind of layout ---- */

static const conf_case layout_cases[] = {
    {.name = "contiguous", .in = {{SHAPE(3, 4)}}},
    {.name = "transposed", .in = {{SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "sliced with a step", .in = {{SHAPE(3, 11), .views = {SLICED(1, 1, 11, 3)}}}},
    {.name = "expanded", .in = {{SHAPE(3, 1), .views = {EXPANDED(2, 3, 4)}}}},
    {.name = "selected and permuted",
     .in = {{SHAPE(2, 3, 4, 5), .views = {SELECTED(0, 1), PERMUTED(2, 0, 1)}}}},
    {.name = "narrowed", .in = {{SHAPE(6, 4), .views = {NARROWED(0, 2, 3)}}}},
    {.name = "0-d", .in = {{.ndim = 0}}},
    {.name = "empty", .in = {{SHAPE(0, 4), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "large, transposed", .in = {{SHAPE(160, 128), .views = {TRANSPOSED(0, 1)}}}},
    /* flat copies: a device moves 4 elements per item when both ends start on a vector boundary */
    {.name = "1 element", .in = {{SHAPE(1)}}},
    {.name = "narrowed off a vector boundary", .in = {{SHAPE(16), .views = {NARROWED(0, 1, 13)}}}},
    {.name = "narrowed on a vector boundary", .in = {{SHAPE(16), .views = {NARROWED(0, 4, 11)}}}},
    {.name = "large, a last vector of 3", .in = {{SHAPE(20483)}}},
    {0}};

static const conf_case reshape_cases[] = {
    {.name = "a view", .in = {{SHAPE(3, 4)}}, .args = {.ndim = 2, .shape = {4, 3}}},
    {.name = "a copy of a transposed tensor", .in = {{SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}},
     .args = {.ndim = 1, .shape = {12}}},
    {.name = "an inferred size", .in = {{SHAPE(2, 3, 4)}}, .args = {.ndim = 2, .shape = {-1, 4}}},
    {.name = "0-d to [1]", .in = {{.ndim = 0}}, .args = {.ndim = 1, .shape = {1}}},
    {.name = "empty", .in = {{SHAPE(0, 3)}}, .args = {.ndim = 2, .shape = {3, 0}}},
    {.name = "large, transposed", .in = {{SHAPE(160, 128), .views = {TRANSPOSED(0, 1)}}},
     .args = {.ndim = 1, .shape = {20480}}},
    {0}};

static const conf_case view_cases[] = {
    {.name = "contiguous", .in = {{SHAPE(3, 4)}}, .args = {.ndim = 2, .shape = {2, 6}}},
    {.name = "an inferred size", .in = {{SHAPE(2, 3, 4)}}, .args = {.ndim = 2, .shape = {6, -1}}},
    {.name = "a split dim of a transposed tensor", .in = {{SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}},
     .args = {.ndim = 3, .shape = {3, 2, 2}}},
    {0}};

/* dims[0], dims[1]: the dims swapped (transpose) or flattened (flatten). */
static const conf_case two_dims_cases[] = {
    {.name = "[3, 4] (0, 1)", .in = {{SHAPE(3, 4)}}, .args = {.dims = {0, 1}}},
    {.name = "[2, 3, 4] (0, -1)", .in = {{SHAPE(2, 3, 4)}}, .args = {.dims = {0, -1}}},
    {.name = "transposed (1, 2)", .in = {{SHAPE(2, 4, 3), .views = {TRANSPOSED(1, 2)}}},
     .args = {.dims = {1, 2}}},
    {0}};

static const conf_case permute_cases[] = {
    {.name = "[2, 3, 4]", .in = {{SHAPE(2, 3, 4)}}, .args = {.dims = {2, 0, 1}, .ndims = 3}},
    {.name = "sliced", .in = {{SHAPE(2, 3, 9), .views = {SLICED(2, 0, 9, 2)}}},
     .args = {.dims = {1, 2, 0}, .ndims = 3}},
    {0}};

/* narrow: dim, start shape[0], length shape[1]; slice: dim, start, end, step in shape[0..2]. */
static const conf_case narrow_cases[] = {
    {.name = "dim 0", .in = {{SHAPE(5, 4)}}, .args = {.dim = 0, .shape = {1, 3}}},
    {.name = "transposed, dim -1", .in = {{SHAPE(4, 5), .views = {TRANSPOSED(0, 1)}}},
     .args = {.dim = -1, .shape = {2, 2}}},
    {0}};

static const conf_case slice_cases[] = {
    {.name = "dim 0 step 3", .in = {{SHAPE(10, 3)}}, .args = {.dim = 0, .shape = {1, 9, 3}}},
    {.name = "negative start, end past the size", .in = {{SHAPE(3, 10)}},
     .args = {.dim = 1, .shape = {-7, 100, 2}}},
    {.name = "transposed", .in = {{SHAPE(6, 4), .views = {TRANSPOSED(0, 1)}}},
     .args = {.dim = 1, .shape = {0, 6, 4}}},
    {0}};

/* select: dim and the index in n; squeeze_dim, unsqueeze: dim. */
static const conf_case select_cases[] = {
    {.name = "dim 1", .in = {{SHAPE(3, 4)}}, .args = {.dim = 1, .n = 2}},
    {.name = "transposed, dim -1", .in = {{SHAPE(4, 2, 3), .views = {TRANSPOSED(0, 2)}}},
     .args = {.dim = -1, .n = 3}},
    {0}};

static const conf_case squeeze_cases[] = {
    {.name = "[1, 3, 1, 4]", .in = {{SHAPE(1, 3, 1, 4)}}, .args = {.dim = 2}},
    {.name = "expanded", .in = {{SHAPE(3, 1), .views = {EXPANDED(1, 3, 1)}}}, .args = {.dim = 0}},
    {0}};

static const conf_case unsqueeze_cases[] = {
    {.name = "dim 1", .in = {{SHAPE(3, 4)}}, .args = {.dim = 1}},
    {.name = "transposed, dim -1", .in = {{SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}}, .args = {.dim = -1}},
    {0}};

static const conf_case expand_cases[] = {
    {.name = "new leading dims", .in = {{SHAPE(3, 1)}}, .args = {.ndim = 3, .shape = {2, -1, 4}}},
    {.name = "a 0-d tensor", .in = {{.ndim = 0}}, .args = {.ndim = 2, .shape = {2, 3}}},
    {0}};

/* ct_to_dtype to every dtype, from contiguous and strided tensors: every copy kernel. Values in
 * [-100, 100): negative floats become uint8 through int64 (wrapping), as the dialect defines. */
#define TO_DTYPE_CASES(dtype_name, dtype)                                                        \
    {.name = "to " dtype_name, .in = {{SHAPE(3, 5), .lo = -100, .hi = 100}},                      \
     .args = {.target = dtype}},                                                                 \
    {.name = "transposed to " dtype_name,                                                        \
     .in = {{SHAPE(5, 3), .lo = -100, .hi = 100, .views = {TRANSPOSED(0, 1)}}}, .args = {.target = dtype}}, \
    {.name = "narrowed off a vector boundary to " dtype_name,                                    \
     .in = {{SHAPE(16), .lo = -100, .hi = 100, .views = {NARROWED(0, 1, 14)}}}, .args = {.target = dtype}}, \
    {.name = "narrowed on a vector boundary to " dtype_name,                                     \
     .in = {{SHAPE(16), .lo = -100, .hi = 100, .views = {NARROWED(0, 4, 9)}}}, .args = {.target = dtype}}
static const conf_case to_dtype_cases[] = {
    TO_DTYPE_CASES("float32", CT_F32), TO_DTYPE_CASES("float64", CT_F64),
    TO_DTYPE_CASES("int32", CT_I32),   TO_DTYPE_CASES("int64", CT_I64),
    TO_DTYPE_CASES("uint8", CT_U8),    TO_DTYPE_CASES("bool", CT_BOOL),
    TO_DTYPE_CASES("float16", CT_F16), TO_DTYPE_CASES("bfloat16", CT_BF16),
    {0}};

/* ct_to_with: a forced copy (n 0: dtype kept) or a conversion to target (n 1). */
static const conf_case to_with_cases[] = {
    {.name = "forced copy", .in = {{SHAPE(3, 4)}}},
    {.name = "transposed to float64", .in = {{SHAPE(4, 3), .lo = 0, .hi = 100, .views = {TRANSPOSED(0, 1)}}},
     .args = {.n = 1, .target = CT_F64}},
    {0}};

/* ct_copy_ into a transposed view of a zero tensor; n 1 copies from the CPU (across devices). */
static const conf_case copy_cases[] = {
    {.name = "same device", .in = {{SHAPE(3, 4)}}},
    {.name = "from the CPU", .in = {{SHAPE(3, 4)}}, .args = {.n = 1}},
    {.name = "from a strided view", .in = {{SHAPE(3, 9), .views = {SLICED(1, 0, 9, 2)}}}},
    {0}};

#define VIEW_RUN(name, call)                                                                     \
    static ct_tensor *run_##name(ct_tensor *const *in, const conf_args *a)                       \
    {                                                                                            \
        (void)a;                                                                                 \
        return call;                                                                             \
    }
VIEW_RUN(contiguous, ct_contiguous(in[0]))
VIEW_RUN(clone, ct_clone(in[0]))
VIEW_RUN(reshape, ct_reshape(in[0], a->shape, a->ndim))
VIEW_RUN(view, ct_view(in[0], a->shape, a->ndim))
VIEW_RUN(transpose, ct_transpose(in[0], a->dims[0], a->dims[1]))
VIEW_RUN(permute, ct_permute(in[0], a->dims, a->ndims))
VIEW_RUN(narrow, ct_narrow(in[0], a->dim, a->shape[0], a->shape[1]))
VIEW_RUN(slice, ct_slice(in[0], a->dim, a->shape[0], a->shape[1], a->shape[2]))
VIEW_RUN(select, ct_select(in[0], a->dim, a->n))
VIEW_RUN(squeeze, ct_squeeze(in[0]))
VIEW_RUN(squeeze_dim, ct_squeeze_dim(in[0], a->dim))
VIEW_RUN(unsqueeze, ct_unsqueeze(in[0], a->dim))
VIEW_RUN(expand, ct_expand(in[0], a->shape, a->ndim))
VIEW_RUN(flatten, ct_flatten(in[0], a->dims[0], a->dims[1]))
VIEW_RUN(to_dtype, ct_to_dtype(in[0], a->target))

static ct_tensor *run_to_with(ct_tensor *const *in, const conf_args *a)
{
    ct_to_options options = ct_to_options_default(a->device);
    options.dtype = a->n ? (int)a->target : -1;
    options.copy = true;
    return ct_to_with(in[0], &options);
}

static ct_tensor *run_copy_(ct_tensor *const *in, const conf_args *a)
{
    int ndim = ct_tensor_ndim(in[0]);
    int64_t shape[2] = {ct_tensor_size(in[0], 1), ct_tensor_size(in[0], 0)};
    ct_tensor *dst = ndim == 2 ? ct_zeros(shape, 2, a->dtype, a->device) : NULL;
    ct_tensor *view = ct_transpose(dst, 0, 1);
    const ct_tensor *src = a->n ? ct_to(in[0], CT_DEVICE_CPU) : in[0];
    if (!view || !src || ct_copy_(view, src) != CT_OK) return NULL;
    return dst; /* recorded in the harness's scope by ct_zeros */
}

/* The *_like constructors: the result of a's shape, dtype and device (empty_like filled, its
 * values being undefined; the random ones reseeded) */
static ct_tensor *run_empty_like(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    ct_tensor *t = ct_empty_like(in[0]);
    if (t && ct_fill_(t, 3) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}
static ct_tensor *run_zeros_like(ct_tensor *const *in, const conf_args *a) { (void)a; return ct_zeros_like(in[0]); }
static ct_tensor *run_ones_like(ct_tensor *const *in, const conf_args *a) { (void)a; return ct_ones_like(in[0]); }
static ct_tensor *run_full_like(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    return ct_full_like(in[0], ct_tensor_dtype(in[0]) == CT_BOOL ? 1.0 : 7.0);
}
static ct_tensor *run_rand_like(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    ct_manual_seed(79);
    return ct_rand_like(in[0]);
}
static ct_tensor *run_randn_like(ct_tensor *const *in, const conf_args *a)
{
    (void)a;
    ct_manual_seed(80);
    return ct_randn_like(in[0]);
}

#define CREATE(name, dtypes, cases, ulps)                                                         \
    {"ct_" #name, 0, dtypes, {CONF_ANY}, cases, ulps, run_##name, false, NULL, 0}
/* randint draws another range for bfloat16 (which holds integers to 256 exactly), and randn draws
 * float64 normals from other bits than float32's (and the 16-bit ones', rounded from
 * float32's): the 16-bit draws have no float64 reference, only the other devices. */
#define CREATE_WITHOUT_FLOAT64_REFERENCE(name, dtypes, cases, ulps)                               \
    {"ct_" #name, 0, dtypes, {CONF_ANY}, cases, ulps, run_##name, false, NULL, -1}
#define LAYOUT(name, cases)                                                                      \
    {"ct_" #name, 1, CONF_ALL | CONF_HALF, {CONF_ANY}, cases, 0, run_##name, false, NULL, 0}

const conf_op conf_tensor_ops[] = {
    CREATE(zeros, CONF_ALL | CONF_HALF, shape_cases, 0),
    CREATE(ones, CONF_ALL | CONF_HALF, shape_cases, 0),
    CREATE(full, CONF_ALL | CONF_HALF, shape_cases, 0),
    CREATE(arange, CONF_NUMERIC | CONF_HALF, arange_cases, 2),
    CREATE(linspace, CONF_NUMERIC | CONF_HALF, linspace_cases, 2),
    CREATE(rand, CONF_FLOAT | CONF_HALF, shape_cases, 0),
    CREATE_WITHOUT_FLOAT64_REFERENCE(randn, CONF_FLOAT | CONF_HALF, shape_cases, 4),
    CREATE_WITHOUT_FLOAT64_REFERENCE(randint, CONF_ALL | CONF_HALF, shape_cases, 0),
    CREATE(tensor_from_data, CONF_ALL | CONF_HALF, shape_cases, 0),
    LAYOUT(empty_like, layout_cases),
    LAYOUT(zeros_like, layout_cases),
    LAYOUT(ones_like, layout_cases),
    LAYOUT(full_like, layout_cases),
    {"ct_rand_like", 1, CONF_FLOAT | CONF_HALF, {CONF_ANY}, layout_cases, 0, run_rand_like, false, NULL, 0},
    {"ct_randn_like", 1, CONF_FLOAT | CONF_HALF, {CONF_ANY}, layout_cases, 4, run_randn_like, false, NULL, -1},
    LAYOUT(contiguous, layout_cases),
    LAYOUT(clone, layout_cases),
    LAYOUT(reshape, reshape_cases),
    LAYOUT(view, view_cases),
    LAYOUT(transpose, two_dims_cases),
    LAYOUT(permute, permute_cases),
    LAYOUT(narrow, narrow_cases),
    LAYOUT(slice, slice_cases),
    LAYOUT(select, select_cases),
    LAYOUT(squeeze, squeeze_cases),
    LAYOUT(squeeze_dim, squeeze_cases),
    LAYOUT(unsqueeze, unsqueeze_cases),
    LAYOUT(expand, expand_cases),
    LAYOUT(flatten, two_dims_cases),
    LAYOUT(to_dtype, to_dtype_cases),
    LAYOUT(to_with, to_with_cases),
    LAYOUT(copy_, copy_cases),
};
const int conf_tensor_op_count = (int)(sizeof conf_tensor_ops / sizeof conf_tensor_ops[0]);
