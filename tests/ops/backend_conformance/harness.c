/* The runner of the conformance table: inputs from a fixed seed on the CPU, the op on the CPU as
 * the reference, the same inputs and views on every device, results compared back on the CPU. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define CONF_SEED 20260611u
/* Mismatching elements printed per result; the rest are counted. */
#define CONF_REPORT_ELEMENTS 4

#define CONF_TABLES 8

static const conf_op *const *all_tables(int *counts)
{
    static const conf_op *const tables[CONF_TABLES] = {
        conf_elementwise_ops, conf_reduction_ops, conf_linalg_index_ops, conf_tensor_ops,
        conf_nn_ops,          conf_backward_ops,  conf_optim_ops,     conf_rows_ops};
    const int sizes[CONF_TABLES] = {conf_elementwise_op_count, conf_reduction_op_count,
                                    conf_linalg_index_op_count, conf_tensor_op_count,
                                    conf_nn_op_count, conf_backward_op_count, conf_optim_op_count,
                                    conf_rows_op_count};
    memcpy(counts, sizes, sizeof sizes);
    return tables;
}

int conf_op_total(void)
{
    int counts[CONF_TABLES], total = 0;
    all_tables(counts);
    for (int t = 0; t < CONF_TABLES; t++) total += counts[t];
    return total;
}

const conf_op *conf_op_at(int i)
{
    int counts[CONF_TABLES];
    const conf_op *const *tables = all_tables(counts);
    for (int t = 0; t < CONF_TABLES; t++) {
        if (i < counts[t]) return &tables[t][i];
        i -= counts[t];
    }
    return NULL;
}

const conf_op *conf_find_op(const char *name)
{
    for (int i = 0; i < conf_op_total(); i++)
        if (strcmp(conf_op_at(i)->name, name) == 0) return conf_op_at(i);
    return NULL;
}

ct_dtype conf_partner_dtype(ct_dtype d)
{
    static const ct_dtype partner[CT_DTYPE_COUNT] = {
        [CT_F32] = CT_I32, [CT_F64] = CT_F32, [CT_I32] = CT_U8,
        [CT_I64] = CT_I32, [CT_U8] = CT_I32, [CT_BOOL] = CT_U8,
        /* float16 meets an integer; bfloat16 meets float16 (both give float32) */
        [CT_F16] = CT_I32, [CT_BF16] = CT_F16};
    return partner[d];
}

/* ---- inputs ---- */

static ct_dtype input_dtype(const conf_input *in, ct_dtype d)
{
    switch (in->kind) {
    case CONF_PARTNER: return conf_partner_dtype(d);
    case CONF_BOOL: return CT_BOOL;
    case CONF_IDX64: return CT_I64;
    case CONF_IDX32: return CT_I32;
    default: return d;
    }
}

/* Values that take ops to their edges: NaN, infinities, signed zeros, overflow; for integers
 * the extremes, where arithmetic wraps. */
static double special_float(int k)
{
    static const double values[8] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -2.5, 1e30};
    return values[k];
}

static int64_t special_int(ct_dtype dtype, int k)
{
    static const int64_t i32[8] = {INT32_MIN, INT32_MAX, -1, 0, 1, 2, -7, 100};
    static const int64_t i64[8] = {INT64_MIN, INT64_MAX, -1, 0, 1, 2, -7, 100};
    static const int64_t u8[8] = {0, 255, 1, 128, 127, 2, 7, 100};
    static const int64_t b8[8] = {0, 1, 1, 0, 0, 1, 0, 1};
    switch (dtype) {
    case CT_I32: return i32[k];
    case CT_I64: return i64[k];
    case CT_U8: return u8[k];
    default: return b8[k];
    }
}

/* Which edge value element i of input `which` holds (see CONF_SPECIALS), or -1 for a random
 * value (CONF_SPRINKLED puts one at every fifth element, cycling through them). */
