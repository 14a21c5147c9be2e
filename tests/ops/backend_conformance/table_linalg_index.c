/* Conformance entries of matmul, joining (cat, stack) and indexing (index_select, gather,
 * one_hot). Index inputs hold valid indices (their ranges are given per case). matmul's float
 * results may sum in another order on a device (another gemm): 16 ulps of |A| @ |B| (PoCL with
 * CLBlast: 1.1 of those ulps, where the same differences are 23 ulps of a result that cancels);
 * |A| @ |B| is taken in float64, from the inputs converted, and rounded to their dtype. float16 and bfloat16 products
 * accumulate in float32 and round once: against float64, half an ulp of the 16-bit format for the
 * rounding and K float32 ulps (K <= 64: 2^-18, far below a 16-bit ulp) relative to |A| @ |B|; 4
 * ulps leave room for a device whose 16-bit gemm rounds a partial sum. Every other entry moves
 * values without arithmetic and must agree exactly. */
#include "conformance.h"

static const conf_case matmul_cases[] = {
    {.name = "vector . vector", .in = {{SHAPE(7)}, {SHAPE(7)}}},
    {.name = "matrix . vector", .in = {{SHAPE(4, 7)}, {SHAPE(7)}}},
    {.name = "vector . matrix", .in = {{SHAPE(7)}, {SHAPE(7, 5)}}},
    {.name = "matrix . matrix", .in = {{SHAPE(4, 7)}, {SHAPE(7, 5)}}},
    {.name = "batch . matrix", .in = {{SHAPE(3, 4, 7)}, {SHAPE(7, 5)}}},
    {.name = "broadcast batches", .in = {{SHAPE(2, 1, 4, 7)}, {SHAPE(3, 7, 5)}}},
    {.name = "transposed operands",
     .in = {{SHAPE(7, 4), .views = {TRANSPOSED(0, 1)}}, {SHAPE(5, 7), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "sliced with a step",
     .in = {{SHAPE(4, 14), .views = {SLICED(1, 0, 14, 2)}}, {SHAPE(2, 7, 5), .views = {SELECTED(0, 1)}}}},
    {.name = "expanded",
     .in = {{SHAPE(1, 4, 7), .views = {EXPANDED(3, 4, 7)}}, {SHAPE(7, 1), .views = {EXPANDED(7, 5)}}}},
    {.name = "empty inner dim", .in = {{SHAPE(4, 0)}, {SHAPE(0, 5)}}},
    {.name = "empty rows", .in = {{SHAPE(0, 7)}, {SHAPE(7, 5)}}},
    {.name = "larger", .in = {{SHAPE(48, 64)}, {SHAPE(64, 40)}}},
    {0}};

static const conf_case cat_cases[] = {
    {.name = "dim 0", .count = 2, .in = {{SHAPE(2, 3)}, {SHAPE(4, 3)}}, .args = {.dim = 0}},
    {.name = "three along dim 1", .count = 3, .in = {{SHAPE(2, 3)}, {SHAPE(2, 1)}, {SHAPE(2, 4)}},
     .args = {.dim = 1}},
    {.name = "views along dim -1", .count = 2,
     .in = {{SHAPE(3, 2), .views = {TRANSPOSED(0, 1)}}, {SHAPE(2, 9), .views = {SLICED(1, 1, 9, 2)}}},
     .args = {.dim = -1}},
    {.name = "3-D along dim 1", .count = 2, .in = {{SHAPE(2, 3, 4)}, {SHAPE(2, 2, 4)}}, .args = {.dim = 1}},
    {.name = "mixed dtypes", .count = 2, .in = {{SHAPE(2, 3)}, {SHAPE(1, 3), .kind = CONF_PARTNER}},
     .args = {.dim = 0}},
    {.name = "with an empty tensor", .count = 2, .in = {{SHAPE(0, 3)}, {SHAPE(2, 3)}}, .args = {.dim = 0}},
    {.name = "with a skipped 1-D empty tensor", .count = 2, .in = {{SHAPE(0)}, {SHAPE(2, 3)}},
     .args = {.dim = 1}},
    {.name = "large", .count = 2, .in = {{SHAPE(256, 160)}, {SHAPE(64, 160)}}, .args = {.dim = 0}},
    {0}};

static const conf_case stack_cases[] = {
    {.name = "three along dim 0", .count = 3, .in = {{SHAPE(2, 3)}, {SHAPE(2, 3)}, {SHAPE(2, 3)}},
     .args = {.dim = 0}},
    {.name = "views along dim -1", .count = 2,
     .in = {{SHAPE(3, 2), .views = {TRANSPOSED(0, 1)}}, {SHAPE(2, 7), .views = {SLICED(1, 1, 7, 2)}}},
     .args = {.dim = -1}},
    {.name = "0-d", .count = 2, .in = {{.ndim = 0}, {.ndim = 0}}, .args = {.dim = 0}},
    {.name = "mixed dtypes", .count = 2, .in = {{SHAPE(2, 3)}, {SHAPE(2, 3), .kind = CONF_PARTNER}},
     .args = {.dim = 1}},
    {.name = "empty", .count = 2, .in = {{SHAPE(0, 3)}, {SHAPE(0, 3)}}, .args = {.dim = 1}},
    {.name = "large", .count = 2, .in = {{SHAPE(128, 160)}, {SHAPE(128, 160)}}, .args = {.dim = 1}},
    {0}};

static const conf_case index_select_cases[] = {
    {.name = "dim 0, int64 index", .in = {{SHAPE(5, 4)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 5}},
     .args = {.dim = 0}},
    {.name = "dim 1, int32 index", .in = {{SHAPE(5, 4)}, {SHAPE(3), .kind = CONF_IDX32, .lo = 0, .hi = 4}},
     .args = {.dim = 1}},
    {.name = "transposed, dim -1",
     .in = {{SHAPE(4, 5), .views = {TRANSPOSED(0, 1)}}, {SHAPE(7), .kind = CONF_IDX64, .lo = 0, .hi = 4}},
     .args = {.dim = -1}},
    {.name = "strided index",
     .in = {{SHAPE(5, 4)}, {SHAPE(12), .kind = CONF_IDX64, .lo = 0, .hi = 5, .views = {SLICED(0, 0, 12, 2)}}},
     .args = {.dim = 0}},
    {.name = "3-D, dim 1", .in = {{SHAPE(3, 5, 4)}, {SHAPE(4), .kind = CONF_IDX32, .lo = 0, .hi = 5}},
     .args = {.dim = 1}},
    {.name = "0-d index", .in = {{SHAPE(5, 4)}, {.ndim = 0, .kind = CONF_IDX32, .lo = 0, .hi = 4}},
     .args = {.dim = 1}},
    {.name = "0-d a", .in = {{.ndim = 0}, {SHAPE(1), .kind = CONF_IDX64, .lo = 0, .hi = 1}},
     .args = {.dim = 0}},
    {.name = "empty index", .in = {{SHAPE(5, 4)}, {SHAPE(0), .kind = CONF_IDX64}}, .args = {.dim = 0}},
    {.name = "empty a", .in = {{SHAPE(0, 4)}, {SHAPE(3), .kind = CONF_IDX64, .lo = 0, .hi = 4}},
     .args = {.dim = 1}},
    {.name = "large", .in = {{SHAPE(200, 100)}, {SHAPE(300), .kind = CONF_IDX64, .lo = 0, .hi = 200}},
     .args = {.dim = 0}},
    {0}};

static const conf_case gather_cases[] = {
    {.name = "dim 1", .in = {{SHAPE(4, 6)}, {SHAPE(4, 3), .kind = CONF_IDX64, .lo = 0, .hi = 6}},
     .args = {.dim = 1}},
    {.name = "dim 0, int32 index", .in = {{SHAPE(4, 6)}, {SHAPE(2, 6), .kind = CONF_IDX32, .lo = 0, .hi = 4}},
     .args = {.dim = 0}},
    {.name = "transposed a",
     .in = {{SHAPE(6, 4), .views = {TRANSPOSED(0, 1)}}, {SHAPE(3, 5), .kind = CONF_IDX64, .lo = 0, .hi = 6}},
     .args = {.dim = 1}},
    {.name = "expanded index, dim -1",
     .in = {{SHAPE(4, 6)}, {SHAPE(1, 3), .kind = CONF_IDX64, .lo = 0, .hi = 6, .views = {EXPANDED(4, 3)}}},
     .args = {.dim = -1}},
    {.name = "3-D, dim 1", .in = {{SHAPE(3, 4, 5)}, {SHAPE(3, 2, 5), .kind = CONF_IDX32, .lo = 0, .hi = 4}},
     .args = {.dim = 1}},
    {.name = "0-d", .in = {{.ndim = 0}, {.ndim = 0, .kind = CONF_IDX64, .lo = 0, .hi = 1}},
     .args = {.dim = 0}},
    {.name = "empty index", .in = {{SHAPE(4, 6)}, {SHAPE(0, 3), .kind = CONF_IDX64}}, .args = {.dim = 1}},
    {.name = "large", .in = {{SHAPE(128, 200)}, {SHAPE(128, 160), .kind = CONF_IDX64, .lo = 0, .hi = 200}},
     .args = {.dim = 1}},
    {0}};

/* one_hot's input is the index itself (the entry's dtypes are int32 and int64). */
static const conf_case one_hot_cases[] = {
    {.name = "classes given", .in = {{SHAPE(6), .lo = 0, .hi = 5}}, .args = {.n = 5}},
    {.name = "classes inferred", .in = {{SHAPE(6), .lo = 0, .hi = 5}}, .args = {.n = -1}},
    {.name = "2-D", .in = {{SHAPE(3, 4), .lo = 0, .hi = 7}}, .args = {.n = 7}},
    {.name = "strided index", .in = {{SHAPE(12), .lo = 0, .hi = 3, .views = {SLICED(0, 0, 12, 3)}}},
     .args = {.n = 4}},
    {.name = "0-d", .in = {{.ndim = 0, .lo = 0, .hi = 4}}, .args = {.n = 4}},
    {.name = "empty", .in = {{SHAPE(0)}}, .args = {.n = 3}},
    {.name = "large", .in = {{SHAPE(2000), .lo = 0, .hi = 16}}, .args = {.n = 16}},
    {0}};

static ct_tensor *run_matmul(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_matmul(in[0], in[1]);
}

/* |A| @ |B|, taken in float64 and given in the inputs' dtype (abs of a 16-bit tensor is another
 * family's op). */
static ct_tensor *matmul_magnitude(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    ct_tensor *a = ct_abs(ct_to_dtype(in[0], CT_F64)), *b = ct_abs(ct_to_dtype(in[1], CT_F64));
    return ct_to_dtype(ct_matmul(a, b), ct_tensor_dtype(in[0]));
}

static ct_tensor *run_cat(ct_tensor *const *in, const conf_args *args)
{
    return ct_cat((const ct_tensor *const *)in, args->count, args->dim);
}

static ct_tensor *run_stack(ct_tensor *const *in, const conf_args *args)
{
    return ct_stack((const ct_tensor *const *)in, args->count, args->dim);
}

static ct_tensor *run_index_select(ct_tensor *const *in, const conf_args *args)
{
    return ct_index_select(in[0], args->dim, in[1]);
}

static ct_tensor *run_gather(ct_tensor *const *in, const conf_args *args)
{
    return ct_gather(in[0], args->dim, in[1]);
}

static ct_tensor *run_one_hot(ct_tensor *const *in, const conf_args *args)
{
    return ct_one_hot(in[0], args->n);
}

/* scatter, scatter_add: self, index, src (random indices: duplicates, which scatter resolves to
 * the last position and scatter_add sums in index order on every device) */
static const conf_case scatter_cases[] = {
    {.name = "dim 0", .in = {{SHAPE(4, 5)}, {SHAPE(3, 5), .kind = CONF_IDX64, .lo = 0, .hi = 4}, {SHAPE(3, 5)}},
     .args = {.dim = 0}},
    {.name = "dim 1, int32 index, src larger",
     .in = {{SHAPE(4, 6)}, {SHAPE(4, 3), .kind = CONF_IDX32, .lo = 0, .hi = 6}, {SHAPE(5, 4)}}, .args = {.dim = 1}},
    {.name = "transposed self, dim -1",
     .in = {{SHAPE(6, 4), .views = {TRANSPOSED(0, 1)}}, {SHAPE(2, 5), .kind = CONF_IDX64, .lo = 0, .hi = 6},
            {SHAPE(3, 5)}},
     .args = {.dim = -1}},
    {.name = "3-D, dim 1, expanded index",
     .in = {{SHAPE(3, 4, 5)}, {SHAPE(3, 6, 1), .kind = CONF_IDX64, .lo = 0, .hi = 4, .views = {EXPANDED(3, 6, 5)}},
            {SHAPE(3, 6, 5)}},
     .args = {.dim = 1}},
    {.name = "empty index", .in = {{SHAPE(4, 5)}, {SHAPE(0, 5), .kind = CONF_IDX64}, {SHAPE(2, 5)}}, .args = {.dim = 0}},
    {.name = "large", .in = {{SHAPE(64, 100)}, {SHAPE(64, 300), .kind = CONF_IDX64, .lo = 0, .hi = 100}, {SHAPE(64, 300)}},
     .args = {.dim = 1}},
    {0}};

/* index_add: self, a 1-D index, src */
static const conf_case index_add_cases[] = {
    {.name = "dim 0", .in = {{SHAPE(5, 4)}, {SHAPE(7), .kind = CONF_IDX64, .lo = 0, .hi = 5}, {SHAPE(7, 4)}},
     .args = {.dim = 0}},
    {.name = "dim 1, int32 index", .in = {{SHAPE(3, 6)}, {SHAPE(4), .kind = CONF_IDX32, .lo = 0, .hi = 6}, {SHAPE(3, 4)}},
     .args = {.dim = 1}},
    {.name = "transposed src, strided index",
     .in = {{SHAPE(5, 4)}, {SHAPE(6), .kind = CONF_IDX64, .lo = 0, .hi = 5, .views = {SLICED(0, 0, 6, 2)}},
            {SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}},
     .args = {.dim = 0}},
    {.name = "large", .in = {{SHAPE(200, 64)}, {SHAPE(500), .kind = CONF_IDX64, .lo = 0, .hi = 200}, {SHAPE(500, 64)}},
     .args = {.dim = 0}},
    {0}};

/* masked_select: a, a bool mask */
static const conf_case masked_select_cases[] = {
    {.name = "same shape", .in = {{SHAPE(3, 4)}, {SHAPE(3, 4), .kind = CONF_BOOL}}},
    {.name = "mask broadcast", .in = {{SHAPE(2, 3, 4)}, {SHAPE(1, 4), .kind = CONF_BOOL}}},
    {.name = "a broadcast, transposed", .in = {{SHAPE(4, 1), .views = {TRANSPOSED(0, 1)}}, {SHAPE(3, 4), .kind = CONF_BOOL}}},
    {.name = "empty", .in = {{SHAPE(0, 4)}, {SHAPE(0, 4), .kind = CONF_BOOL}}},
    {.name = "large", .in = {{SHAPE(128, 96)}, {SHAPE(128, 96), .kind = CONF_BOOL}}},
    {0}};

/* any / all along a dim (keepdim in flag), and over everything */
static const conf_case any_all_dim_cases[] = {
    {.name = "dim 1", .in = {{SHAPE(3, 5)}}, .args = {.dim = 1}},
    {.name = "transposed, dim 0, keepdim", .in = {{SHAPE(5, 3), .views = {TRANSPOSED(0, 1)}}}, .args = {.dim = 0, .flag = true}},
    {.name = "special values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}}, .args = {.dim = 1}},
    {.name = "empty", .in = {{SHAPE(0, 3)}}, .args = {.dim = 0}},
    {0}};
static const conf_case any_all_cases[] = {
    {.name = "sprinkled", .in = {{SHAPE(4, 6), .values = CONF_SPRINKLED}}},
    {.name = "special values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}}},
    {.name = "empty", .in = {{SHAPE(0, 3)}}},
    {0}};

/* isclose: two tensors, broadcast; rtol 1e-3 so that some random pairs are close */
static const conf_case isclose_cases[] = {
    {.name = "plain", .in = {{SHAPE(3, 5)}, {SHAPE(3, 5)}}},
    {.name = "broadcast", .in = {{SHAPE(4, 1, 3)}, {SHAPE(5, 3)}}},
    {.name = "special values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}, {SHAPE(8, 8), .values = CONF_SPECIALS}}},
    {.name = "itself, transposed", .count = 1, .in = {{SHAPE(4, 3), .views = {TRANSPOSED(0, 1)}}}},
    {0}};

static ct_tensor *run_scatter(ct_tensor *const *in, const conf_args *args)
{
    return ct_scatter(in[0], args->dim, in[1], in[2]);
}

static ct_tensor *run_scatter_add(ct_tensor *const *in, const conf_args *args)
{
    return ct_scatter_add(in[0], args->dim, in[1], in[2]);
}

static ct_tensor *run_index_add(ct_tensor *const *in, const conf_args *args)
{
    return ct_index_add(in[0], args->dim, in[1], in[2], 1.5);
}

static ct_tensor *run_masked_select(ct_tensor *const *in, const conf_args *args)
{
    (void)args;
    return ct_masked_select(in[0], in[1]);
}

static ct_tensor *run_any(ct_tensor *const *in, const conf_args *args) { (void)args; return ct_any(in[0]); }
static ct_tensor *run_all(ct_tensor *const *in, const conf_args *args) { (void)args; return ct_all(in[0]); }
static ct_tensor *run_any_dim(ct_tensor *const *in, const conf_args *args) { return ct_any_dim(in[0], args->dim, args->flag); }
static ct_tensor *run_all_dim(ct_tensor *const *in, const conf_args *args) { return ct_all_dim(in[0], args->dim, args->flag); }

static ct_tensor *run_isclose(ct_tensor *const *in, const conf_args *args)
{
    return ct_isclose(in[0], args->count > 1 ? in[1] : in[0], 1e-3, 1e-2, true);
}

const conf_op conf_linalg_index_ops[] = {
    {"ct_matmul", 2, CONF_NUMERIC | CONF_HALF, {CONF_SMALL, CONF_SMALL}, matmul_cases, 16, run_matmul, true,
     matmul_magnitude, 4},
    {"ct_cat", 2, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, cat_cases, 0, run_cat, false, NULL, 0},
    {"ct_stack", 2, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, stack_cases, 0, run_stack, false, NULL, 0},
    {"ct_index_select", 2, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY}, index_select_cases, 0, run_index_select, false, NULL, 0},
    {"ct_gather", 2, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY}, gather_cases, 0, run_gather, false, NULL, 0},
    {"ct_one_hot", 1, CONF_INDEX, {CONF_ANY}, one_hot_cases, 0, run_one_hot, false, NULL, 0},
    {"ct_scatter", 3, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, scatter_cases, 0, run_scatter, false, NULL, 0},
    /* the same sums in the same order on every device */
    {"ct_scatter_add", 3, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, scatter_cases, 0,
     run_scatter_add, false, NULL, 4},
    /* 16-bit: alpha * src is rounded, the sums once and a + sums again: 16 units of the float64 */
    {"ct_index_add", 3, CONF_FLOAT | CONF_HALF, {CONF_ANY, CONF_ANY, CONF_ANY}, index_add_cases, 0,
     run_index_add, false, NULL, 16},
    {"ct_masked_select", 2, CONF_ALL | CONF_HALF, {CONF_ANY, CONF_ANY}, masked_select_cases, 0,
     run_masked_select, false, NULL, 0},
    {"ct_any", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, any_all_cases, 0, run_any, false, NULL, 0},
    {"ct_all", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, any_all_cases, 0, run_all, false, NULL, 0},
    {"ct_any_dim", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, any_all_dim_cases, 0, run_any_dim, false, NULL, 0},
    {"ct_all_dim", 1, CONF_ALL | CONF_HALF, {CONF_SMALL}, any_all_dim_cases, 0, run_all_dim, false, NULL, 0},
    {"ct_isclose", 2, CONF_ALL | CONF_HALF, {CONF_SMALL, CONF_SMALL}, isclose_cases, 0, run_isclose, false, NULL, 0},
};
const int conf_linalg_index_op_count = (int)(sizeof conf_linalg_index_ops / sizeof conf_linalg_index_ops[0]);
