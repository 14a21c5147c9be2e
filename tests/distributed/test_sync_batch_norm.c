/* SyncBatchNorm (ct_convert_sync_batch_norm) against plain BatchNorm run by one process on the
 * whole global batch, in float64 on the CPU (the reference each rank computes alone). Every rank
 * holds rows [start, end) of the global batch (even splits, odd ones, a rank with no rows).
 *
 * The loss is a sum: rank r's loss is sum(y_r * g_r) for fixed weights g, so the ranks' losses
 * add up to the reference's sum(y * g) over the whole batch. Then each rank's input gradient is
 * its rows of the reference's, and the all-reduce (SUM) of the ranks' weight and bias gradients
 * is the reference's (what DDP would average instead, with losses that are means).
 * Tolerance: TOLERANCE relative to max(1, |reference|) for float32 SyncBatchNorm; the
 * finite-difference check runs in float64. Run by ctest under mpirun with 2 ranks and 1 (where
 * SyncBatchNorm is plain BatchNorm). The conversion and the errors that reach every rank:
 * test_sync_batch_norm_conversion_and_rank_errors.c. */
#include "dist_test.h"
#include "sync_batch_norm_test.h"

#define TOLERANCE 1e-5
#define STEPS 3

static int rank_, world_;

typedef enum split { EVEN, ODD, FIRST_RANK_EMPTY } split;

/* Rows [*start, *end) of a global batch of `batch` rows that this rank holds. With 2 ranks and
 * 8 rows: EVEN 4 + 4, ODD 3 + 5, FIRST_RANK_EMPTY 0 + 8. */
static void rows_of(split s, int64_t batch, int64_t *start, int64_t *end)
{
    *start = batch * rank_ / world_;
    *end = batch * (rank_ + 1) / world_;
    if (world_ == 1) return;
    if (s == ODD) {
        if (rank_ > 0) *start -= 1;
        if (rank_ < world_ - 1) *end -= 1;
    } else if (s == FIRST_RANK_EMPTY) {
        if (rank_ == 0) *end = 0;
        if (rank_ == 1) *start = 0;
    }
}

/* Element i of the global input at step `step` (channel c): channels with different means and
 * spreads, so that a mixed-up channel or rank shows. */
static double input_value(int64_t i, int64_t c, int step)
{
    return 1.5 + 0.75 * (double)c + (1.0 + 0.5 * (double)c) * sin(0.37 * (double)i + 1.1 * step + 0.2 * (double)c);
}

static double loss_weight(int64_t i, int step) { return cos(0.91 * (double)i + 0.5 * step); }

/* The global input or loss weights ([batch, C, ...]) at step, malloc'ed. */
static double *global_values(const int64_t *shape, int ndim, int step, bool weights)
{
    int64_t n = 1, inner = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    for (int d = 2; d < ndim; d++) inner *= shape[d];
    double *v = malloc(sizeof(double) * (size_t)n);
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = weights ? loss_weight(i, step) : input_value(i, (i / inner) % shape[1], step);
    return v;
}

static int64_t row_size(const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int d = 1; d < ndim; d++) n *= shape[d];
    return n;
}

/* Rows [start, end) of the global values as a tensor of dtype on device. */
static ct_tensor *rows_tensor(const double *global, const int64_t *shape, int ndim, int64_t start, int64_t end,
                              ct_dtype dtype, ct_device device)
{
    int64_t part[CT_MAX_DIMS];
    memcpy(part, shape, sizeof(int64_t) * (size_t)ndim);
    part[0] = end - start;
    return ct_test_tensor_from(global + start * row_size(shape, ndim), CT_F64, part, ndim, dtype, device);
}

/* got (this rank's tensor) against want[offset .. offset + numel(got)). */
static void assert_close(const ct_tensor *got, const double *want, int64_t offset, double tolerance, const char *what,
                         const char *label)
{
    char text[320];
    snprintf(text, sizeof text, "rank %d, %s: %s", rank_, label, what);
    double *values = dist_test_read(got);
    dist_test_assert_values(values, want + offset, ct_numel(got), tolerance, text);
    free(values);
}

