/* Conformance entries of the reductions and softmax. Cases reach every kernel form: one pass and
 * two passes (more than 4096 reduced elements, or 1024 along a column), row runs and column
 * tiles, strided runs, and edge values sprinkled among random ones (NaN must win in max, argmax
 * must find it, inf - inf must give NaN in var). Tolerances:
 *  - max, min and the arg forms select values: exact;
 *  - sum and mean may add in another order on a device (vector lanes, chunks): 16 ulps of the
 *    sum of the terms' absolute values (PoCL: 0.7 of those ulps, where the same differences
 *    are 96 ulps of a float32 row of 320 that cancels to near zero);
 *  - var and std: 32 ulps (PoCL: 7); softmax and log_softmax, an exp, a sum and a log: 16 (PoCL: 1).
 * float16 and bfloat16 (the same tolerances in units of their own last place between devices,
 * and against float64): sums and means add in float32 and round once, so 2 units of the sum of
 * the terms' absolute values cover the float32 error over 24576 terms too; var and std (in
 * double), softmax and log_softmax (in float, softmax's exp rounded to 16 bits before its
 * scaling) within the default 2; the extremes and the arg forms exact. */
#include "conformance.h"

/* Over dims (ndims 0: every dim), with keepdim. */
#define REDUCE_CASES                                                                             \
    {.name = "every dim", .in = {{SHAPE(4, 5, 6)}}},                                             \
    {.name = "dim 1", .in = {{SHAPE(4, 5, 6)}}, .args = {.dims = {1}, .ndims = 1}},              \
    {.name = "dims 0 and -1, keepdim", .in = {{SHAPE(4, 5, 6)}},                                 \
     .args = {.dims = {0, -1}, .ndims = 2, .keepdim = true}},                                    \
    {.name = "transposed, last dim", .in = {{SHAPE(6, 5), .views = {TRANSPOSED(0, 1)}}},         \
     .args = {.dims = {-1}, .ndims = 1}},                                                        \
    {.name = "columns", .in = {{SHAPE(40, 33)}}, .args = {.dims = {0}, .ndims = 1}},             \
    {.name = "sliced with a step", .in = {{SHAPE(7, 20), .views = {SLICED(1, 1, 20, 3)}}},       \
     .args = {.dims = {1}, .ndims = 1}},                                                         \
    {.name = "expanded, keepdim", .in = {{SHAPE(1, 6), .views = {EXPANDED(5, 6)}}},              \
     .args = {.dims = {0}, .ndims = 1, .keepdim = true}},                                        \
    {.name = "selected and permuted",                                                            \
     .in = {{SHAPE(2, 3, 4, 5), .views = {SELECTED(0, 1), PERMUTED(2, 0, 1)}}},                  \
     .args = {.dims = {0, 2}, .ndims = 2}},                                                      \
    {.name = "empty rows", .in = {{SHAPE(0, 5)}}, .args = {.dims = {1}, .ndims = 1}},            \
    {.name = "0-d", .in = {{.ndim = 0}}},                                                        \
    {.name = "0-d, dim 0, keepdim", .in = {{.ndim = 0}},                                         \
     .args = {.dims = {0}, .ndims = 1, .keepdim = true}},                                        \
    {.name = "edge values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}},                      \
     .args = {.dims = {1}, .ndims = 1}},                                                         \
    {.name = "sprinkled edge values", .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}},           \
     .args = {.dims = {1}, .ndims = 1}},                                                         \
    {.name = "sprinkled edge values, columns", .in = {{SHAPE(8, 40), .values = CONF_SPRINKLED}}, \
     .args = {.dims = {0}, .ndims = 1}},                                                         \
    {.name = "large rows", .in = {{SHAPE(64, 320)}}, .args = {.dims = {1}, .ndims = 1}},         \
    {.name = "large, every dim, two passes", .in = {{SHAPE(24576)}}},                            \
    {.name = "large, two passes, sprinkled", .in = {{SHAPE(3, 9000), .values = CONF_SPRINKLED}}, \
     .args = {.dims = {1}, .ndims = 1}},                                                         \
    {.name = "large columns, two passes", .in = {{SHAPE(2048, 12)}}, .args = {.dims = {0}, .ndims = 1}}, \
    {.name = "large, transposed", .in = {{SHAPE(160, 128), .views = {TRANSPOSED(0, 1)}}},        \
     .args = {.dims = {0}, .ndims = 1}},                                                         \
    SPLIT_BOUNDARY_CASES

/* Where the work split changes (ops/work_split.c): a row of exactly one group of 256 and one
 * past it, one element past a chunk (4096 on the CPU) and past a multiple of a group's reach,
 * column tiles one past 32 and 16 outputs wide with rows spread over a group, single-element
 * dims. */
#define SPLIT_BOUNDARY_CASES                                                                     \
    {.name = "a group's row", .in = {{SHAPE(2, 256)}}, .args = {.dims = {1}, .ndims = 1}},       \
    {.name = "one past a group's row", .in = {{SHAPE(3, 257)}}, .args = {.dims = {1}, .ndims = 1}}, \
    {.name = "one past a chunk", .in = {{SHAPE(4097)}}},                                         \
    {.name = "one past a group's reach", .in = {{SHAPE(1025)}}},                                 \
    {.name = "columns, one past two tiles", .in = {{SHAPE(300, 65)}}, .args = {.dims = {0}, .ndims = 1}}, \
    {.name = "columns, one past a CPU tile", .in = {{SHAPE(1030, 17)}}, .args = {.dims = {0}, .ndims = 1}}, \
    {.name = "single element", .in = {{SHAPE(1, 1)}}},                                           \
    {.name = "single-element reduced dim", .in = {{SHAPE(5, 1)}}, .args = {.dims = {1}, .ndims = 1}}, \
    {.name = "single-element kept dim, columns", .in = {{SHAPE(300, 1)}}, .args = {.dims = {0}, .ndims = 1}}

/* Reducing an empty dim: a sum is 0, a mean and a variance NaN (max and min refuse). */
#define EMPTY_REDUCED_CASES                                                                      \
    {.name = "empty reduced dim", .in = {{SHAPE(0, 5)}}, .args = {.dims = {0}, .ndims = 1}},     \
    {.name = "empty, every dim", .in = {{SHAPE(3, 0)}}}

static const conf_case sum_cases[] = {REDUCE_CASES, EMPTY_REDUCED_CASES, {0}};
static const conf_case extreme_cases[] = {REDUCE_CASES, {0}};
/* var and std: the cases above with correction 0, and corrections 1 and past the count. */
static const conf_case var_cases[] = {
    REDUCE_CASES, EMPTY_REDUCED_CASES,
    {.name = "dim 1, correction 1", .in = {{SHAPE(4, 5, 6)}}, .args = {.dims = {1}, .ndims = 1, .n = 1}},
    {.name = "large, correction 1", .in = {{SHAPE(24576)}}, .args = {.n = 1}},
    {.name = "correction past the count", .in = {{SHAPE(3, 2)}}, .args = {.dims = {1}, .ndims = 1, .n = 3}},
    {0}};

/* argmax and argmin along one dim. */
static const conf_case arg_cases[] = {
    {.name = "dim 1", .in = {{SHAPE(4, 5, 6)}}, .args = {.dim = 1}},
    {.name = "last dim, keepdim", .in = {{SHAPE(4, 5, 6)}}, .args = {.dim = -1, .keepdim = true}},
    {.name = "columns", .in = {{SHAPE(40, 33)}}, .args = {.dim = 0}},
    {.name = "transposed", .in = {{SHAPE(6, 5), .views = {TRANSPOSED(0, 1)}}}, .args = {.dim = -1}},
    {.name = "sliced with a step", .in = {{SHAPE(7, 20), .views = {SLICED(1, 1, 20, 3)}}},
     .args = {.dim = 1}},
    {.name = "expanded (all tied)", .in = {{SHAPE(1, 6), .views = {EXPANDED(5, 6)}}}, .args = {.dim = 0}},
    {.name = "0-d", .in = {{.ndim = 0}}, .args = {.dim = 0}},
    {.name = "empty rows", .in = {{SHAPE(0, 5)}}, .args = {.dim = 1}},
    {.name = "edge values", .in = {{SHAPE(8, 8), .values = CONF_SPECIALS}}, .args = {.dim = 0}},
    {.name = "sprinkled edge values", .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}}, .args = {.dim = 1}},
    {.name = "sprinkled edge values, columns", .in = {{SHAPE(8, 40), .values = CONF_SPRINKLED}},
     .args = {.dim = 0}},
    {.name = "large rows", .in = {{SHAPE(64, 320)}}, .args = {.dim = 1}},
    {.name = "large columns", .in = {{SHAPE(2048, 12)}}, .args = {.dim = 0}},
    {.name = "one past a group's row", .in = {{SHAPE(3, 257)}}, .args = {.dim = 1}},
    {.name = "one past a chunk", .in = {{SHAPE(2, 4097)}}, .args = {.dim = 1}},
    {.name = "columns, one past two tiles", .in = {{SHAPE(300, 65)}}, .args = {.dim = 0}},
    {.name = "single-element dim", .in = {{SHAPE(5, 1)}}, .args = {.dim = 1}},
    {0}};

