/* Cross-entropy (one fused op) at its edges, against PyTorch's semantics computed in plain C: a
 * -inf logit of another class, a transposed (non-contiguous) logits view, an empty batch, and a
 * negative class; gradients against the closed form (softmax - q) / N. On cpu and opencl:0. */
#include "nn/nn_test.h"

static ct_tensor *targets_of(const int64_t *values, int64_t n, ct_device device)
{
    ct_tensor *c = ct_tensor_from_data(values, CT_I64, &n, 1, CT_DEVICE_CPU);
    ct_tensor *t = ct_to(c, device);
    ct_release(c);
    return t;
}

/* The loss and d loss / d logits of F.cross_entropy in double, rows [n, classes]. */
static double reference(const double *z, const int64_t *target, int n, int classes, double smoothing,
                        double *grad)
{
    double total = 0;
    for (int r = 0; r < n; r++) {
        const double *row = z + r * classes;
        double max = row[0], sum = 0;
        for (int c = 1; c < classes; c++) max = fmax(max, row[c]);
        for (int c = 0; c < classes; c++) sum += exp(row[c] - max);
        for (int c = 0; c < classes; c++) {
            double q = (c == target[r] ? 1.0 - smoothing : 0.0) + smoothing / classes;
            double p = exp(row[c] - max) / sum;
            if (q != 0.0) total -= q * (row[c] - max - log(sum));
            grad[r * classes + c] = (p - q) / n;
        }
    }
    return total / n;
}

/* The loss of logits against the reference, and its gradient after backward. */
static void check_against_reference(ct_tensor *leaf, const ct_tensor *logits, const int64_t *target,
                                    const double *z, int n, int classes, double smoothing,
                                    ct_device device, const char *what)
{
    double want_grad[64], got_grad[64];
    double want = reference(z, target, n, classes, smoothing, want_grad);
    ct_tensor *t = targets_of(target, n, device);
    ct_tensor *loss = ct_cross_entropy(logits, t, smoothing);
    double got = value_of(loss);
    if (!(fabs(got - want) <= 1e-12 + 1e-12 * fabs(want)))
        fail_msg("%s: loss %.17g, want %.17g", what, got, want);
    assert_int_equal(ct_backward(loss), CT_OK);
    ct_tensor *grad = ct_grad(leaf);
    values_of(grad, got_grad, n * classes);
    assert_close_array(got_grad, want_grad, n * classes, 1e-12, 1e-14, what);
    ct_release(grad);
    ct_release(loss);
    ct_release(t);
}

static void check_on(ct_device device)
{
    /* Class 1 of row 0 is -inf: the loss stays finite without smoothing (its q is 0). */
    const double z[6] = {0.5, -INFINITY, 1.5, 2.0, -1.0, 0.25};
    const int64_t target[2] = {0, 2};
    ct_tensor *logits = tensor_of(z, (int64_t[]){2, 3}, 2, CT_F64, device);
    ct_requires_grad_(logits, true);
    check_against_reference(logits, logits, target, z, 2, 3, 0.0, device, "-inf logit of another class");

    /* With smoothing every class has q > 0: the -inf gives an infinite loss, as in PyTorch. */
    ct_tensor *t = targets_of(target, 2, device);
    ct_tensor *smoothed_loss = ct_cross_entropy(logits, t, 0.1);
    double smoothed = value_of(smoothed_loss);
    assert_true(isinf(smoothed) && smoothed > 0);
    ct_release(smoothed_loss);
    ct_release(logits);

    /* A transposed view [4, 3] of a [3, 4] tensor: the same as its contiguous copy. */
    const double stored[12] = {0.1, -0.4, 1.2, 0.3, 0.7, 0.2, -1.1, 0.9, -0.6, 0.5, 0.4, -0.2};
    double rows[12];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) rows[r * 3 + c] = stored[c * 4 + r];
    const int64_t classes4[4] = {2, 0, 1, 1};
    ct_tensor *base = tensor_of(stored, (int64_t[]){3, 4}, 2, CT_F64, device);
    ct_requires_grad_(base, true);
    ct_tensor *view = ct_transpose(base, 0, 1);
    double want_grad[12], got_grad[12], grad_of_base[12];
    double want = reference(rows, classes4, 4, 3, 0.2, want_grad);
    ct_tensor *t4 = targets_of(classes4, 4, device);
    ct_tensor *loss = ct_cross_entropy(view, t4, 0.2);
    assert_true(fabs(value_of(loss) - want) <= 1e-12);
    assert_int_equal(ct_backward(loss), CT_OK);
    ct_tensor *grad = ct_grad(base);
    values_of(grad, grad_of_base, 12);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) got_grad[r * 3 + c] = grad_of_base[c * 4 + r];
    assert_close_array(got_grad, want_grad, 12, 1e-12, 1e-14, "transposed logits' gradient");
    ct_release(grad);
    ct_release(loss);
    ct_release(t4);
    ct_release(view);
    ct_release(base);

    /* An empty batch: the mean of nothing. */
    ct_tensor *empty = ct_zeros((int64_t[]){0, 3}, 2, CT_F32, device);
    ct_tensor *no_target = ct_zeros((int64_t[]){0}, 1, CT_I64, device);
    ct_tensor *nan_loss = ct_cross_entropy(empty, no_target, 0.0);
    assert_true(isnan(value_of(nan_loss)));
    ct_release(nan_loss);
    ct_release(empty);
    ct_release(no_target);

    /* A negative class is an error naming it. */
    ct_tensor *small = tensor_of(z + 3, (int64_t[]){1, 3}, 2, CT_F32, device);
    ct_tensor *negative = targets_of((const int64_t[]){-1}, 1, device);
    assert_null(ct_cross_entropy(small, negative, 0.0));
    assert_error(CT_ERR_INDEX, "ct_cross_entropy: target: class value -1 is negative");
    ct_release(small);
    ct_release(negative);
    ct_release(t);
}

static void edges_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void edges_on_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    check_on(OPENCL0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(edges_on_the_cpu),
        cmocka_unit_test(edges_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