/* A tensor's values (malloc'ed), of a named parameter's gradient or buffer of m. */
static double *read_named(const ct_module *m, const char *name, bool gradient)
{
    ct_tensor *t = gradient ? ct_module_parameter(m, name) : ct_module_buffer(m, name);
    assert_non_null(t);
    ct_tensor *g = gradient ? ct_grad(t) : ct_retain(t);
    assert_non_null(g);
    double *values = dist_test_read(g);
    ct_release(g);
    ct_release(t);
    return values;
}

/* The sum over the ranks of m's parameter gradient `name`, checked against want. */
static void assert_reduced_gradient(const ct_module *m, const char *name, const double *want, const char *label)
{
    ct_tensor *p = ct_module_parameter(m, name);
    ct_tensor *g = ct_grad(p);
    assert_non_null(g);
    ct_tensor *sum = ct_clone(g);
    assert_int_equal(ct_dist_all_reduce(sum, CT_REDUCE_SUM), CT_OK);
    assert_close(sum, want, 0, TOLERANCE, name, label);
    ct_release(sum);
    ct_release(g);
    ct_release(p);
}

typedef struct bn_case {
    const char *name;
    int dims;
    int ndim;
    int64_t shape[4]; /* the global batch */
    split split;
    ct_batch_norm_options options;
} bn_case;

/* STEPS training steps of SyncBatchNorm on device against the reference, then eval mode. */
static void check_case(const bn_case *k, ct_device device)
{
    char label[256];
    snprintf(label, sizeof label, "%s on %s", k->name,
             ct_device_format(device, (char[CT_DEVICE_STRING_MAX]){0}, CT_DEVICE_STRING_MAX));
    int64_t channels = k->shape[1], start, end;
    rows_of(k->split, k->shape[0], &start, &end);
    int64_t offset = start * row_size(k->shape, k->ndim);
    ct_module *reference = make_bn(k->dims, channels, &k->options);
    assert_int_equal(ct_module_to_dtype(reference, CT_F64), CT_OK);
    ct_module *sync = make_bn(k->dims, channels, &k->options);
    int converted = -1;
    assert_int_equal(ct_convert_sync_batch_norm(sync, &converted), CT_OK);
    assert_int_equal(converted, 1);
    assert_int_equal(ct_module_to(sync, device), CT_OK);
    for (int step = 0; step < STEPS; step++) {
        ct_scope_push();
        double *x = global_values(k->shape, k->ndim, step, false), *g = global_values(k->shape, k->ndim, step, true);
        /* the reference: the whole batch in one process */
        ct_tensor *x_all = rows_tensor(x, k->shape, k->ndim, 0, k->shape[0], CT_F64, CT_DEVICE_CPU);
        ct_tensor *g_all = rows_tensor(g, k->shape, k->ndim, 0, k->shape[0], CT_F64, CT_DEVICE_CPU);
        ct_requires_grad_(x_all, true);
        ct_tensor *y_all = ct_module_forward(reference, x_all);
        ct_tensor *loss_all = ct_sum(ct_mul(y_all, g_all), NULL, 0, false);
        assert_non_null(loss_all);
        assert_int_equal(ct_backward(loss_all), CT_OK);
        double *want_y = dist_test_read(y_all), *want_dx = dist_test_read(ct_grad(x_all));
        /* this rank's rows through SyncBatchNorm */
        ct_tensor *x_mine = rows_tensor(x, k->shape, k->ndim, start, end, CT_F32, device);
        ct_tensor *g_mine = rows_tensor(g, k->shape, k->ndim, start, end, CT_F32, device);
        ct_requires_grad_(x_mine, true);
        ct_tensor *y_mine = ct_module_forward(sync, x_mine);
        if (!y_mine) fail_msg("rank %d, %s: forward: %s", rank_, label, ct_last_error_message());
        assert_true(ct_device_equal(ct_tensor_device(y_mine), device));
        ct_tensor *loss_mine = ct_sum(ct_mul(y_mine, g_mine), NULL, 0, false);
        assert_non_null(loss_mine);
        if (ct_backward(loss_mine) != CT_OK) fail_msg("rank %d, %s: backward: %s", rank_, label, ct_last_error_message());
        assert_close(y_mine, want_y, offset, TOLERANCE, "output", label);
        assert_close(ct_grad(x_mine), want_dx, offset, TOLERANCE, "input gradient", label);
        if (k->options.affine) {
            double *want_dw = read_named(reference, "weight", true), *want_db = read_named(reference, "bias", true);
            assert_reduced_gradient(sync, "weight", want_dw, label);
            assert_reduced_gradient(sync, "bias", want_db, label);
            free(want_dw);
            free(want_db);
        }
        ct_module_zero_grad(reference);
        ct_module_zero_grad(sync);
        free(want_y);
        free(want_dx);
        free(x);
        free(g);
        ct_scope_pop();
    }
    if (k->options.track_running_stats) {
        const char *buffers[3] = {"running_mean", "running_var", "num_batches_tracked"};
        for (int i = 0; i < 3; i++) {
            double *want = read_named(reference, buffers[i], false), *got = read_named(sync, buffers[i], false);
            char text[320];
            snprintf(text, sizeof text, "rank %d, %s: %s", rank_, label, buffers[i]);
            dist_test_assert_values(got, want, i == 2 ? 1 : channels, i == 2 ? 0 : TOLERANCE, text);
            free(want);
            free(got);
        }
    }
    ct_module_release(reference);
    ct_module_release(sync);
}