static int special_index(conf_values values, int64_t i, int which)
{
    if (values == CONF_SPRINKLED) return i % 5 == 2 ? (int)((i / 5) % 8) : -1;
    if (values != CONF_SPECIALS) return -1;
    if (which == 0) return (int)((i / 8) % 8);
    if (which == 1) return (int)(i % 8);
    return (int)((i / 8 + i) % 8);
}

static void store(void *buffer, ct_dtype dtype, int64_t i, double f, int64_t v)
{
    switch (dtype) {
    case CT_F32: ((float *)buffer)[i] = (float)f; break;
    case CT_F64: ((double *)buffer)[i] = f; break;
    case CT_F16: ((uint16_t *)buffer)[i] = ct_float_to_f16((float)f); break;
    case CT_BF16: ((uint16_t *)buffer)[i] = ct_float_to_bf16((float)f); break;
    case CT_I32: ((int32_t *)buffer)[i] = (int32_t)v; break;
    case CT_I64: ((int64_t *)buffer)[i] = v; break;
    case CT_U8: ((uint8_t *)buffer)[i] = (uint8_t)v; break;
    default: ((uint8_t *)buffer)[i] = v != 0; break;
    }
}

/* n values drawn with ct_rand (floats) or ct_randint (integers) on the CPU, into host. */
static bool draw(int64_t n, bool floating, double lo, double hi, void *host)
{
    ct_tensor *t = floating ? ct_rand(&n, 1, CT_F64, CT_DEVICE_CPU)
                            : ct_randint((int64_t)lo, (int64_t)hi, &n, 1, CT_I64, CT_DEVICE_CPU);
    if (!t || ct_tensor_to_array(t, host, (size_t)n * 8) != CT_OK) return false;
    if (floating)
        for (int64_t i = 0; i < n; i++) ((double *)host)[i] = lo + (hi - lo) * ((double *)host)[i];
    return true;
}

/* The value range [lo, hi) of an input of dtype. */
static void value_range(const conf_input *in, const conf_range *range, ct_dtype dtype, double *lo,
                        double *hi)
{
    if (in->lo < in->hi) *lo = in->lo, *hi = in->hi;
    else if (ct_dtype_is_floating(dtype)) *lo = range->float_lo, *hi = range->float_hi;
    else if (dtype == CT_U8) *lo = (double)range->u8_lo, *hi = (double)range->u8_hi;
    else if (dtype == CT_BOOL) *lo = 0, *hi = 2;
    else *lo = (double)range->int_lo, *hi = (double)range->int_hi;
}

/* A new CPU tensor: input `which` before its views, values in [lo, hi). */
static ct_tensor *generate(const conf_input *in, ct_dtype dtype, double lo, double hi, int which)
{
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) n *= in->shape[d];
    bool floating = ct_dtype_is_floating(dtype);
    size_t count = (size_t)(n > 0 ? n : 1);
    double *values = malloc(count * sizeof *values);
    int64_t *ints = (int64_t *)values; /* one draw fills one of the two views of the buffer */
    void *buffer = malloc(count * ct_dtype_size(dtype));
    ct_tensor *t = NULL;
    ct_scope_push(); /* releases the draws */
    if (values && buffer) {
        ct_manual_seed(CONF_SEED + (uint64_t)which);
        bool ok = in->values == CONF_SPECIALS || draw(n, floating, lo, hi, values);
        for (int64_t i = 0; ok && i < n; i++) {
            int k = special_index(in->values, i, which);
            if (k >= 0 && floating) store(buffer, dtype, i, special_float(k), 0);
            else if (k >= 0) store(buffer, dtype, i, 0, special_int(dtype, k));
            else if (floating) store(buffer, dtype, i, values[i], 0);
            else store(buffer, dtype, i, 0, ints[i]);
        }
        if (ok) t = ct_scope_keep(ct_tensor_from_data(buffer, dtype, in->shape, in->ndim, CT_DEVICE_CPU));
    }
    ct_scope_pop();
    free(values);
    free(buffer);
    return t;
}

