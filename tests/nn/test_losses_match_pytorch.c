/* The losses with a reduction (BCE, BCE with logits, L1, smooth L1, Huber, KL divergence) and
 * cross-entropy / NLL with PyTorch's options ([N, C, d1, d2] inputs, class weights, ignore_index,
 * label smoothing, every reduction) against PyTorch's numbers (fixtures/losses_pytorch.h), in
 * float64 and float32, their gradients by finite differences and against PyTorch's, and their
 * bad inputs; on the CPU and every OpenCL device. */
#include <math.h>

#include "nn/fixtures/losses_pytorch.h"
#include "nn/nn_test.h"
#include "support/devices.h"
#include "support/gradcheck.h"

/* the inputs of fixtures/losses_pytorch.h */
static const double x_v[12] = {0.2, -1.3, 0.7, 1.9, 0.05, -0.4, -2.2, 0.9, 0.3, 0.6, -0.8, 2.5};
static const double y_v[12] = {1, 0, 1, 0, 0.5, 1, 1, 1, 0, 0, 1, 0.25};
static const double t2_v[12] = {0.3, -1.1, 2.0, 0.0, 4.0, -0.2, 1.5, 1.5, -3.0, -0.7, 0.1, 0.9};
static const double w_v[3] = {0.5, 2.0, 1.0}, pw_v[3] = {3.0, 0.5, 1.5}, cw_v[3] = {0.3, 1.7, 1.0};
static const int64_t tg_v[8] = {0, 2, 1, -100, 2, 2, 0, 1};
static const int64_t S43[2] = {4, 3}, S3[1] = {3}, S2322[4] = {2, 3, 2, 2}, S222[3] = {2, 2, 2};
static const ct_reduction reductions[3] = {CT_REDUCTION_NONE, CT_REDUCTION_SUM, CT_REDUCTION_MEAN};

static ct_tensor *indices_of(const int64_t *values, const int64_t *shape, int ndim, ct_device device)
{
    ct_tensor *c = ct_tensor_from_data(values, CT_I64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to(c, device);
    ct_release(c);
    return t;
}

/* got's values against want's (NaN matches NaN) within rtol of max(|want|, 1): float32 cancels
 * as PyTorch's does in the stable BCE-with-logits form. */
static void check_values(const char *what, const ct_tensor *got, const double *want, int64_t n,
                         double rtol)
{
    if (!got) fail_msg("%s: %s", what, ct_last_error_message());
    double values[32];
    assert_true(n <= 32);
    values_of(got, values, n);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(values[i])) continue;
        if (!(fabs(values[i] - want[i]) <= rtol * (fabs(want[i]) + 1.0)))
            fail_msg("%s[%lld]: got %.12g, want %.12g", what, (long long)i, values[i], want[i]);
    }
}

typedef struct pointwise_inputs {
    ct_tensor *x, *y, *p, *t2, *w, *pw, *lp, *tz, *log_t;
} pointwise_inputs;

static pointwise_inputs pointwise_on(ct_device device, ct_dtype dtype)
{
    pointwise_inputs in;
    in.x = tensor_of(x_v, S43, 2, dtype, device);
    in.y = tensor_of(y_v, S43, 2, dtype, device);
    in.p = ct_sigmoid(in.x);
    in.t2 = tensor_of(t2_v, S43, 2, dtype, device);
    in.w = tensor_of(w_v, S3, 1, dtype, device);
    in.pw = tensor_of(pw_v, S3, 1, dtype, device);
    in.lp = ct_log_softmax(in.x, 1);
    in.log_t = ct_log_softmax(in.t2, 1);
    /* softmax(t2) with a zero at [1, 0] */
    ct_tensor *mask = ct_eq_scalar(ct_arange(0, 12, 1, CT_F64, device), 3.0);
    in.tz = ct_masked_fill(ct_softmax(in.t2, 1), ct_reshape(mask, S43, 2), 0.0);
    return in;
}

