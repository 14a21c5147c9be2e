/* Conformance entries of the row ops, and of the scalar ops with an integral scalar (integer
 * kernels, wrapping): tril and triu (diagonals below, on and beyond the matrix), masked_fill
 * (broadcast masks), cumsum (integers in int64), sort and topk (values and indices, with ties
 * from small integer ranges and NaN among the values: a stable order is one answer, so every
 * device must give the same indices; topk by selection for small k and by sorting beyond) and
 * multinomial (the same seed on every device gives the same draws). Values move without
 * arithmetic and must agree exactly, except cumsum's float sums: the same order on every device,
 * 4 ulps of the running sum of |x| for a device's compiler. */
#include "conformance.h"

static const conf_case triangle_cases[] = {
    {.name = "main diagonal", .in = {{SHAPE(5, 4)}}, .args = {.n = 0}},
    {.name = "batch, below", .in = {{SHAPE(2, 3, 4)}}, .args = {.n = -1}},
    {.name = "transposed, above", .in = {{SHAPE(2, 3, 5), .views = {TRANSPOSED(1, 2)}}}, .args = {.n = 2}},
    {.name = "beyond the matrix", .in = {{SHAPE(6, 6)}}, .args = {.n = -7}},
    {.name = "far above", .in = {{SHAPE(3, 6)}}, .args = {.n = 9}},
    {.name = "sliced", .in = {{SHAPE(4, 12), .views = {SLICED(1, 1, 12, 2)}}}, .args = {.n = 1}},
    {.name = "empty", .in = {{SHAPE(0, 3)}}, .args = {.n = 0}},
    {.name = "large", .in = {{SHAPE(3, 64, 80)}}, .args = {.n = 5}},
    {0}};

static const conf_case masked_fill_cases[] = {
    {.name = "same shape", .in = {{SHAPE(3, 4)}, {SHAPE(3, 4), .kind = CONF_BOOL}}, .args = {.s = {-2}}},
    {.name = "mask broadcast over rows", .in = {{SHAPE(2, 3, 4)}, {SHAPE(1, 4), .kind = CONF_BOOL}},
     .args = {.s = {1}}},
    {.name = "transposed a", .in = {{SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}, {SHAPE(3, 1), .kind = CONF_BOOL}},
     .args = {.s = {0}}},
    {.name = "0-d mask", .in = {{SHAPE(5)}, {.ndim = 0, .kind = CONF_BOOL}}, .args = {.s = {3}}},
    {.name = "a broadcast against the mask", .in = {{SHAPE(4)}, {SHAPE(3, 4), .kind = CONF_BOOL}},
     .args = {.s = {2}}},
    {.name = "large", .in = {{SHAPE(128, 96)}, {SHAPE(128, 96), .kind = CONF_BOOL}}, .args = {.s = {-1}}},
    {0}};

static const conf_case cumsum_cases[] = {
    {.name = "last dim", .in = {{SHAPE(4, 7)}}, .args = {.dim = -1}},
    {.name = "first dim", .in = {{SHAPE(5, 3, 2)}}, .args = {.dim = 0}},
    {.name = "middle of a transposed view", .in = {{SHAPE(3, 4, 5), .views = {TRANSPOSED(0, 2)}}},
     .args = {.dim = 1}},
    {.name = "0-d", .in = {{.ndim = 0}}, .args = {.dim = 0}},
    {.name = "empty", .in = {{SHAPE(0, 3)}}, .args = {.dim = 1}},
    {.name = "edge values", .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}}, .args = {.dim = 1}},
    {.name = "long rows", .in = {{SHAPE(6, 700)}}, .args = {.dim = 1}},
    {0}};

