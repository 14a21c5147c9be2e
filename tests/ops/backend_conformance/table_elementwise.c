/* Conformance entries of the elementwise ops: two tensors, where, a tensor and a scalar, one
 * tensor. Tolerances: arithmetic that IEEE rounds exactly (+, -, *, comparisons, selections) must
 * agree to the bit; division and sqrt get the 3 ulps OpenCL C allows for float; exp and log 4,
 * tanh 6, sigmoid 8, pow, gelu (erf) and gelu_tanh 16. float16 and bfloat16 compute in float32 and round
 * once on store, so each agrees with the float64 reference within the default 2 units of the
 * 16-bit format (half an ulp of rounding, and far less of float32 arithmetic). */
#include "conformance.h"

/* Two tensors: plain, broadcast, every kind of view, empty, 0-d, special values, mixed dtypes
 * (promotion), and large enough for the CPU's threaded path. Flat operands run on a device as
 * items of 4 elements moved as vectors when every operand starts a multiple of 4 elements into
 * its buffer: the sizes leave a last item of 1, 2 and 3 elements ([3, 5] is 15), and views start
 * on such a boundary or off it (one operand off, or all). */
static const conf_case binary_cases[] = {
    {.name = "plain", .in = {{SHAPE(3, 5)}, {SHAPE(3, 5)}}},
    {.name = "broadcast", .in = {{SHAPE(4, 1, 3)}, {SHAPE(5, 3)}}},
    {.name = "with a 0-d tensor", .in = {{SHAPE(3, 5)}, {.ndim = 0}}},
    {.name = "0-d", .in = {{.ndim = 0}, {.ndim = 0}}},
    {.name = "transposed", .in = {{SHAPE(5, 3), .views = {TRANSPOSED(0, 1)}}, {SHAPE(3, 5)}}},
    {.name = "sliced with a step",
     .in = {{SHAPE(3, 11), .views = {SLICED(1, 1, 11, 2)}}, {SHAPE(6, 5), .views = {SLICED(0, 0, 6, 2)}}}},
    {.name = "expanded",
     .in = {{SHAPE(1, 5), .views = {EXPANDED(3, 5)}}, {SHAPE(3, 1), .views = {EXPANDED(3, 5)}}}},
    {.name = "selected and permuted",
     .in = {{SHAPE(2, 3, 5), .views = {SELECTED(0, 1)}},
            {SHAPE(5, 3, 1), .views = {PERMUTED(2, 1, 0), SELECTED(0, 0)}}}},
    {.name = "empty", .in = {{SHAPE(0, 5)}, {SHAPE(1, 5)}}},
    {.name = "special values",
     .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}, {SHAPE(8, 8), .values = CONF_SPECIALS}}},
    {.name = "mixed dtypes", .in = {{SHAPE(3, 5)}, {SHAPE(3, 5), .kind = CONF_PARTNER}}},
    {.name = "mixed dtypes, broadcast", .in = {{SHAPE(4, 1), .kind = CONF_PARTNER}, {SHAPE(6)}}},
    {.name = "large", .in = {{SHAPE(128, 160)}, {SHAPE(128, 160)}}},
    {.name = "large, transposed", .in = {{SHAPE(160, 128), .views = {TRANSPOSED(0, 1)}}, {SHAPE(160)}}},
    {.name = "1 element", .in = {{SHAPE(1)}, {SHAPE(1)}}},
    {.name = "a last vector of 1", .in = {{SHAPE(13)}, {SHAPE(13)}}},
    {.name = "a last vector of 2", .in = {{SHAPE(2, 7)}, {SHAPE(2, 7)}}},
    {.name = "large, a last vector of 3", .in = {{SHAPE(20483)}, {SHAPE(20483)}}},
    {.name = "views off a vector boundary",
     .in = {{SHAPE(2, 13), .views = {SELECTED(0, 1)}}, {SHAPE(14), .views = {NARROWED(0, 1, 13)}}}},
    {.name = "one view 2 elements in", .in = {{SHAPE(15), .views = {NARROWED(0, 2, 13)}}, {SHAPE(13)}}},
    {.name = "views on a vector boundary",
     .in = {{SHAPE(15), .views = {NARROWED(0, 4, 11)}}, {SHAPE(2, 11), .views = {SELECTED(0, 1)}}}},
    {0}};