static const conf_case arg_all_cases[] = {
    {.name = "[4, 5, 6]", .in = {{SHAPE(4, 5, 6)}}},
    {.name = "transposed", .in = {{SHAPE(6, 5), .views = {TRANSPOSED(0, 1)}}}},
    {.name = "sliced with a step", .in = {{SHAPE(7, 20), .views = {SLICED(1, 1, 20, 3)}}}},
    {.name = "expanded (all tied)", .in = {{SHAPE(1, 6), .views = {EXPANDED(5, 6)}}}},
    {.name = "0-d", .in = {{.ndim = 0}}},
    {.name = "sprinkled edge values", .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}}},
    {.name = "large", .in = {{SHAPE(24576)}}},
    {.name = "one past a chunk", .in = {{SHAPE(4097)}}},
    {.name = "single element", .in = {{SHAPE(1, 1)}}},
    {0}};

static const conf_case softmax_cases[] = {
    {.name = "last dim", .in = {{SHAPE(4, 5, 6)}}, .args = {.dim = -1}},
    {.name = "dim 1", .in = {{SHAPE(4, 5, 6)}}, .args = {.dim = 1}},
    {.name = "columns", .in = {{SHAPE(40, 33)}}, .args = {.dim = 0}},
    {.name = "transposed", .in = {{SHAPE(6, 5), .views = {TRANSPOSED(0, 1)}}}, .args = {.dim = -1}},
    {.name = "sliced with a step", .in = {{SHAPE(7, 20), .views = {SLICED(1, 1, 20, 3)}}},
     .args = {.dim = 1}},
    {.name = "expanded", .in = {{SHAPE(1, 6), .views = {EXPANDED(5, 6)}}}, .args = {.dim = 0}},
    {.name = "0-d", .in = {{.ndim = 0}}, .args = {.dim = 0}},
    {.name = "empty rows", .in = {{SHAPE(0, 5)}}, .args = {.dim = 1}},
    {.name = "empty dim", .in = {{SHAPE(3, 0)}}, .args = {.dim = 1}},
    {.name = "sprinkled edge values", .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}}, .args = {.dim = 1}},
    {.name = "sprinkled edge values, columns", .in = {{SHAPE(8, 40), .values = CONF_SPRINKLED}},
     .args = {.dim = 0}},
    {.name = "large rows", .in = {{SHAPE(64, 320)}}, .args = {.dim = 1}},
    {.name = "large columns", .in = {{SHAPE(320, 64)}}, .args = {.dim = 0}},
    {.name = "a group's row", .in = {{SHAPE(2, 256)}}, .args = {.dim = 1}},
    {.name = "one past a group's row", .in = {{SHAPE(3, 257)}}, .args = {.dim = 1}},
    {.name = "long rows", .in = {{SHAPE(2, 5000)}}, .args = {.dim = 1}},
    {.name = "single-element rows", .in = {{SHAPE(5, 1)}}, .args = {.dim = 1}},
    {0}};