/* small ranges (CONF_SMALL) make ties; sprinkled edge values bring NaN, infinities, signed zeros */
static const conf_case sort_cases[] = {
    {.name = "ascending, last dim", .in = {{SHAPE(4, 9)}}, .args = {.dim = -1}},
    {.name = "descending, dim 0", .in = {{SHAPE(9, 3)}}, .args = {.dim = 0, .flag = true}},
    {.name = "transposed, middle dim", .in = {{SHAPE(3, 5, 6), .views = {TRANSPOSED(0, 1)}}},
     .args = {.dim = 1}},
    {.name = "edge values ascending", .in = {{SHAPE(6, 10), .values = CONF_SPRINKLED}}, .args = {.dim = 1}},
    {.name = "edge values descending", .in = {{SHAPE(6, 10), .values = CONF_SPRINKLED}},
     .args = {.dim = 1, .flag = true}},
    {.name = "only edge values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}}, .args = {.dim = 0}},
    {.name = "0-d", .in = {{.ndim = 0}}, .args = {.dim = 0}},
    {.name = "empty", .in = {{SHAPE(3, 0)}}, .args = {.dim = 1}},
    {.name = "long rows", .in = {{SHAPE(3, 1000)}}, .args = {.dim = 1, .flag = true}},
    {0}};

static const conf_case topk_cases[] = {
    {.name = "largest 3 of rows of 9", .in = {{SHAPE(4, 9)}}, .args = {.n = 3, .dim = -1, .flag = true}},
    {.name = "smallest 2 along dim 0", .in = {{SHAPE(7, 3)}}, .args = {.n = 2, .dim = 0}},
    {.name = "all of a transposed view", .in = {{SHAPE(5, 4), .views = {TRANSPOSED(0, 1)}}},
     .args = {.n = 5, .dim = 1, .flag = true}},
    {.name = "edge values", .in = {{SHAPE(6, 10), .values = CONF_SPRINKLED}},
     .args = {.n = 4, .dim = 1, .flag = true}},
    {.name = "k 0", .in = {{SHAPE(3, 4)}}, .args = {.n = 0, .dim = 1, .flag = true}},
    {.name = "long rows", .in = {{SHAPE(2, 3000)}}, .args = {.n = 10, .dim = 1, .flag = true}},
    {.name = "k beyond the selection (sorted)", .in = {{SHAPE(3, 400), .values = CONF_SPRINKLED}},
     .args = {.n = 100, .dim = 1}},
    {.name = "smallest 5 of a middle dim", .in = {{SHAPE(4, 30, 3)}}, .args = {.n = 5, .dim = 1}},
    {0}};

static const conf_case multinomial_cases[] = {
    {.name = "with replacement, rows", .in = {{SHAPE(4, 6)}}, .args = {.n = 20, .flag = true}},
    {.name = "without replacement, rows", .in = {{SHAPE(4, 6)}}, .args = {.n = 6}},
    {.name = "one row, with replacement", .in = {{SHAPE(50)}}, .args = {.n = 64, .flag = true}},
    {.name = "transposed, without replacement", .in = {{SHAPE(9, 3), .views = {TRANSPOSED(0, 1)}}},
     .args = {.n = 4}},
    {0}};

/* An integral scalar keeps an integer tensor's dtype (torch.tensor([1]) + 1 is int64): the
 * integer kernels of the scalar ops, wrapping at the dtype's ends. */
static const conf_case integral_scalar_cases[] = {
    {.name = "contiguous", .in = {{SHAPE(5, 7)}}, .args = {.s = {3}}},
    {.name = "negative scalar", .in = {{SHAPE(4, 3)}}, .args = {.s = {-7}}},
    {.name = "transposed", .in = {{SHAPE(6, 5), .views = {TRANSPOSED(0, 1)}}}, .args = {.s = {2}}},
    {.name = "integer extremes", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}}, .args = {.s = {5}}},
    {.name = "large", .in = {{SHAPE(300, 70)}}, .args = {.s = {-2}}},
    {.name = "scalar wrapping in int32 and uint8", .in = {{SHAPE(3, 5)}}, .args = {.s = {4294967301.0}}},
    {0}};

static ct_tensor *run_add_integral(ct_tensor *const *in, const conf_args *args)
{
    return ct_add_scalar(in[0], args->s[0]);
}

static ct_tensor *run_sub_integral(ct_tensor *const *in, const conf_args *args)
{
    return ct_sub_scalar(in[0], args->s[0]);
}

static ct_tensor *run_mul_integral(ct_tensor *const *in, const conf_args *args)
{
    return ct_mul_scalar(in[0], args->s[0]);
}