/* where: a bool condition and two values. */
static const conf_case where_cases[] = {
    {.name = "plain", .in = {{SHAPE(3, 5), .kind = CONF_BOOL}, {SHAPE(3, 5)}, {SHAPE(3, 5)}}},
    {.name = "broadcast", .in = {{SHAPE(3, 1), .kind = CONF_BOOL}, {SHAPE(1, 5)}, {SHAPE(4, 1, 1)}}},
    {.name = "0-d", .in = {{.ndim = 0, .kind = CONF_BOOL}, {.ndim = 0}, {.ndim = 0}}},
    {.name = "transposed and sliced",
     .in = {{SHAPE(5, 3), .kind = CONF_BOOL, .views = {TRANSPOSED(0, 1)}},
            {SHAPE(3, 10), .views = {SLICED(1, 0, 10, 2)}},
            {SHAPE(2, 3, 5), .views = {SELECTED(0, 1)}}}},
    {.name = "expanded",
     .in = {{SHAPE(1, 5), .kind = CONF_BOOL, .views = {EXPANDED(3, 5)}}, {.ndim = 0}, {SHAPE(3, 5)}}},
    {.name = "empty", .in = {{SHAPE(0, 5), .kind = CONF_BOOL}, {SHAPE(0, 5)}, {SHAPE(1, 5)}}},
    {.name = "special values",
     .in = {{SHAPE(8, 8), .kind = CONF_BOOL}, {SHAPE(8, 8), .values = CONF_SPECIALS},
            {SHAPE(8, 8), .values = CONF_SPECIALS}}},
    {.name = "mixed dtypes",
     .in = {{SHAPE(3, 5), .kind = CONF_BOOL}, {SHAPE(3, 5)}, {SHAPE(5), .kind = CONF_PARTNER}}},
    {.name = "large",
     .in = {{SHAPE(128, 160), .kind = CONF_BOOL}, {SHAPE(160, 128), .views = {TRANSPOSED(0, 1)}},
            {SHAPE(160)}}},
    {.name = "1 element", .in = {{SHAPE(1), .kind = CONF_BOOL}, {SHAPE(1)}, {SHAPE(1)}}},
    {.name = "a last vector of 2", .in = {{SHAPE(2, 7), .kind = CONF_BOOL}, {SHAPE(2, 7)}, {SHAPE(2, 7)}}},
    {.name = "large, a last vector of 3",
     .in = {{SHAPE(20483), .kind = CONF_BOOL}, {SHAPE(20483)}, {SHAPE(20483)}}},
    {.name = "a condition off a vector boundary",
     .in = {{SHAPE(14), .kind = CONF_BOOL, .views = {NARROWED(0, 1, 13)}}, {SHAPE(13)}, {SHAPE(13)}}},
    {.name = "views on a vector boundary",
     .in = {{SHAPE(16), .kind = CONF_BOOL, .views = {NARROWED(0, 4, 9)}},
            {SHAPE(2, 9), .views = {SELECTED(0, 1)}}, {SHAPE(17), .views = {NARROWED(0, 8, 9)}}}},
    {0}};