#define REDUCE_RUN(name)                                                                         \
    static ct_tensor *run_##name(ct_tensor *const *in, const conf_args *a)                       \
    {                                                                                            \
        return ct_##name(in[0], a->dims, a->ndims, a->keepdim);                                  \
    }
#define VAR_RUN(name)                                                                            \
    static ct_tensor *run_##name(ct_tensor *const *in, const conf_args *a)                       \
    {                                                                                            \
        return ct_##name(in[0], a->dims, a->ndims, a->n, a->keepdim);                            \
    }
#define ARG_RUN(name)                                                                            \
    static ct_tensor *run_##name(ct_tensor *const *in, const conf_args *a)                       \
    {                                                                                            \
        return ct_##name(in[0], a->dim, a->keepdim);                                             \
    }
#define ONE_RUN(name, call)                                                                      \
    static ct_tensor *run_##name(ct_tensor *const *in, const conf_args *a)                       \
    {                                                                                            \
        (void)a;                                                                                 \
        return call;                                                                             \
    }

REDUCE_RUN(sum) REDUCE_RUN(mean) REDUCE_RUN(max) REDUCE_RUN(min)
VAR_RUN(var) VAR_RUN(std)
ARG_RUN(argmax) ARG_RUN(argmin)
ONE_RUN(argmax_all, ct_argmax_all(in[0]))
ONE_RUN(argmin_all, ct_argmin_all(in[0]))
ONE_RUN(softmax, ct_softmax(in[0], a->dim))
ONE_RUN(log_softmax, ct_log_softmax(in[0], a->dim))

