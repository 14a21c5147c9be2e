/* The backend conformance harness (as ggml's test-backend-ops): a table of every op, and a
 * runner that computes each op on the CPU (the reference) and on every other device from the
 * same inputs, and compares the results.
 *
 * An entry names the public call, its tensor inputs, the dtypes it supports, the value ranges of
 * its inputs, its input cases (shapes, views, extra arguments), its tolerance and a function that
 * calls it. Inputs are generated on the CPU from a fixed seed, moved to each device with ct_to,
 * and viewed there the same way. */
#ifndef CT_TEST_CONFORMANCE_H
#define CT_TEST_CONFORMANCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctorch.h"

#define CONF_MAX_INPUTS 4
#define CONF_MAX_VIEWS 2
#define CONF_MAX_DEVICES 16

/* Dtype sets of an entry. */
#define CONF_DT(d) (1u << (d))
#define CONF_FLOAT (CONF_DT(CT_F32) | CONF_DT(CT_F64))
/* float16 and bfloat16: checked against the other devices and against float64 (see half_ulps) */
#define CONF_HALF (CONF_DT(CT_F16) | CONF_DT(CT_BF16))
#define CONF_INT (CONF_DT(CT_I32) | CONF_DT(CT_I64) | CONF_DT(CT_U8))
#define CONF_NUMERIC (CONF_FLOAT | CONF_INT)
#define CONF_ALL (CONF_NUMERIC | CONF_DT(CT_BOOL))
#define CONF_INDEX (CONF_DT(CT_I32) | CONF_DT(CT_I64))

/* How a view of an input is taken, on every device alike (v holds the call's arguments). */
typedef enum conf_view_kind {
    CONF_VIEW_NONE = 0,
    CONF_TRANSPOSE, /* ct_transpose(t, v[0], v[1]) */
    CONF_SLICE,     /* ct_slice(t, v[0], v[1], v[2], v[3]): dim, start, end, step */
    CONF_EXPAND,    /* ct_expand(t, v, n) */
    CONF_SELECT,    /* ct_select(t, v[0], v[1]) */
    CONF_NARROW,    /* ct_narrow(t, v[0], v[1], v[2]) */
    CONF_PERMUTE,   /* ct_permute(t, v, n) */
} conf_view_kind;

typedef struct conf_view {
    conf_view_kind kind;
    int n;
    int64_t v[CT_MAX_DIMS];
} conf_view;

/* The dtype of an input, relative to the dtype under test. */
typedef enum conf_kind {
    CONF_SAME = 0,  /* the entry's dtype under test */
    CONF_PARTNER,   /* another dtype, to test promotion: see conf_partner_dtype */
    CONF_BOOL,      /* a bool mask */
    CONF_IDX64,     /* an int64 index (give its values' range in lo/hi) */
    CONF_IDX32,     /* an int32 index */
} conf_kind;

/* The values of an input. */
typedef enum conf_values {
    CONF_RANDOM = 0,   /* drawn from the entry's range (or the input's lo, hi) */
    CONF_SPECIALS,     /* only edge values: NaN, infinities, signed zeros, 1e30; integer extremes.
                        * Over [8, 8], input 0 varies along rows and input 1 along columns, so
                        * that every pair of edge values meets */
    CONF_SPRINKLED,    /* random values with an edge value at every fifth element */
} conf_values;

typedef struct conf_input {
    int ndim;
    int64_t shape[CT_MAX_DIMS];       /* of the tensor generated on the CPU, before its views */
    conf_view views[CONF_MAX_VIEWS];  /* taken in order on every device */
    conf_kind kind;
    conf_values values;
    double lo, hi;                    /* when lo < hi: values in [lo, hi), replacing the entry's */
} conf_input;