/* Inputs are generated once and kept: many entries share their cases (every binary op takes
 * binary_cases), and drawing the numbers dominates the run time under the sanitizers. No entry
 * writes into its inputs. */
typedef struct cached_input {
    const conf_input *in;
    ct_dtype dtype;
    double lo, hi;
    int which;
    ct_tensor *t;
} cached_input;

static cached_input *cache;
static size_t cache_count, cache_capacity;

/* The CPU tensor of input `which` before its views (owned by the cache). */
static ct_tensor *input_tensor(const conf_input *in, const conf_range *range, ct_dtype dtype, int which)
{
    double lo, hi;
    value_range(in, range, dtype, &lo, &hi);
    for (size_t k = 0; k < cache_count; k++) {
        const cached_input *c = &cache[k];
        if (c->in == in && c->dtype == dtype && c->lo == lo && c->hi == hi && c->which == which)
            return c->t;
    }
    if (cache_count == cache_capacity) {
        size_t capacity = cache_capacity ? 2 * cache_capacity : 256;
        cached_input *grown = realloc(cache, capacity * sizeof *grown);
        if (!grown) return NULL;
        cache = grown;
        cache_capacity = capacity;
    }
    ct_tensor *t = generate(in, dtype, lo, hi, which);
    if (t) cache[cache_count++] = (cached_input){in, dtype, lo, hi, which, t};
    return t;
}

bool conf_case_inputs(const conf_op *op, const conf_case *c, ct_dtype dtype, conf_args *args,
                      ct_tensor **inputs)
{
    *args = c->args;
    args->count = c->count ? c->count : op->inputs;
    args->dtype = dtype;
    for (int j = 0; j < args->count; j++) {
        inputs[j] = input_tensor(&c->in[j], &op->ranges[j], input_dtype(&c->in[j], dtype), j);
        if (!inputs[j]) return false;
    }
    return true;
}

void conf_release_inputs(void)
{
    for (size_t k = 0; k < cache_count; k++) ct_release(cache[k].t);
    free(cache);
    cache = NULL;
    cache_count = cache_capacity = 0;
}

ct_tensor *conf_take_views(ct_tensor *t, const conf_input *in)
{
    for (int k = 0; k < CONF_MAX_VIEWS && t; k++) {
        const conf_view *v = &in->views[k];
        switch (v->kind) {
        case CONF_TRANSPOSE: t = ct_transpose(t, (int)v->v[0], (int)v->v[1]); break;
        case CONF_SLICE: t = ct_slice(t, (int)v->v[0], v->v[1], v->v[2], v->v[3]); break;
        case CONF_EXPAND: t = ct_expand(t, v->v, v->n); break;
        case CONF_SELECT: t = ct_select(t, (int)v->v[0], v->v[1]); break;
        case CONF_NARROW: t = ct_narrow(t, (int)v->v[0], v->v[1], v->v[2]); break;
        case CONF_PERMUTE: {
            int dims[CT_MAX_DIMS];
            for (int d = 0; d < v->n; d++) dims[d] = (int)v->v[d];
            t = ct_permute(t, dims, v->n);
            break;
        }
        default: break;
        }
    }
    return t;
}

/* ---- comparing ---- */

