/* Training end to end: a small MLP (Linear, ReLU, Dropout, Linear) learns a synthetic
 * classification with cross-entropy and each optimizer; the same seed gives the same losses on
 * the cpu and on opencl:0 (within 1e-4 relative); a warm training loop makes no device
 * allocations; Linear's gradients against a hand computation. */
#include "nn/nn_test.h"
#include "support/gradcheck.h"

enum { BATCH = 32, FEATURES = 4, HIDDEN = 16, CLASSES = 3, STEPS = 30, WARM = 5 };

/* Inputs from ct_randn and labels from a fixed rule (the class of the largest of three linear
 * scores), on the cpu. */
static void make_data(ct_tensor **x, ct_tensor **y)
{
    ct_manual_seed(99);
    *x = ct_randn((int64_t[]){BATCH, FEATURES}, 2, CT_F32, CT_DEVICE_CPU);
    float values[BATCH * FEATURES];
    assert_int_equal(ct_tensor_to_array(*x, values, sizeof values), CT_OK);
    int64_t labels[BATCH];
    for (int n = 0; n < BATCH; n++) {
        const float *r = values + n * FEATURES;
        double s[CLASSES] = {r[0] + r[1], r[2] - r[0], r[3] - r[1] + 0.5 * r[2]};
        labels[n] = s[0] >= s[1] && s[0] >= s[2] ? 0 : s[1] >= s[2] ? 1 : 2;
    }
    *y = ct_tensor_from_data(labels, CT_I64, (int64_t[]){BATCH}, 1, CT_DEVICE_CPU);
}

static ct_optimizer *make_optimizer(int kind, ct_module *model)
{
    if (kind == 0) {
        ct_sgd_options o = ct_sgd_options_default(0.2);
        o.momentum = 0.9;
        o.nesterov = true;
        o.weight_decay = 1e-4;
        return ct_optim_sgd(model, &o);
    }
    ct_adam_options o = kind == 1 ? ct_adam_options_default(0.02) : ct_adamw_options_default(0.02);
    return kind == 1 ? ct_optim_adam(model, &o) : ct_optim_adamw(model, &o);
}

/* Trains on device and writes the loss of every step. */
static void train(ct_device device, int kind, double *losses)
{
    ct_tensor *x_cpu, *y_cpu;
    make_data(&x_cpu, &y_cpu);
    ct_manual_seed(1);
    ct_module *model = ct_sequential((ct_module *[]){ct_linear(FEATURES, HIDDEN, true), ct_relu_module(),
                                                     ct_dropout(0.1), ct_linear(HIDDEN, CLASSES, true)}, 4);
    assert_int_equal(ct_module_to(model, device), CT_OK);
    ct_manual_seed(2); /* the dropout masks: the same stream on every device */
    ct_tensor *x = ct_to(x_cpu, device), *y = ct_to(y_cpu, device);
    ct_optimizer *optimizer = make_optimizer(kind, model);
    assert_non_null(optimizer);
    ct_memory_stats warm, now;
    for (int step = 0; step < STEPS; step++) {
        if (step == WARM) assert_int_equal(ct_memory_stats_get(device, &warm), CT_OK);
        ct_scope_push();
        ct_optimizer_zero_grad(optimizer);
        ct_tensor *logits = ct_module_forward(model, x);
        ct_tensor *loss = ct_cross_entropy(logits, y, 0.05);
        if (!loss) fail_msg("step %d: %s", step, ct_last_error_message());
        assert_int_equal(ct_backward(loss), CT_OK);
        assert_int_equal(ct_optimizer_step(optimizer), CT_OK);
        losses[step] = value_of(loss);
        ct_scope_pop();
    }
    assert_int_equal(ct_memory_stats_get(device, &now), CT_OK);
    if (now.device_allocations != warm.device_allocations)
        fail_msg("%s: %llu device allocations in %d warm steps", ct_optimizer_kind(optimizer),
                 (unsigned long long)(now.device_allocations - warm.device_allocations), STEPS - WARM);
    ct_optimizer_free(optimizer);
    ct_module_release(model);
    ct_release(x);
    ct_release(y);
    ct_release(x_cpu);
    ct_release(y_cpu);
}