/* One tensor (and the scalar forms). */
static const conf_case unary_cases[] = {
    {.name = "plain", .in = {{SHAPE(3, 5)}}},
    {.name = "0-d", .in = {{.ndim = 0}}},
    {.name = "transposed", .in = {{SHAPE(5, 3), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "sliced with a step and narrowed",
     .in = {{SHAPE(4, 11), .views = {SLICED(1, 1, 11, 3), NARROWED(0, 1, 2)}}}},
    {.name = "expanded", .in = {{SHAPE(1, 5), .views = {EXPANDED(4, 5)}}}},
    {.name = "selected and permuted",
     .in = {{SHAPE(2, 3, 4, 2), .views = {SELECTED(3, 1), PERMUTED(2, 0, 1)}}}},
    {.name = "empty", .in = {{SHAPE(0, 3)}}},
    {.name = "special values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}}},
    {.name = "large", .in = {{SHAPE(128, 160)}}},
    {.name = "large, transposed", .in = {{SHAPE(160, 128), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "1 element", .in = {{SHAPE(1)}}},
    {.name = "a last vector of 1", .in = {{SHAPE(13)}}},
    {.name = "a last vector of 2", .in = {{SHAPE(2, 7)}}},
    {.name = "large, a last vector of 3", .in = {{SHAPE(20483)}}},
    {.name = "a view off a vector boundary", .in = {{SHAPE(14), .views = {NARROWED(0, 1, 13)}}}},
    {.name = "a view 2 elements in", .in = {{SHAPE(15), .views = {NARROWED(0, 2, 13)}}}},
    {.name = "a view on a vector boundary", .in = {{SHAPE(2, 11), .views = {SELECTED(0, 1)}}}},
    {0}};

#define CONF_POW_BASE {0.05, 8, -20, 20, 0, 40}

#define BINARY(op)                                                                               \
    static ct_tensor *run_##op(ct_tensor *const *in, const conf_args *args)                      \
    {                                                                                            \
        (void)args;                                                                              \
        return ct_##op(in[0], in[1]);                                                            \
    }
#define UNARY(op)                                                                                \
    static ct_tensor *run_##op(ct_tensor *const *in, const conf_args *args)                      \
    {                                                                                            \
        (void)args;                                                                              \
        return ct_##op(in[0]);                                                                   \
    }
/* The scalars are fixed per op: chosen so that integer inputs meet them exactly (1.0) and so
 * that the results are not exact in binary (3.0 divides into repeating fractions). */
#define SCALAR(op, value)                                                                        \
    static ct_tensor *run_##op##_scalar(ct_tensor *const *in, const conf_args *args)             \
    {                                                                                            \
        (void)args;                                                                              \
        return ct_##op##_scalar(in[0], value);                                                   \
    }

BINARY(add) BINARY(sub) BINARY(mul) BINARY(div) BINARY(pow) BINARY(maximum) BINARY(minimum)
BINARY(eq) BINARY(ne) BINARY(lt) BINARY(le) BINARY(gt) BINARY(ge)
SCALAR(add, 1.5) SCALAR(sub, -2.25) SCALAR(mul, 0.5) SCALAR(div, 3.0) SCALAR(pow, 2.5)
SCALAR(eq, 1.0) SCALAR(ne, 1.0) SCALAR(lt, 1.0) SCALAR(le, 1.0) SCALAR(gt, 1.0) SCALAR(ge, 1.0)
UNARY(neg) UNARY(abs) UNARY(exp) UNARY(log) UNARY(sqrt) UNARY(relu) UNARY(sigmoid) UNARY(tanh)
UNARY(gelu) UNARY(gelu_tanh)
UNARY(silu) UNARY(log1p) UNARY(sin) UNARY(cos) UNARY(rsqrt) UNARY(reciprocal) UNARY(erf)
UNARY(sign) UNARY(floor) UNARY(round)

static ct_tensor *run_leaky_relu(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_leaky_relu(in[0], 0.125);
}

/* beta 2, threshold 3: both branches over the range */
static ct_tensor *run_softplus(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_softplus(in[0], 2.0, 3.0);
}

static ct_tensor *run_elu(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_elu(in[0], 1.5);
}

static ct_tensor *run_where(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_where(in[0], in[1], in[2]);
}

static ct_tensor *run_clamp(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_clamp(in[0], -3.5, 7.25);
}

static ct_tensor *run_clamp_min(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_clamp_min(in[0], -3.5);
}

static ct_tensor *run_clamp_max(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_clamp_max(in[0], 7.25);
}

#define ENTRY2(op, dtypes, r0, r1, ulps)                                                         \
    {"ct_" #op, 2, dtypes, {r0, r1}, binary_cases, ulps, run_##op, false, NULL, 0}
#define ENTRY1(op, dtypes, r0, ulps) {"ct_" #op, 1, dtypes, {r0}, unary_cases, ulps, run_##op, false, NULL, 0}

const conf_op conf_elementwise_ops[] = {
    ENTRY2(add, CONF_ALL | CONF_HALF, CONF_ANY, CONF_ANY, 0),
    ENTRY2(sub, CONF_NUMERIC | CONF_HALF, CONF_ANY, CONF_ANY, 0),
    ENTRY2(mul, CONF_ALL | CONF_HALF, CONF_ANY, CONF_ANY, 0),
    ENTRY2(div, CONF_ALL | CONF_HALF, CONF_ANY, CONF_ANY, 3),
    ENTRY2(pow, CONF_NUMERIC | CONF_HALF, CONF_POW_BASE, CONF_EXPONENT, 16),
    ENTRY2(maximum, CONF_ALL | CONF_HALF, CONF_ANY, CONF_ANY, 0),
    ENTRY2(minimum, CONF_ALL | CONF_HALF, CONF_ANY, CONF_ANY, 0),
    ENTRY2(eq, CONF_ALL | CONF_HALF, CONF_SMALL, CONF_SMALL, 0),
    ENTRY2(ne, CONF_ALL | CONF_HALF, CONF_SMALL, CONF_SMALL, 0),
    ENTRY2(lt, CONF_ALL | CONF_HALF, CONF_SMALL, CONF_SMALL, 0),
    ENTRY2(le, CONF_ALL | CONF_HALF, CONF_SMALL, CONF_SMALL, 0),
    ENTRY2(gt, CONF_ALL | CONF_HALF, CONF_SMALL, CONF_SMALL, 0),
    ENTRY2(ge, CONF_ALL | CONF_HALF, CONF_SMALL, CONF_SMALL, 0),
    {"ct_where", 3, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, where_cases, 0, run_where, false, NULL, 0},
    ENTRY1(add_scalar, CONF_ALL | CONF_HALF, CONF_ANY, 0),
    ENTRY1(sub_scalar, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(mul_scalar, CONF_ALL | CONF_HALF, CONF_ANY, 0),
    ENTRY1(div_scalar, CONF_ALL | CONF_HALF, CONF_ANY, 3),
    ENTRY1(pow_scalar, CONF_ALL | CONF_HALF, CONF_POSITIVE, 16),
    ENTRY1(eq_scalar, CONF_ALL | CONF_HALF, CONF_SMALL, 0),
    ENTRY1(ne_scalar, CONF_ALL | CONF_HALF, CONF_SMALL, 0),
    ENTRY1(lt_scalar, CONF_ALL | CONF_HALF, CONF_SMALL, 0),
    ENTRY1(le_scalar, CONF_ALL | CONF_HALF, CONF_SMALL, 0),
    ENTRY1(gt_scalar, CONF_ALL | CONF_HALF, CONF_SMALL, 0),
    ENTRY1(ge_scalar, CONF_ALL | CONF_HALF, CONF_SMALL, 0),
    ENTRY1(neg, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(abs, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(exp, CONF_ALL | CONF_HALF, CONF_ANY, 4),
    ENTRY1(log, CONF_ALL | CONF_HALF, CONF_POSITIVE, 4),
    ENTRY1(sqrt, CONF_ALL | CONF_HALF, CONF_POSITIVE, 3),
    ENTRY1(relu, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(sigmoid, CONF_ALL | CONF_HALF, CONF_ANY, 8),
    ENTRY1(tanh, CONF_ALL | CONF_HALF, CONF_ANY, 6),
    ENTRY1(gelu, CONF_ALL | CONF_HALF, CONF_ANY, 16),
    ENTRY1(gelu_tanh, CONF_ALL | CONF_HALF, CONF_ANY, 16),
    ENTRY1(clamp, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(clamp_min, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(clamp_max, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(leaky_relu, CONF_FLOAT | CONF_HALF, CONF_ANY, 0),
    ENTRY1(silu, CONF_FLOAT | CONF_HALF, CONF_ANY, 8),
    ENTRY1(softplus, CONF_FLOAT | CONF_HALF, CONF_ANY, 8),
    ENTRY1(elu, CONF_FLOAT | CONF_HALF, CONF_ANY, 4),
    ENTRY1(log1p, CONF_ALL | CONF_HALF, CONF_POSITIVE, 4),
    ENTRY1(sin, CONF_ALL | CONF_HALF, CONF_ANY, 4),
    ENTRY1(cos, CONF_ALL | CONF_HALF, CONF_ANY, 4),
    ENTRY1(rsqrt, CONF_ALL | CONF_HALF, CONF_POSITIVE, 4),
    ENTRY1(reciprocal, CONF_ALL | CONF_HALF, CONF_ANY, 3),
    ENTRY1(erf, CONF_ALL | CONF_HALF, CONF_ANY, 16),
    ENTRY1(sign, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(floor, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
    ENTRY1(round, CONF_NUMERIC | CONF_HALF, CONF_ANY, 0),
};
const int conf_elementwise_op_count = (int)(sizeof conf_elementwise_ops / sizeof conf_elementwise_ops[0]);