void conf_report(const conf_where *w, const char *fmt, ...)
{
    if (w->quiet) return;
    printf("MISMATCH %s %s case '%s' on %s: ", w->op->name, ct_dtype_name(w->dtype), w->case_name,
           w->device);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* "[3, 5]" */
const char *conf_format_shape(const int64_t *shape, int ndim, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* The index of row-major element i of shape, as "[1, 4]". */
static const char *format_index(int64_t i, const int64_t *shape, int ndim, char *buf, size_t size)
{
    int64_t index[CT_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) {
        index[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
    return conf_format_shape(index, ndim, buf, size);
}

double conf_load_float(const void *buffer, ct_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CT_F32: return ((const float *)buffer)[i];
    case CT_F16: return ct_f16_to_float(((const uint16_t *)buffer)[i]);
    case CT_BF16: return ct_bf16_to_float(((const uint16_t *)buffer)[i]);
    default: return ((const double *)buffer)[i];
    }
}

/* One unit in the last place at 1 of each floating dtype. */
static double dtype_eps(ct_dtype dtype)
{
    switch (dtype) {
    case CT_F32: return 0x1p-23;
    case CT_F16: return 0x1p-10;
    case CT_BF16: return 0x1p-7;
    default: return 0x1p-52;
    }
}

int64_t conf_load_int(const void *buffer, ct_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CT_I32: return ((const int32_t *)buffer)[i];
    case CT_I64: return ((const int64_t *)buffer)[i];
    default: return ((const uint8_t *)buffer)[i];
    }
}

/* The magnitude a floating result is compared at: max(1, |x|, |y|, |m|), where m is the op of
 * the inputs' absolute values for entries that scale by it, or the entry's own magnitude (0
 * otherwise). */
static double tolerance_scale(double x, double y, double m)
{
    return fmax(fmax(1.0, fabs(m)), fmax(fabs(x), fabs(y)));
}

static bool floats_agree(double x, double y, double ulps, double scale, ct_dtype dtype)
{
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    if (x == y) return true;
    if (isinf(x) || isinf(y) || ulps == 0) return false;
    return fabs(x - y) <= ulps * dtype_eps(dtype) * scale;
}

/* Compares the device's result (already on the CPU) with the reference; reports what differs.
 * magnitude (NULL for most entries) is the op of the inputs' absolute values, or the entry's
 * own magnitude. */
bool conf_compare(const conf_where *w, const ct_tensor *ref, const ct_tensor *got,
                  const ct_tensor *magnitude, double ulps, ct_dtype ulp_dtype)
{
    char sr[128], sg[128];
    int ndim = ct_tensor_ndim(ref);
    bool same_shape = ndim == ct_tensor_ndim(got);
    for (int d = 0; d < ndim && same_shape; d++)
        same_shape = ct_tensor_shape(ref)[d] == ct_tensor_shape(got)[d];
    if (!same_shape) {
        conf_report(w, "shapes differ: cpu %s, device %s",
                    conf_format_shape(ct_tensor_shape(ref), ndim, sr, sizeof sr),
                    conf_format_shape(ct_tensor_shape(got), ct_tensor_ndim(got), sg, sizeof sg));
        return false;
    }
    ct_dtype dtype = ct_tensor_dtype(ref);
    if (ct_tensor_dtype(got) != dtype) {
        conf_report(w, "dtypes differ: cpu %s, device %s", ct_dtype_name(dtype),
                    ct_dtype_name(ct_tensor_dtype(got)));
        return false;
    }
    const int64_t *shape = ct_tensor_shape(ref);
    conf_format_shape(shape, ndim, sg, sizeof sg);
    int64_t n = ct_numel(ref);
    size_t bytes = (size_t)(n > 0 ? n : 1) * ct_dtype_size(dtype);
    void *a = malloc(bytes), *b = malloc(bytes), *m = magnitude ? malloc(bytes) : NULL;
    bool ok = a && b && (!magnitude || m) && ct_tensor_to_array(ref, a, bytes) == CT_OK &&
              ct_tensor_to_array(got, b, bytes) == CT_OK &&
              (!magnitude || ct_tensor_to_array(magnitude, m, bytes) == CT_OK);
    if (!ok) conf_report(w, "reading back failed: %s", ct_last_error_message());
    int64_t bad = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        bool agree;
        if (ct_dtype_is_floating(dtype)) {
            double x = conf_load_float(a, dtype, i), y = conf_load_float(b, dtype, i);
            double scale = tolerance_scale(x, y, m ? conf_load_float(m, dtype, i) : 0.0);
            agree = floats_agree(x, y, ulps, scale, ulp_dtype);
            if (!agree && bad < CONF_REPORT_ELEMENTS)
                conf_report(w, "element %s of %s: cpu %.17g, device %.17g (tolerance %g ulps of %g)",
                            format_index(i, shape, ndim, sr, sizeof sr), sg, x, y, ulps, scale);
        } else {
            int64_t x = conf_load_int(a, dtype, i), y = conf_load_int(b, dtype, i);
            agree = x == y;
            if (!agree && bad < CONF_REPORT_ELEMENTS)
                conf_report(w, "element %s of %s: cpu %lld, device %lld (exact)",
                            format_index(i, shape, ndim, sr, sizeof sr), sg, (long long)x, (long long)y);
        }
        bad += !agree;
    }
    if (bad > CONF_REPORT_ELEMENTS)
        conf_report(w, "%lld more elements differ", (long long)(bad - CONF_REPORT_ELEMENTS));
    free(a);
    free(b);
    free(m);
    return ok && bad == 0;
}

/* ---- running ---- */

/* The op of one case on one device: the inputs moved there from sources (and sources set to
 * them, so that the next device receives them from this one) and viewed. */
ct_tensor *conf_run_on(const conf_op *op, const conf_case *c, conf_args *args,
                       ct_tensor **sources, ct_device device)
{
    ct_tensor *in[CONF_MAX_INPUTS] = {0};
    for (int j = 0; j < args->count; j++) {
        ct_tensor *moved = ct_to(sources[j], device);
        if (moved) sources[j] = moved;
        in[j] = conf_take_views(moved, &c->in[j]);
        if (!in[j]) return NULL;
    }
    args->device = device;
    return op->run(in, args);
}

/* The op of the inputs' absolute values on the CPU (see conf_op.scale_by_abs_inputs). */
static ct_tensor *run_on_abs_inputs(const conf_op *op, const conf_case *c, conf_args *args,
                                    ct_tensor *const *bases)
{
    ct_tensor *in[CONF_MAX_INPUTS] = {0};
    for (int j = 0; j < args->count; j++) {
        in[j] = ct_abs(conf_take_views(bases[j], &c->in[j]));
        if (!in[j]) return NULL;
    }
    args->device = CT_DEVICE_CPU;
    return op->run(in, args);
}

/* The magnitude of the result's elements from the inputs on the CPU (see conf_op.magnitude). */
static ct_tensor *run_magnitude(const conf_op *op, const conf_case *c, conf_args *args,
                                ct_tensor *const *bases)
{
    ct_tensor *in[CONF_MAX_INPUTS] = {0};
    for (int j = 0; j < args->count; j++) {
        in[j] = conf_take_views(bases[j], &c->in[j]);
        if (!in[j]) return NULL;
    }
    args->device = CT_DEVICE_CPU;
    return op->magnitude(in, args);
}

/* One case of one dtype: the reference, then every device. Adds to *totals. */
static void run_case(const conf_op *op, ct_dtype dtype, const conf_case *c,
                     const ct_device *devices, int device_count, bool quiet, conf_totals *totals)
{
    conf_where w = {quiet, op, dtype, c->name, "cpu"};
    conf_args args;
    ct_tensor *bases[CONF_MAX_INPUTS] = {0};
    bool ready = conf_case_inputs(op, c, dtype, &args, bases);
    ct_scope_push();
    /* The inputs go from the CPU to the first device, from there to the second, and so on:
     * copies between devices are checked too. */
    ct_tensor *sources[CONF_MAX_INPUTS];
    memcpy(sources, bases, sizeof sources);
    ct_tensor *ref = ready ? conf_run_on(op, c, &args, sources, CT_DEVICE_CPU) : NULL;
    if (!ref) {
        conf_report(&w, "the CPU reference failed: %s", ct_last_error_message());
        ct_clear_error();
        totals->checks += device_count;
    }
    ct_tensor *magnitude = NULL;
    bool scaled = op->scale_by_abs_inputs || op->magnitude;
    if (ref && scaled && ct_dtype_is_floating(ct_tensor_dtype(ref))) {
        magnitude = op->magnitude ? run_magnitude(op, c, &args, bases)
                                  : run_on_abs_inputs(op, c, &args, bases);
        if (!magnitude) conf_report(&w, "the magnitude failed: %s", ct_last_error_message());
        ct_clear_error();
        if (magnitude && ct_numel(magnitude) != ct_numel(ref)) {
            conf_report(&w, "the magnitude has %lld elements but the result %lld",
                        (long long)ct_numel(magnitude), (long long)ct_numel(ref));
            magnitude = NULL; /* compared without it: more strictly */
        }
    }
    ct_dtype result_dtype = ref ? ct_tensor_dtype(ref) : dtype;
    if (ref && (result_dtype == CT_F16 || result_dtype == CT_BF16) && op->half_ulps >= 0) {
        totals->checks++;
        if (conf_matches_float64(op, c, &args, bases, ref, magnitude, &w)) totals->passed++;
        args.dtype = dtype;
        snprintf(w.device, sizeof w.device, "cpu");
    }
    for (int k = 0; ref && k < device_count; k++) {
        ct_device_format(devices[k], w.device, sizeof w.device);
        totals->checks++;
        ct_tensor *got = conf_run_on(op, c, &args, sources, devices[k]);
        if (!got) {
            conf_report(&w, "failed: %s", ct_last_error_message());
            ct_clear_error();
            continue;
        }
        if (!ct_device_equal(ct_tensor_device(got), devices[k])) {
            char where[CT_DEVICE_STRING_MAX];
            conf_report(&w, "the result is on %s", ct_device_format(ct_tensor_device(got), where, sizeof where));
            continue;
        }
        ct_tensor *back = ct_to(got, CT_DEVICE_CPU);
        if (back && conf_compare(&w, ref, back, magnitude, op->ulps, ct_tensor_dtype(ref))) totals->passed++;
        else if (!back) conf_report(&w, "moving the result to the CPU failed: %s", ct_last_error_message());
        ct_clear_error();
    }
    ct_scope_pop();
}

static int popcount(unsigned x)
{
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

conf_totals conf_run_op(const conf_op *op, const ct_device *devices, int device_count, bool quiet)
{
    conf_totals totals = {0, 0};
    int cases = 0;
    while (op->cases[cases].name) cases++;
    for (int d = 0; d < CT_DTYPE_COUNT; d++)
        if (op->dtypes & CONF_DT(d))
            for (int c = 0; c < cases; c++)
                run_case(op, (ct_dtype)d, &op->cases[c], devices, device_count, quiet, &totals);
    if (!quiet)
        printf("%-20s %d dtypes x %2d cases x %d devices: %4ld checks, %4ld passed%s\n", op->name,
               popcount(op->dtypes), cases, device_count, totals.checks, totals.passed,
               totals.passed == totals.checks ? "" : "  <-- FAILED");
    return totals;
}

conf_totals conf_run_all(const ct_device *devices, int device_count)
{
    conf_totals all = {0, 0};
    /* CT_CONFORMANCE_ONLY=text: the entries whose name contains text (a by-hand run of one op) */
    const char *only = getenv("CT_CONFORMANCE_ONLY");
    for (int i = 0; i < conf_op_total(); i++) {
        if (only && !strstr(conf_op_at(i)->name, only)) continue;
        conf_totals totals = conf_run_op(conf_op_at(i), devices, device_count, false);
        all.checks += totals.checks;
        all.passed += totals.passed;
    }
    conf_release_inputs();
    return all;
}