/* Arguments besides the tensors. The harness fills count, dtype and device for each run. */
typedef struct conf_args {
    int dims[CT_MAX_DIMS], ndims;  /* reductions (ndims 0: every dim), permute, flatten */
    bool keepdim;
    int dim;                       /* argmax, softmax, cat, index ops, single-dim views */
    int64_t n;                     /* var's correction, one_hot's classes, linspace's steps */
    double s[5];                   /* scalars: arange's start, end, step; full's value;
                                    * batch_norm's momentum, eps; an optimizer's options */
    int ndim;
    int64_t shape[CT_MAX_DIMS];    /* creation, reshape, expand; slice/narrow bounds */
    ct_dtype target;               /* ct_to_dtype's target */
    /* Windows of conv2d and the pools, {height, width}; {0, 0} passes NULL (the default). */
    int64_t kernel[2], stride[2], padding[2], dilation[2];
    int64_t groups;                /* conv2d's groups; 0 means 1 */
    bool flag;                     /* avg_pool2d's count_include_pad, batch_norm's training,
                                    * SGD's nesterov */
    int count;                     /* tensor inputs of this case */
    ct_dtype dtype;                /* the dtype under test */
    ct_device device;              /* where the op runs */
} conf_args;

typedef struct conf_case {
    const char *name;                   /* NULL ends a list of cases */
    int count;                          /* tensor inputs; 0 means the entry's count */
    conf_input in[CONF_MAX_INPUTS];
    conf_args args;
} conf_case;

/* Value ranges [lo, hi) per dtype family (bool is always 0 or 1). */
typedef struct conf_range {
    double float_lo, float_hi;
    int64_t int_lo, int_hi;
    int64_t u8_lo, u8_hi;
} conf_range;

#define CONF_ANY {-4, 4, -20, 20, 0, 40}
#define CONF_POSITIVE {0.05, 8, 1, 20, 1, 40}
#define CONF_EXPONENT {-3, 3, 0, 6, 0, 4}
#define CONF_SMALL {-2, 2, -5, 5, 0, 8}

/* Writing cases: {SHAPE(5, 3), .views = {TRANSPOSED(0, 1)}} is a [5, 3] input seen as [3, 5]. */
#define CONF_NARGS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SHAPE(...) .ndim = CONF_NARGS(__VA_ARGS__), .shape = {__VA_ARGS__}
#define TRANSPOSED(d0, d1) {.kind = CONF_TRANSPOSE, .n = 2, .v = {d0, d1}}
#define SLICED(dim, start, end, step) {.kind = CONF_SLICE, .n = 4, .v = {dim, start, end, step}}
#define EXPANDED(...) {.kind = CONF_EXPAND, .n = CONF_NARGS(__VA_ARGS__), .v = {__VA_ARGS__}}
#define SELECTED(dim, index) {.kind = CONF_SELECT, .n = 2, .v = {dim, index}}
#define NARROWED(dim, start, length) {.kind = CONF_NARROW, .n = 3, .v = {dim, start, length}}
#define PERMUTED(...) {.kind = CONF_PERMUTE, .n = CONF_NARGS(__VA_ARGS__), .v = {__VA_ARGS__}}

/* A window argument of conf_args as the nn calls take it: NULL for {0, 0} (the default). */
static inline const int64_t *conf_window(const int64_t pair[2])
{
    return pair[0] || pair[1] ? pair : NULL;
}

typedef ct_tensor *(*conf_run)(ct_tensor *const *in, const conf_args *args);