static void check_cases(const bn_case *cases, size_t count)
{
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    for (int d = 0; d < device_count; d++)
        for (size_t i = 0; i < count; i++) check_case(&cases[i], devices[d]);
}

static void sync_batch_norm_1d_equals_batch_norm_over_the_whole_batch(void **state)
{
    (void)state;
    const bn_case cases[] = {
        {"1d [8, 3], 4 + 4 rows", 1, 2, {8, 3}, EVEN, BATCH_NORM_DEFAULTS},
        {"1d [8, 3], 3 + 5 rows", 1, 2, {8, 3}, ODD, BATCH_NORM_DEFAULTS},
        {"1d [8, 3, 5], 3 + 5 rows", 1, 3, {8, 3, 5}, ODD, BATCH_NORM_DEFAULTS},
        /* one row per rank: too few for BatchNorm on a rank alone, enough together */
        {"1d [2, 3], 1 + 1 rows", 1, 2, {2, 3}, EVEN, BATCH_NORM_DEFAULTS},
    };
    check_cases(cases, DIST_TEST_LEN(cases));
}

static void sync_batch_norm_2d_equals_batch_norm_over_the_whole_batch(void **state)
{
    (void)state;
    const bn_case cases[] = {
        {"2d [8, 3, 2, 3], 4 + 4 rows", 2, 4, {8, 3, 2, 3}, EVEN, BATCH_NORM_DEFAULTS},
        {"2d [8, 3, 2, 3], 3 + 5 rows", 2, 4, {8, 3, 2, 3}, ODD, BATCH_NORM_DEFAULTS},
        {"2d [8, 3, 2, 3], 0 + 8 rows", 2, 4, {8, 3, 2, 3}, FIRST_RANK_EMPTY, BATCH_NORM_DEFAULTS},
    };
    check_cases(cases, DIST_TEST_LEN(cases));
}

/* momentum, affine and track_running_stats as the converted layer had them. */
static void sync_batch_norm_keeps_the_layers_settings(void **state)
{
    (void)state;
    const bn_case cases[] = {
        {"momentum 0.3, eps 1e-3", 2, 4, {6, 2, 3, 2}, ODD,
         {.eps = 1e-3, .momentum = 0.3, .affine = true, .track_running_stats = true}},
        {"not affine", 1, 2, {7, 4}, ODD, {.eps = 1e-5, .momentum = 0.1, .affine = false, .track_running_stats = true}},
        {"no running statistics", 1, 2, {7, 4}, EVEN,
         {.eps = 1e-5, .momentum = 0.1, .affine = true, .track_running_stats = false}},
    };
    check_cases(cases, DIST_TEST_LEN(cases));
}