static void pointwise_losses_on(ct_device device, ct_dtype dtype)
{
    ct_scope_push();
    double rtol = dtype == CT_F64 ? 1e-12 : 2e-6;
    pointwise_inputs in = pointwise_on(device, dtype);
    const double *bce[3] = {bce_none, bce_sum, bce_mean}, *bce_w[3] = {bce_w_none, bce_w_sum, bce_w_mean};
    const double *bcel[3] = {bcel_none, bcel_sum, bcel_mean};
    const double *bcel_wpw[3] = {bcel_wpw_none, bcel_wpw_sum, bcel_wpw_mean};
    const double *l1[3] = {l1_none, l1_sum, l1_mean}, *sl1[3] = {smooth_l1_none, smooth_l1_sum, smooth_l1_mean};
    const double *huber[3] = {huber_none, huber_sum, huber_mean};
    ct_tensor *x6 = ct_mul_scalar(in.x, 6.0);
    for (int r = 0; r < 3; r++) {
        int64_t n = reductions[r] == CT_REDUCTION_NONE ? 12 : 1;
        check_values("bce", ct_binary_cross_entropy(in.p, in.y, NULL, reductions[r]), bce[r], n, rtol);
        check_values("bce, weight", ct_binary_cross_entropy(in.p, in.y, in.w, reductions[r]), bce_w[r], n, rtol);
        check_values("bce_with_logits", ct_binary_cross_entropy_with_logits(x6, in.y, NULL, NULL, reductions[r]),
                     bcel[r], n, rtol);
        check_values("bce_with_logits, weight, pos_weight",
                     ct_binary_cross_entropy_with_logits(x6, in.y, in.w, in.pw, reductions[r]), bcel_wpw[r], n, rtol);
        check_values("l1", ct_l1_loss(in.x, in.t2, reductions[r]), l1[r], n, rtol);
        check_values("smooth_l1", ct_smooth_l1_loss(in.x, in.t2, reductions[r], 0.8), sl1[r], n, rtol);
        check_values("huber", ct_huber_loss(in.x, in.t2, reductions[r], 1.3), huber[r], n, rtol);
    }
    check_values("smooth_l1, beta 0", ct_smooth_l1_loss(in.x, in.t2, CT_REDUCTION_MEAN, 0.0),
                 smooth_l1_beta0_mean, 1, rtol);
    const ct_reduction kl_reductions[4] = {CT_REDUCTION_NONE, CT_REDUCTION_SUM, CT_REDUCTION_MEAN,
                                           CT_REDUCTION_BATCHMEAN};
    const double *kl[4] = {kl_none, kl_sum, kl_mean, kl_batchmean};
    const double *kl_log[4] = {kl_log_none, kl_log_sum, kl_log_mean, kl_log_batchmean};
    for (int r = 0; r < 4; r++) {
        int64_t n = r == 0 ? 12 : 1;
        check_values("kl_div", ct_kl_div(in.lp, in.tz, kl_reductions[r], false), kl[r], n, rtol);
        check_values("kl_div, log_target", ct_kl_div(in.lp, in.log_t, kl_reductions[r], true), kl_log[r], n, rtol);
    }
    ct_scope_pop();
}

static void class_losses_on(ct_device device, ct_dtype dtype)
{
    ct_scope_push();
    double rtol = dtype == CT_F64 ? 1e-12 : 2e-6;
    ct_tensor *z = tensor_of(ce_z, S2322, 4, dtype, device);
    ct_tensor *target = indices_of(tg_v, S222, 3, device);
    ct_tensor *cw = tensor_of(cw_v, S3, 1, dtype, device);
    const double *want[4][3] = {{ce_plain_none, ce_plain_sum, ce_plain_mean},
                                {ce_w_none, ce_w_sum, ce_w_mean},
                                {ce_ls_none, ce_ls_sum, ce_ls_mean},
                                {ce_w_ls_none, ce_w_ls_sum, ce_w_ls_mean}};
    const double *want_grad[4][2] = {{ce_plain_sum_grad, ce_plain_mean_grad}, {ce_w_sum_grad, ce_w_mean_grad},
                                     {ce_ls_sum_grad, ce_ls_mean_grad}, {ce_w_ls_sum_grad, ce_w_ls_mean_grad}};
    const double *want_nll[2][3] = {{nll_plain_none, nll_plain_sum, nll_plain_mean},
                                    {nll_w_none, nll_w_sum, nll_w_mean}};
    ct_tensor *log_probs = ct_log_softmax(z, 1);
    for (int k = 0; k < 4; k++) {
        ct_cross_entropy_options o = ct_cross_entropy_options_default();
        o.weight = k & 1 ? cw : NULL;
        o.label_smoothing = k & 2 ? 0.15 : 0.0;
        for (int r = 0; r < 3; r++) {
            o.reduction = reductions[r];
            int64_t n = r == 0 ? 8 : 1;
            ct_tensor *leaf = ct_detach(z);
            ct_requires_grad_(leaf, true);
            ct_tensor *loss = ct_cross_entropy_ex(leaf, target, &o);
            check_values("cross_entropy_ex", loss, want[k][r], n, rtol);
            if (r == 0) {
                assert_int_equal(ct_tensor_ndim(loss), 3);
                assert_memory_equal(ct_tensor_shape(loss), S222, sizeof S222);
            } else {
                assert_int_equal(ct_backward(loss), CT_OK);
                check_values("cross_entropy_ex gradient", ct_grad(leaf), want_grad[k][r - 1], 24, rtol);
            }
            if (k < 2)
                check_values("nll_loss_ex", ct_nll_loss_ex(log_probs, target, &o), want_nll[k][r], n, rtol);
        }
    }
    /* [N, C]: ignore_index among the classes, every target ignored, one unbatched row */
    ct_tensor *rows = tensor_of(ce_rows, (int64_t[]){2, 3}, 2, dtype, device);
    ct_cross_entropy_options o = ct_cross_entropy_options_default();
    o.ignore_index = 1;
    check_values("ignore_index 1", ct_cross_entropy_ex(rows, indices_of((int64_t[]){1, 2}, (int64_t[]){2}, 1, device), &o),
                 ce_ignore1_mean, 1, rtol);
    check_values("every target ignored",
                 ct_cross_entropy_ex(rows, indices_of((int64_t[]){-100, -100}, (int64_t[]){2}, 1, device), NULL),
                 ce_all_ignored_mean, 1, rtol);
    o = ct_cross_entropy_options_default();
    o.reduction = CT_REDUCTION_NONE;
    ct_tensor *unbatched = ct_cross_entropy_ex(ct_select(rows, 0, 0), indices_of((int64_t[]){2}, NULL, 0, device), &o);
    assert_int_equal(ct_tensor_ndim(unbatched), 0);
    check_values("unbatched", unbatched, ce_unbatched_none, 1, rtol);
    /* the defaults on [N, C] are ct_cross_entropy's fused op; their sum is N times the mean */
    ct_tensor *classes = indices_of((int64_t[]){0, 2}, (int64_t[]){2}, 1, device);
    double mean = value_of(ct_cross_entropy(rows, classes, 0.0));
    assert_true(fabs(value_of(ct_cross_entropy_ex(rows, classes, NULL)) - mean) <= rtol * mean);
    o.reduction = CT_REDUCTION_SUM;
    assert_true(fabs(value_of(ct_cross_entropy_ex(rows, classes, &o)) - 2 * mean) <= rtol * mean);
    ct_scope_pop();
}