static ct_tensor *run_tril(ct_tensor *const *in, const conf_args *args) { return ct_tril(in[0], args->n); }
static ct_tensor *run_triu(ct_tensor *const *in, const conf_args *args) { return ct_triu(in[0], args->n); }

static ct_tensor *run_masked_fill(ct_tensor *const *in, const conf_args *args)
{
    return ct_masked_fill(in[0], in[1], args->s[0]);
}

static ct_tensor *run_cumsum(ct_tensor *const *in, const conf_args *args) { return ct_cumsum(in[0], args->dim); }

/* cumsum of |x|, in x's dtype: the scale of a running sum that cancels */
static ct_tensor *cumsum_magnitude(ct_tensor *const *in, const conf_args *args)
{
    ct_tensor *a = ct_abs(ct_to_dtype(in[0], CT_F64));
    ct_tensor *sums = ct_cumsum(a, args->dim);
    ct_dtype dtype = ct_tensor_dtype(in[0]);
    return ct_to_dtype(sums, ct_dtype_is_floating(dtype) ? dtype : CT_I64);
}

static ct_tensor *run_sort(ct_tensor *const *in, const conf_args *args)
{
    return ct_sort(in[0], args->dim, args->flag, NULL);
}

static ct_tensor *run_sort_indices(ct_tensor *const *in, const conf_args *args)
{
    ct_tensor *indices = NULL;
    ct_release(ct_sort(in[0], args->dim, args->flag, &indices));
    return indices;
}

static ct_tensor *run_topk(ct_tensor *const *in, const conf_args *args)
{
    return ct_topk(in[0], args->n, args->dim, args->flag, true, NULL);
}

static ct_tensor *run_topk_indices(ct_tensor *const *in, const conf_args *args)
{
    ct_tensor *indices = NULL;
    ct_release(ct_topk(in[0], args->n, args->dim, args->flag, true, &indices));
    return indices;
}

static ct_tensor *run_multinomial(ct_tensor *const *in, const conf_args *args)
{
    ct_manual_seed(91);
    return ct_multinomial(in[0], args->n, args->flag);
}

const conf_op conf_rows_ops[] = {
    {"ct_add_scalar (integral scalar)", 1, CONF_ALL | CONF_HALF, {CONF_ANY}, integral_scalar_cases, 0,
     run_add_integral, false, NULL, 0},
    {"ct_sub_scalar (integral scalar)", 1, CONF_NUMERIC | CONF_HALF, {CONF_ANY}, integral_scalar_cases, 0,
     run_sub_integral, false, NULL, 0},
    {"ct_mul_scalar (integral scalar)", 1, CONF_ALL | CONF_HALF, {CONF_ANY}, integral_scalar_cases, 0,
     run_mul_integral, false, NULL, 0},
    {"ct_tril", 1, CONF_ALL | CONF_HALF, {CONF_ANY}, triangle_cases, 0, run_tril, false, NULL, 0},
    {"ct_triu", 1, CONF_ALL | CONF_HALF, {CONF_ANY}, triangle_cases, 0, run_triu, false, NULL, 0},
    {"ct_masked_fill", 2, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY}, masked_fill_cases, 0,
     run_masked_fill, false, NULL, 0},
    {"ct_cumsum", 1, CONF_ALL | CONF_HALF, {CONF_ANY}, cumsum_cases, 4, run_cumsum, false,
     cumsum_magnitude, 0},
    {"ct_sort", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, sort_cases, 0, run_sort, false, NULL, 0},
    {"ct_sort indices", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, sort_cases, 0, run_sort_indices, false,
     NULL, 0},
    {"ct_topk", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, topk_cases, 0, run_topk, false, NULL, 0},
    {"ct_topk indices", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, topk_cases, 0, run_topk_indices, false,
     NULL, 0},
    {"ct_multinomial", 1, CONF_FLOAT | CONF_HALF, {CONF_POSITIVE}, multinomial_cases, 0, run_multinomial,
     false, NULL, 0},
};
const int conf_rows_op_count = (int)(sizeof conf_rows_ops / sizeof conf_rows_ops[0]);