/* Inputs far from zero (mean 1000, spread 0.01): the variance must not come from a difference of
 * large sums of squares (that would lose every digit in float32). Against a float64 reference on
 * the same float32-rounded inputs, SyncBatchNorm is within 4 times BatchNorm's own error. */
static void sync_batch_norm_variance_survives_a_large_mean(void **state)
{
    (void)state;
    int64_t shape[2] = {8, 2}, start, end, channels = 2;
    rows_of(ODD, shape[0], &start, &end);
    double x[16];
    for (int i = 0; i < 16; i++) x[i] = 1000.0 + 0.01 * sin(1.7 * i);
    ct_scope_push();
    ct_module *reference = make_bn(1, channels, &BATCH_NORM_DEFAULTS);
    ct_module *plain = make_bn(1, channels, &BATCH_NORM_DEFAULTS);
    ct_module *sync = make_bn(1, channels, &BATCH_NORM_DEFAULTS);
    assert_int_equal(ct_module_to_dtype(reference, CT_F64), CT_OK);
    assert_int_equal(ct_convert_sync_batch_norm(sync, NULL), CT_OK);
    ct_tensor *x_all = rows_tensor(x, shape, 2, 0, 8, CT_F32, CT_DEVICE_CPU);
    ct_tensor *x_mine = rows_tensor(x, shape, 2, start, end, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y_ref = ct_module_forward(reference, ct_to_dtype(x_all, CT_F64));
    ct_tensor *y_plain = ct_module_forward(plain, x_all), *y_sync = ct_module_forward(sync, x_mine);
    assert_non_null(y_ref);
    assert_non_null(y_plain);
    assert_non_null(y_sync);
    double *want = dist_test_read(y_ref), *got = dist_test_read(y_sync), *plain_got = dist_test_read(y_plain);
    double worst_sync = 0, worst_plain = 0;
    for (int64_t i = 0; i < (end - start) * channels; i++)
        worst_sync = fmax(worst_sync, fabs(got[i] - want[start * channels + i]));
    for (int64_t i = 0; i < 8 * channels; i++) worst_plain = fmax(worst_plain, fabs(plain_got[i] - want[i]));
    if (!(worst_sync <= 4 * worst_plain + 1e-4))
        fail_msg("rank %d: SyncBatchNorm is off by %g on inputs near 1000 (BatchNorm by %g)", rank_, worst_sync,
                 worst_plain);
    free(want);
    free(got);
    free(plain_got);
    ct_module_release(reference);
    ct_module_release(plain);
    ct_module_release(sync);
    ct_scope_pop();
}

/* After training steps, eval mode normalises with the running statistics and communicates
 * nothing: rank 0 alone runs forwards, then every rank meets in a barrier (an all-reduce on rank 0
 * would meet the other ranks' barrier instead, and both would fail). */
static void eval_mode_uses_the_running_statistics_without_communicating(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int device_count = dist_test_devices(devices);
    int64_t shape[4] = {8, 3, 2, 2}, start, end;
    rows_of(EVEN, shape[0], &start, &end);
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        ct_module *plain = make_bn(2, 3, &BATCH_NORM_DEFAULTS), *sync = make_bn(2, 3, &BATCH_NORM_DEFAULTS);
        assert_int_equal(ct_convert_sync_batch_norm(sync, NULL), CT_OK);
        assert_int_equal(ct_module_to(sync, devices[d]), CT_OK);
        for (int step = 0; step < 2; step++) { /* the same running statistics in both */
            double *x = global_values(shape, 4, step, false);
            assert_non_null(ct_module_forward(plain, rows_tensor(x, shape, 4, 0, shape[0], CT_F32, CT_DEVICE_CPU)));
            assert_non_null(ct_module_forward(sync, rows_tensor(x, shape, 4, start, end, CT_F32, devices[d])));
            free(x);
        }
        ct_module_eval(plain);
        ct_module_eval(sync);
        double *x = global_values(shape, 4, 7, false);
        if (rank_ == 0)
            for (int repeat = 0; repeat < 3; repeat++) {
                double *want = dist_test_read(
                    ct_module_forward(plain, rows_tensor(x, shape, 4, 0, shape[0], CT_F32, CT_DEVICE_CPU)));
                ct_tensor *got = ct_module_forward(sync, rows_tensor(x, shape, 4, 0, shape[0], CT_F32, devices[d]));
                assert_non_null(got);
                assert_close(got, want, 0, 1e-6, "eval output", "eval mode");
                free(want);
            }
        assert_int_equal(ct_dist_barrier(), CT_OK);
        int64_t tracked = -1;
        ct_tensor *counter = ct_module_buffer(sync, "num_batches_tracked");
        assert_int_equal(ct_item_int64(counter, &tracked), CT_OK);
        assert_int_equal(tracked, 2); /* eval forwards do not count */
        free(x);
        ct_release(counter);
        ct_module_release(plain);
        ct_module_release(sync);
        ct_scope_pop();
    }
}