static void losses_match_pytorch(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        pointwise_losses_on(devices[d], CT_F64);
        pointwise_losses_on(devices[d], CT_F32);
        class_losses_on(devices[d], CT_F64);
        class_losses_on(devices[d], CT_F32);
    }
}

/* ---- gradients by finite differences ---- */

typedef struct loss_context {
    ct_tensor *target, *weight, *pos_weight;
    ct_cross_entropy_options options;
} loss_context;

static ct_tensor *f_bce(ct_tensor *const *x, void *c)
{
    loss_context *k = c;
    return ct_binary_cross_entropy(x[0], x[1], k->weight, CT_REDUCTION_MEAN);
}
static ct_tensor *f_bce_logits(ct_tensor *const *x, void *c)
{
    loss_context *k = c;
    return ct_binary_cross_entropy_with_logits(x[0], x[1], k->weight, k->pos_weight, CT_REDUCTION_SUM);
}
static ct_tensor *f_l1(ct_tensor *const *x, void *c) { (void)c; return ct_l1_loss(x[0], x[1], CT_REDUCTION_MEAN); }
static ct_tensor *f_smooth_l1(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_smooth_l1_loss(x[0], x[1], CT_REDUCTION_SUM, 0.8);
}
static ct_tensor *f_huber(ct_tensor *const *x, void *c) { (void)c; return ct_huber_loss(x[0], x[1], CT_REDUCTION_NONE, 1.3); }
static ct_tensor *f_kl(ct_tensor *const *x, void *c) { (void)c; return ct_kl_div(x[0], x[1], CT_REDUCTION_BATCHMEAN, false); }
static ct_tensor *f_kl_log(ct_tensor *const *x, void *c) { (void)c; return ct_kl_div(x[0], x[1], CT_REDUCTION_MEAN, true); }
static ct_tensor *f_cross_entropy(ct_tensor *const *x, void *c)
{
    loss_context *k = c;
    return ct_cross_entropy_ex(x[0], k->target, &k->options);
}
static ct_tensor *f_nll(ct_tensor *const *x, void *c)
{
    loss_context *k = c;
    return ct_nll_loss_ex(x[0], k->target, &k->options);
}

