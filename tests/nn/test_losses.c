/* The losses against plain C (mean reduction; cross-entropy with and without label smoothing),
 * their gradients by finite differences, and their bad inputs; on the cpu and on opencl:0. */
#include "nn/nn_test.h"
#include "support/gradcheck.h"

enum { N = 4, C = 3 };
static const double logits_values[N * C] = {1.0, -0.5, 0.25, 0.3, 0.8, -1.2, -2.0, 0.1, 0.7, 0.05, 0.05, 0.4};
static const int64_t classes[N] = {0, 2, 1, 2};

static ct_tensor *targets(ct_device device)
{
    ct_tensor *c = ct_tensor_from_data(classes, CT_I64, (int64_t[]){N}, 1, CT_DEVICE_CPU);
    ct_tensor *t = ct_to(c, device);
    ct_release(c);
    return t;
}

/* mean over rows of -sum_c q_c log_softmax(x)_c, q = (1 - eps) one_hot + eps / C */
static double cross_entropy_reference(const double *x, double smoothing, bool inputs_are_log_probs)
{
    double total = 0;
    for (int n = 0; n < N; n++) {
        const double *row = x + n * C;
        double max = row[0], sum = 0;
        for (int c = 1; c < C; c++) max = fmax(max, row[c]);
        for (int c = 0; c < C; c++) sum += exp(row[c] - max);
        for (int c = 0; c < C; c++) {
            double log_p = inputs_are_log_probs ? row[c] : row[c] - max - log(sum);
            double q = (c == classes[n] ? 1.0 - smoothing : 0.0) + smoothing / C;
            total -= q * log_p;
        }
    }
    return total / N;
}

typedef struct loss_context {
    ct_tensor *target;
    double smoothing;
} loss_context;

static ct_tensor *f_mse(ct_tensor *const *x, void *c) { (void)c; return ct_mse_loss(x[0], x[1]); }
static ct_tensor *f_cross_entropy(ct_tensor *const *x, void *c)
{
    loss_context *context = c;
    return ct_cross_entropy(x[0], context->target, context->smoothing);
}
static ct_tensor *f_nll(ct_tensor *const *x, void *c)
{
    loss_context *context = c;
    return ct_nll_loss(x[0], context->target);
}

static void check_on(ct_device device)
{
    ct_scope_push();
    /* MSE */
    double a[6] = {0.5, -1, 2, 0.25, 3, -0.75}, b[6] = {1, 1, 1.5, -0.5, 2, 0};
    for (int f64 = 0; f64 < 2; f64++) {
        ct_dtype dtype = f64 ? CT_F64 : CT_F32;
        ct_tensor *x = tensor_of(a, (int64_t[]){2, 3}, 2, dtype, device), *y = tensor_of(b, (int64_t[]){2, 3}, 2, dtype, device);
        double want = 0;
        for (int i = 0; i < 6; i++) want += (a[i] - b[i]) * (a[i] - b[i]) / 6;
        ct_tensor *loss = ct_mse_loss(x, y);
        assert_int_equal(ct_tensor_ndim(loss), 0);
        assert_int_equal(ct_tensor_dtype(loss), dtype);
        assert_true(fabs(value_of(loss) - want) <= (f64 ? 1e-12 : 1e-6) * want);
    }
    ct_tensor *x64 = tensor_of(a, (int64_t[]){2, 3}, 2, CT_F64, device), *y64 = tensor_of(b, (int64_t[]){2, 3}, 2, CT_F64, device);
    ct_gradcheck("mse_loss", f_mse, (ct_tensor *[]){x64, y64}, NULL, 2, NULL);

    /* cross-entropy and NLL */
    ct_tensor *target = targets(device);
    for (int f64 = 0; f64 < 2; f64++) {
        ct_dtype dtype = f64 ? CT_F64 : CT_F32;
        ct_tensor *logits = tensor_of(logits_values, (int64_t[]){N, C}, 2, dtype, device);
        const double smoothings[3] = {0.0, 0.1, 1.0};
        for (int s = 0; s < 3; s++) {
            double want = cross_entropy_reference(logits_values, smoothings[s], false);
            double got = value_of(ct_cross_entropy(logits, target, smoothings[s]));
            if (fabs(got - want) > (f64 ? 1e-12 : 1e-6) * fabs(want))
                fail_msg("cross_entropy smoothing %g (%s): got %.9g, want %.9g", smoothings[s],
                         ct_dtype_name(dtype), got, want);
        }
        ct_tensor *log_probs = ct_log_softmax(logits, 1);
        double lp[N * C];
        values_of(log_probs, lp, N * C);
        double want = cross_entropy_reference(lp, 0.0, true);
        double got = value_of(ct_nll_loss(log_probs, target));
        assert_true(fabs(got - want) <= (f64 ? 1e-12 : 1e-6) * fabs(want));
        /* NLL of log_softmax is cross-entropy */
        assert_true(fabs(got - value_of(ct_cross_entropy(logits, target, 0.0))) <= 1e-6 * fabs(want));
    }
    ct_tensor *logits64 = tensor_of(logits_values, (int64_t[]){N, C}, 2, CT_F64, device);
    loss_context plain = {target, 0.0}, smoothed = {target, 0.2};
    ct_gradcheck("cross_entropy", f_cross_entropy, &logits64, NULL, 1, &plain);
    ct_gradcheck("cross_entropy, label_smoothing 0.2", f_cross_entropy, &logits64, NULL, 1, &smoothed);
    ct_tensor *log_probs64 = ct_log_softmax(logits64, 1);
    ct_tensor *free_log_probs = ct_detach(log_probs64);
    ct_gradcheck("nll_loss", f_nll, &free_log_probs, NULL, 1, &plain);
    ct_scope_pop();
}