/* ---- finite differences: the backward (the all-reduce of the statistics' gradient included)
 * against central differences of the loss of all ranks together, in float64 on the cpu ---- */

typedef struct fd_problem {
    ct_module *sync;
    int64_t shape[4];
    int64_t start, end;
    double *x, *g;
} fd_problem;

/* sum over the ranks of sum(y_r * g_r), for the global input x. */
static double total_loss(const fd_problem *p, const double *x)
{
    ct_scope_push();
    ct_no_grad_push();
    ct_tensor *y = ct_module_forward(p->sync, rows_tensor(x, p->shape, 4, p->start, p->end, CT_F64, CT_DEVICE_CPU));
    ct_tensor *loss = ct_sum(ct_mul(y, rows_tensor(p->g, p->shape, 4, p->start, p->end, CT_F64, CT_DEVICE_CPU)),
                             NULL, 0, false);
    assert_non_null(loss);
    assert_int_equal(ct_dist_all_reduce(loss, CT_REDUCE_SUM), CT_OK);
    double value = 0;
    assert_int_equal(ct_item(loss, &value), CT_OK);
    ct_no_grad_pop();
    ct_scope_pop();
    return value;
}

/* Sets element c of m's parameter `name` (float64) to value. */
static void set_parameter(ct_module *m, const char *name, int64_t c, double value)
{
    ct_tensor *p = ct_module_parameter(m, name);
    double *values = dist_test_read(p);
    values[c] = value;
    int64_t n = ct_numel(p);
    ct_tensor *v = ct_tensor_from_data(values, CT_F64, &n, 1, CT_DEVICE_CPU);
    ct_no_grad_push();
    assert_int_equal(ct_copy_(p, v), CT_OK);
    ct_no_grad_pop();
    ct_release(v);
    ct_release(p);
    free(values);
}

static void assert_derivative(double analytic, double numeric, const char *what, int64_t index)
{
    if (!(fabs(analytic - numeric) <= 1e-7 + 1e-6 * fabs(numeric)))
        fail_msg("rank %d: d loss / d %s[%lld] is %.12g, central differences give %.12g", rank_, what,
                 (long long)index, analytic, numeric);
}