#define ENTRY(name, dtypes, range, cases, ulps)                                                  \
    {"ct_" #name, 1, dtypes, {range}, cases, ulps, run_##name, false, NULL, 0}
#define SUM_ENTRY(name, dtypes, cases) {"ct_" #name, 1, dtypes, {CONF_ANY}, cases, 16, run_##name, true, NULL, 0}

const conf_op conf_reduction_ops[] = {
    SUM_ENTRY(sum, CONF_ALL | CONF_HALF, sum_cases),
    SUM_ENTRY(mean, CONF_FLOAT | CONF_HALF, sum_cases),
    ENTRY(max, CONF_ALL | CONF_HALF, CONF_ANY, extreme_cases, 0),
    ENTRY(min, CONF_ALL | CONF_HALF, CONF_ANY, extreme_cases, 0),
    ENTRY(var, CONF_FLOAT | CONF_HALF, CONF_ANY, var_cases, 32),
    ENTRY(std, CONF_FLOAT | CONF_HALF, CONF_ANY, var_cases, 32),
    ENTRY(argmax, CONF_NUMERIC | CONF_HALF, CONF_SMALL, arg_cases, 0),
    ENTRY(argmin, CONF_NUMERIC | CONF_HALF, CONF_SMALL, arg_cases, 0),
    ENTRY(argmax_all, CONF_NUMERIC | CONF_HALF, CONF_SMALL, arg_all_cases, 0),
    ENTRY(argmin_all, CONF_NUMERIC | CONF_HALF, CONF_SMALL, arg_all_cases, 0),
    ENTRY(softmax, CONF_FLOAT | CONF_HALF, CONF_ANY, softmax_cases, 16),
    ENTRY(log_softmax, CONF_FLOAT | CONF_HALF, CONF_ANY, softmax_cases, 16),
};
const int conf_reduction_op_count = (int)(sizeof conf_reduction_ops / sizeof conf_reduction_ops[0]);