static void losses_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void losses_on_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    check_on(OPENCL0);
}

static void bad_inputs(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *logits = tensor_of(logits_values, (int64_t[]){N, C}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *target = targets(CT_DEVICE_CPU);
    ct_tensor *target32 = ct_to_dtype(target, CT_I32);
    ct_tensor *short_target = ct_narrow(target, 0, 0, 2);
    int64_t out_of_range[N] = {0, 3, 1, 2}, negative[N] = {0, -1, 1, 2};
    ct_tensor *bad_class = ct_tensor_from_data(out_of_range, CT_I64, (int64_t[]){N}, 1, CT_DEVICE_CPU);
    ct_tensor *negative_class = ct_tensor_from_data(negative, CT_I64, (int64_t[]){N}, 1, CT_DEVICE_CPU);
    ct_tensor *flat = ct_flatten(logits, 0, -1);

    assert_null(ct_cross_entropy(logits, bad_class, 0.0));
    assert_error(CT_ERR_INDEX, "ct_cross_entropy: target: class value 3 is out of range for num_classes 3");
    assert_null(ct_nll_loss(logits, negative_class));
    assert_error(CT_ERR_INDEX, "ct_nll_loss: target: class value -1 is negative");
    assert_null(ct_cross_entropy(logits, target32, 0.0));
    assert_error(CT_ERR_DTYPE, "ct_cross_entropy: target is int32; class indices must be int64");
    assert_null(ct_cross_entropy(logits, short_target, 0.0));
    assert_error(CT_ERR_SHAPE, "ct_cross_entropy: logits has shape [4, 3] and target [2]; target must be [4]");
    assert_null(ct_cross_entropy(flat, target, 0.0));
    assert_error(CT_ERR_SHAPE, "ct_cross_entropy: logits has shape [12]; it must be [N, C]");
    assert_null(ct_cross_entropy(logits, target, 1.5));
    assert_error(CT_ERR_INVALID_ARGUMENT, "label_smoothing is 1.5; it must be between 0.0 and 1.0");
    assert_null(ct_cross_entropy(target32, target, 0.0));
    assert_error(CT_ERR_SHAPE, "logits has shape [4]");
    assert_null(ct_cross_entropy(NULL, target, 0.0));
    assert_error(CT_ERR_NULL_ARGUMENT, "logits");

    ct_tensor *other = ct_ones((int64_t[]){3, 4}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *ints = ct_ones((int64_t[]){4, 3}, 2, CT_I32, CT_DEVICE_CPU);
    assert_null(ct_mse_loss(logits, other));
    assert_error(CT_ERR_SHAPE, "ct_mse_loss: input has shape [4, 3] and target [3, 4]; they must be equal");
    assert_null(ct_mse_loss(logits, ints));
    assert_error(CT_ERR_DTYPE, "ct_mse_loss: input is float32 and target int32");
    if (have_opencl()) {
        ct_tensor *remote = ct_to(target, OPENCL0);
        assert_null(ct_cross_entropy(logits, remote, 0.0));
        assert_error(CT_ERR_DEVICE, "ct_cross_entropy");
    }
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(losses_on_the_cpu),
        cmocka_unit_test(losses_on_opencl),
        cmocka_unit_test(bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