static void training_lowers_the_loss_on_the_cpu(void **state)
{
    (void)state;
    for (int kind = 0; kind < 3; kind++) {
        double losses[STEPS];
        train(CT_DEVICE_CPU, kind, losses);
        if (!(losses[STEPS - 1] < 0.5 * losses[0]))
            fail_msg("optimizer %d: loss %g -> %g", kind, losses[0], losses[STEPS - 1]);
    }
}

static void the_same_losses_on_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    for (int kind = 0; kind < 3; kind++) {
        double on_cpu[STEPS], on_device[STEPS];
        train(CT_DEVICE_CPU, kind, on_cpu);
        train(OPENCL0, kind, on_device);
        for (int step = 0; step < STEPS; step++)
            if (fabs(on_device[step] - on_cpu[step]) > 1e-4 * fabs(on_cpu[step]))
                fail_msg("optimizer %d, step %d: opencl:0 %.9g, cpu %.9g", kind, step, on_device[step],
                         on_cpu[step]);
    }
}

static ct_tensor *f_linear(ct_tensor *const *x, void *context)
{
    return ct_module_forward(context, x[0]);
}

/* y = x W^T + b with L = sum(y * G): dL/dx = G W, dL/dW = G^T x, dL/db = sum_rows G. */
static void linear_gradients_against_a_hand_computation(void **state)
{
    (void)state;
    ct_device devices[2] = {CT_DEVICE_CPU, OPENCL0};
    for (int d = 0; d < (have_opencl() ? 2 : 1); d++) {
        ct_scope_push();
        ct_manual_seed(6);
        ct_module *fc = ct_linear(3, 2, true);
        assert_int_equal(ct_module_to(fc, devices[d]), CT_OK);
        assert_int_equal(ct_module_to_dtype(fc, CT_F64), CT_OK);
        ct_tensor *w = ct_module_parameter(fc, "weight"), *b = ct_module_parameter(fc, "bias");
        assert_int_equal(ct_tensor_dtype(w), CT_F64);
        double wv[6], xv[12] = {0.5, -1, 2, 1.5, 0.25, -0.5, -2, 1, 0.75, 0.3, -0.6, 0.9};
        double gv[8] = {1, -0.5, 0.25, 2, -1, 0.5, 0.75, -1.25};
        values_of(w, wv, 6);
        ct_tensor *x = tensor_of(xv, (int64_t[]){4, 3}, 2, CT_F64, devices[d]);
        ct_tensor *g = tensor_of(gv, (int64_t[]){4, 2}, 2, CT_F64, devices[d]);
        assert_int_equal(ct_requires_grad_(x, true), CT_OK);
        ct_tensor *y = ct_module_forward(fc, x);
        ct_tensor *loss = ct_sum(ct_mul(y, g), NULL, 0, false);
        assert_int_equal(ct_backward(loss), CT_OK);
        double dx[12], dw[6], db[2], want_dx[12] = {0}, want_dw[6] = {0}, want_db[2] = {0};
        for (int n = 0; n < 4; n++)
            for (int o = 0; o < 2; o++) {
                want_db[o] += gv[n * 2 + o];
                for (int i = 0; i < 3; i++) {
                    want_dx[n * 3 + i] += gv[n * 2 + o] * wv[o * 3 + i];
                    want_dw[o * 3 + i] += gv[n * 2 + o] * xv[n * 3 + i];
                }
            }
        values_of(ct_grad(x), dx, 12);
        values_of(ct_grad(w), dw, 6);
        values_of(ct_grad(b), db, 2);
        assert_close_array(dx, want_dx, 12, 1e-12, 1e-12, "dL/dx");
        assert_close_array(dw, want_dw, 6, 1e-12, 1e-12, "dL/dW");
        assert_close_array(db, want_db, 2, 1e-12, 1e-12, "dL/db");
        ct_module_zero_grad(fc);
        ct_gradcheck("Linear, input", f_linear, &x, NULL, 1, fc);
        ct_module_release(fc);
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_gradients_against_a_hand_computation),
        cmocka_unit_test(training_lowers_the_loss_on_the_cpu),
        cmocka_unit_test(the_same_losses_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