typedef struct conf_op {
    const char *name;        /* the public call, as declared ("ct_add") */
    int inputs;              /* tensor inputs */
    unsigned dtypes;         /* CONF_DT(...) set of the dtypes under test */
    conf_range ranges[CONF_MAX_INPUTS];
    const conf_case *cases;
    /* Floating results agree when |x - y| <= ulps * eps(dtype) * max(1, |x|, |y|); 0 asks for
     * equal values. Integer and bool results are always compared exactly; NaN equals NaN. */
    double ulps;
    conf_run run;
    /* For sums and products, whose rounding depends on the order of the terms: the scale also
     * takes the op of the inputs' absolute values (sum |x_i|, |A| @ |B|), so that a result that
     * cancels to near zero is held to the size of its terms. */
    bool scale_by_abs_inputs;
    /* For results whose error no op of |inputs| bounds (a backward that sums products which
     * cancel): the magnitude of each element, computed on the CPU from the inputs. */
    conf_run magnitude;
    /* float16 and bfloat16 results are also compared with the op run in float64 on the CPU from
     * the same (16-bit) inputs, its result rounded to the 16-bit format (so that both overflow
     * to infinity alike): they agree within half_ulps units in the last place of the
     * 16-bit format (scaled as above); 0 means 2 (one rounding of the result, one of the float32
     * arithmetic inside). Reductions over many terms and ops that round intermediate results to
     * 16 bits state a looser bound; a negative value: no float64 reference (other draws). */
    double half_ulps;
} conf_op;

/* The tables, one per family of calls. */
extern const conf_op conf_elementwise_ops[];
extern const int conf_elementwise_op_count;
extern const conf_op conf_reduction_ops[];
extern const int conf_reduction_op_count;
extern const conf_op conf_linalg_index_ops[];
extern const int conf_linalg_index_op_count;
extern const conf_op conf_tensor_ops[];
extern const int conf_tensor_op_count;
extern const conf_op conf_nn_ops[];
extern const int conf_nn_op_count;
extern const conf_op conf_backward_ops[];
extern const int conf_backward_op_count;
extern const conf_op conf_optim_ops[];
extern const int conf_optim_op_count;
extern const conf_op conf_rows_ops[];
extern const int conf_rows_op_count;
/* Set by a program linked with the library's internals (test_backend_conformance.c) to
 * ct_optimizer_set_per_parameter, so that the optimizer cases marked per parameter reach the
 * per-parameter kernels; NULL elsewhere (ops_conformance_digest, which sees only the public API):
 * those cases then run fused, which gives the same bits. */
extern void (*conf_optimizer_set_per_parameter)(ct_optimizer *optimizer, bool per_parameter);

/* The entry of a public call, or NULL. */
/* ct_scaled_dot_product_attention without a mask or dropout, on the fused path however
 * CTORCH_SDPA is set (table_nn.c): auto composes the 16-bit dtypes on the CPU. */
ct_tensor *conf_attention_fused(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                bool is_causal);
const conf_op *conf_find_op(const char *name);
int conf_op_total(void);
const conf_op *conf_op_at(int i);

/* The dtype that a CONF_PARTNER input takes when the entry's dtype is d: one that promotes with
 * d without refusal by any op of the table (float32 -> int32, bool -> uint8, ...). */
ct_dtype conf_partner_dtype(ct_dtype d);

typedef struct conf_totals {
    long checks, passed;
} conf_totals;

/* Runs one entry over its dtypes and cases on the CPU and on each device; prints its line and
 * every mismatch unless quiet. */
conf_totals conf_run_op(const conf_op *op, const ct_device *devices, int device_count, bool quiet);
/* Releases the inputs that conf_run_op keeps for the entries that share cases (conf_run_all
 * does it at its end). */
void conf_release_inputs(void);
/* Runs every entry over its dtypes and cases on the CPU and on each device, prints one line per
 * entry (checks and passes) and every mismatch; returns the totals. */
conf_totals conf_run_all(const ct_device *devices, int device_count);
/* Runs the entries named in names (every entry when name_count is 0) over their dtypes and cases
 * on the CPU only, and writes one line per case to out: the result's dtype, shape and a digest
 * of its bits, or its error; with values, a line of every element after it. Two builds that
 * compute the same bits write the same text (scripts/check-isa-independence). Returns the
 * number of cases. */
long conf_digest(FILE *out, const char *const *names, int name_count, bool values);

#endif