static void gradients_on(ct_device device)
{
    ct_scope_push();
    pointwise_inputs in = pointwise_on(device, CT_F64);
    loss_context k = {.weight = in.w, .pos_weight = in.pw};
    ct_tensor *p = ct_detach(in.p), *y = ct_detach(in.y), *x = ct_detach(in.x), *t2 = ct_detach(in.t2);
    ct_gradcheck("binary_cross_entropy", f_bce, (ct_tensor *[]){p, y}, NULL, 2, &k);
    ct_gradcheck("binary_cross_entropy_with_logits", f_bce_logits, (ct_tensor *[]){x, y}, NULL, 2, &k);
    ct_gradcheck("l1_loss", f_l1, (ct_tensor *[]){x, t2}, NULL, 2, NULL);
    ct_gradcheck("smooth_l1_loss", f_smooth_l1, (ct_tensor *[]){x, t2}, NULL, 2, NULL);
    ct_gradcheck("huber_loss", f_huber, (ct_tensor *[]){x, t2}, NULL, 2, NULL);
    ct_tensor *lp = ct_detach(in.lp), *probs = ct_detach(ct_softmax(t2, 1)), *log_t = ct_detach(in.log_t);
    ct_gradcheck("kl_div", f_kl, (ct_tensor *[]){lp, probs}, NULL, 2, NULL);
    ct_gradcheck("kl_div, log_target", f_kl_log, (ct_tensor *[]){lp, log_t}, NULL, 2, NULL);
    ct_tensor *z = tensor_of(ce_z, S2322, 4, CT_F64, device);
    k.target = indices_of(tg_v, S222, 3, device);
    k.options = ct_cross_entropy_options_default();
    k.options.weight = tensor_of(cw_v, S3, 1, CT_F64, device);
    k.options.label_smoothing = 0.15;
    ct_gradcheck("cross_entropy_ex, weight, label_smoothing", f_cross_entropy, &z, NULL, 1, &k);
    k.options.label_smoothing = 0.0;
    k.options.reduction = CT_REDUCTION_NONE;
    ct_tensor *lz = ct_detach(ct_log_softmax(z, 1));
    ct_gradcheck("nll_loss_ex, weight, none", f_nll, &lz, NULL, 1, &k);
    ct_scope_pop();
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) gradients_on(devices[d]);
}

/* ---- bad inputs: an error naming the input and what is right ---- */

static void expect_error(ct_tensor *result, ct_status code, const char *needle)
{
    assert_null(result);
    assert_int_equal(ct_last_error(), code);
    if (!strstr(ct_last_error_message(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), needle);
    ct_clear_error();
}

static void bad_inputs_are_named(void **state)
{
    (void)state;
    ct_scope_push();
    ct_device cpu = CT_DEVICE_CPU;
    pointwise_inputs in = pointwise_on(cpu, CT_F32);
    ct_tensor *row = tensor_of(x_v, S3, 1, CT_F32, cpu);
    expect_error(ct_l1_loss(in.x, row, CT_REDUCTION_MEAN), CT_ERR_SHAPE, "target [3]");
    expect_error(ct_binary_cross_entropy(in.x, in.y, NULL, CT_REDUCTION_MEAN), CT_ERR_INVALID_ARGUMENT,
                 "between 0 and 1");
    expect_error(ct_binary_cross_entropy(in.p, in.y, ct_ones((int64_t[]){2}, 1, CT_F32, cpu), CT_REDUCTION_MEAN),
                 CT_ERR_SHAPE, "weight has shape [2]");
    expect_error(ct_huber_loss(in.x, in.t2, CT_REDUCTION_MEAN, 0.0), CT_ERR_INVALID_ARGUMENT, "delta");
    expect_error(ct_smooth_l1_loss(in.x, in.t2, CT_REDUCTION_MEAN, -1.0), CT_ERR_INVALID_ARGUMENT, "beta");
    expect_error(ct_l1_loss(in.x, in.t2, CT_REDUCTION_BATCHMEAN), CT_ERR_INVALID_ARGUMENT, "reduction");
    expect_error(ct_l1_loss(in.x, ct_to_dtype(in.t2, CT_I64), CT_REDUCTION_MEAN), CT_ERR_DTYPE, "int64");
    ct_tensor *z = tensor_of(ce_z, S2322, 4, CT_F32, cpu);
    expect_error(ct_cross_entropy_ex(z, indices_of(tg_v, (int64_t[]){2, 4}, 2, cpu), NULL), CT_ERR_SHAPE,
                 "target [2, 4]");
    expect_error(ct_cross_entropy_ex(z, indices_of((int64_t[]){0, 1, 3, 0, 0, 0, 0, 0}, S222, 3, cpu), NULL),
                 CT_ERR_INDEX, "class value 3");
    ct_cross_entropy_options o = ct_cross_entropy_options_default();
    o.weight = ct_ones((int64_t[]){4}, 1, CT_F32, cpu);
    expect_error(ct_cross_entropy_ex(z, indices_of(tg_v, S222, 3, cpu), &o), CT_ERR_SHAPE, "weight");
    o = ct_cross_entropy_options_default();
    o.label_smoothing = 0.1;
    expect_error(ct_nll_loss_ex(z, indices_of(tg_v, S222, 3, cpu), &o), CT_ERR_INVALID_ARGUMENT,
                 "label_smoothing");
    expect_error(ct_cross_entropy_ex(z, ct_to_dtype(indices_of(tg_v, S222, 3, cpu), CT_I32), NULL), CT_ERR_DTYPE,
                 "int64");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(losses_match_pytorch),
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(bad_inputs_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