static void gradients_match_finite_differences_of_the_loss_of_all_ranks(void **state)
{
    (void)state;
    const double h = 1e-5;
    fd_problem p = {.shape = {5, 2, 2, 2}};
    rows_of(ODD, p.shape[0], &p.start, &p.end);
    p.sync = make_bn(2, 2, &BATCH_NORM_DEFAULTS);
    assert_int_equal(ct_module_to_dtype(p.sync, CT_F64), CT_OK);
    assert_int_equal(ct_convert_sync_batch_norm(p.sync, NULL), CT_OK);
    p.x = global_values(p.shape, 4, 3, false);
    p.g = global_values(p.shape, 4, 3, true);
    int64_t rows = row_size(p.shape, 4), offset = p.start * rows;
    /* analytic */
    ct_scope_push();
    ct_tensor *x = rows_tensor(p.x, p.shape, 4, p.start, p.end, CT_F64, CT_DEVICE_CPU);
    ct_requires_grad_(x, true);
    ct_tensor *loss = ct_sum(ct_mul(ct_module_forward(p.sync, x),
                                    rows_tensor(p.g, p.shape, 4, p.start, p.end, CT_F64, CT_DEVICE_CPU)),
                             NULL, 0, false);
    assert_non_null(loss);
    assert_int_equal(ct_backward(loss), CT_OK);
    double *dx = dist_test_read(ct_grad(x));
    ct_tensor *dw = ct_clone(ct_grad(ct_module_parameter(p.sync, "weight")));
    ct_tensor *db = ct_clone(ct_grad(ct_module_parameter(p.sync, "bias")));
    assert_int_equal(ct_dist_all_reduce(dw, CT_REDUCE_SUM), CT_OK);
    assert_int_equal(ct_dist_all_reduce(db, CT_REDUCE_SUM), CT_OK);
    double *dw_values = dist_test_read(dw), *db_values = dist_test_read(db);
    ct_scope_pop();
    /* numeric, input elements of every rank (each rank checks its own) */
    static const int64_t elements[] = {0, 5, 10, 13, 22, 31, 39};
    double *shifted = malloc(sizeof(double) * (size_t)(p.shape[0] * rows));
    assert_non_null(shifted);
    for (size_t k = 0; k < DIST_TEST_LEN(elements); k++) {
        int64_t j = elements[k];
        memcpy(shifted, p.x, sizeof(double) * (size_t)(p.shape[0] * rows));
        shifted[j] = p.x[j] + h;
        double plus = total_loss(&p, shifted);
        shifted[j] = p.x[j] - h;
        double minus = total_loss(&p, shifted);
        if (j / rows >= p.start && j / rows < p.end) assert_derivative(dx[j - offset], (plus - minus) / (2 * h), "x", j);
    }
    /* numeric, weight and bias (the same on every rank: their gradient is the sum over ranks) */
    const char *names[2] = {"weight", "bias"};
    const double *analytic[2] = {dw_values, db_values};
    for (int n = 0; n < 2; n++)
        for (int64_t c = 0; c < 2; c++) {
            ct_tensor *param = ct_module_parameter(p.sync, names[n]);
            double *values = dist_test_read(param), at = values[c];
            set_parameter(p.sync, names[n], c, at + h);
            double plus = total_loss(&p, p.x);
            set_parameter(p.sync, names[n], c, at - h);
            double minus = total_loss(&p, p.x);
            set_parameter(p.sync, names[n], c, at);
            assert_derivative(analytic[n][c], (plus - minus) / (2 * h), names[n], c);
            free(values);
            ct_release(param);
        }
    free(shifted);
    free(dx);
    free(dw_values);
    free(db_values);
    free(p.x);
    free(p.g);
    ct_module_release(p.sync);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sync_batch_norm_1d_equals_batch_norm_over_the_whole_batch),
        cmocka_unit_test(sync_batch_norm_2d_equals_batch_norm_over_the_whole_batch),
        cmocka_unit_test(sync_batch_norm_keeps_the_layers_settings),
        cmocka_unit_test(sync_batch_norm_variance_survives_a_large_mean),
        cmocka_unit_test(eval_mode_uses_the_running_statistics_without_communicating),
        cmocka_unit_test(gradients_match_finite_differences_of_the_loss_of_all_ranks),
    };
    return dist_test_main(tests, DIST_TEST_LEN(tests), &rank_, &world_);
}
