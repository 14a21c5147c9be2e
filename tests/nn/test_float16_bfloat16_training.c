/* float16 and bfloat16 through the nn and optim kernels: a module tree converted with
 * ct_module_to_dtype (floating parameters and buffers; integer buffers keep int64), batch
 * normalisation with its running statistics and gradients, cross-entropy and its gradient, the
 * optimizers' steps and their state, and a few training steps (pooling, cross-entropy, SGD).
 * Each runs again in float32 from the same 16-bit values: the kernels compute in float, so a
 * single op's 16-bit result is the float32 one rounded (half a unit of the 16-bit format), and
 * steps that keep 16-bit state stay within a few units. On the cpu and on opencl:0. */
#include "nn/nn_test.h"

static const ct_dtype halves[2] = {CT_F16, CT_BF16};

#define assert_ok(call)                                                                          \
    do {                                                                                         \
        if ((call) != CT_OK) fail_msg("%s: %s", #call, ct_last_error_message());                 \
    } while (0)

/* One unit in the last place at 1. */
static double unit(ct_dtype dtype) { return dtype == CT_F16 ? 0x1p-10 : 0x1p-7; }

/* Deterministic values in [lo, hi), none of them within 0.1 of zero when away_from_zero. */
static void draw(double *out, int64_t n, double lo, double hi, unsigned seed, bool away_from_zero)
{
    unsigned state = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        double v = lo + (hi - lo) * (double)(state >> 8) / 16777216.0;
        if (away_from_zero && fabs(v) < 0.1) v = v < 0 ? v - 0.1 : v + 0.1;
        out[i] = v;
    }
}

/* got (of dtype, on any device) within units of the 16-bit format of want (float32), relative
 * to max(floor, |want|); a negative floor stands for want's largest magnitude (for sums whose
 * terms are that large). */
static void assert_within_units(const ct_tensor *got, const ct_tensor *want, ct_dtype dtype, double units,
                                double floor, const char *what)
{
    assert_non_null(got);
    assert_non_null(want);
    if (ct_tensor_dtype(got) != dtype)
        fail_msg("%s is %s, not %s", what, ct_dtype_name(ct_tensor_dtype(got)), ct_dtype_name(dtype));
    int64_t n = ct_numel(want);
    double *g = malloc(sizeof(double) * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
    assert_true(g && w);
    values_of(got, g, n);
    values_of(want, w, n);
    if (floor < 0)
        for (int64_t i = 0; i < n; i++) floor = fmax(floor, fabs(w[i]));
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(g[i] - w[i]) <= units * unit(dtype) * fmax(floor, fabs(w[i]))))
            fail_msg("%s (%s)[%lld]: got %.9g, float32 gives %.9g (%g units allowed)", what,
                     ct_dtype_name(dtype), (long long)i, g[i], w[i], units);
    free(g);
    free(w);
}

/* A leaf of dtype on device from values, and its float32 twin from the same (rounded) values. */
static void twin_leaves(const double *values, const int64_t *shape, int ndim, ct_dtype dtype,
                        ct_device device, ct_tensor **low, ct_tensor **wide)
{
    *low = tensor_of(values, shape, ndim, dtype, device);
    *wide = ct_to_dtype(*low, CT_F32);
    assert_non_null(*wide);
    assert_ok(ct_requires_grad_(*low, true));
    assert_ok(ct_requires_grad_(*wide, true));
}

static ct_tensor *class_targets(int64_t n, int64_t classes, ct_device device)
{
    int64_t values[16];
    assert_true(n <= 16);
    for (int64_t i = 0; i < n; i++) values[i] = (i * 7 + 3) % classes;
    ct_tensor *c = ct_tensor_from_data(values, CT_I64, &n, 1, CT_DEVICE_CPU);
    ct_tensor *t = ct_to(c, device);
    ct_release(c);
    assert_non_null(t);
    return t;
}

static ct_device devices_under_test(int *count, ct_device out[2])
{
    out[0] = CT_DEVICE_CPU;
    *count = 1;
    if (have_opencl()) out[(*count)++] = OPENCL0;
    return out[0];
}

/* ---- ct_module_to_dtype ---- */

static void check_dtype(const ct_module *m, const char *name, ct_dtype want)
{
    ct_tensor *t = ct_module_parameter(m, name);
    if (!t) {
        ct_clear_error();
        t = ct_module_buffer(m, name);
    }
    if (!t) fail_msg("no tensor %s", name);
    if (ct_tensor_dtype(t) != want)
        fail_msg("%s is %s, not %s", name, ct_dtype_name(ct_tensor_dtype(t)), ct_dtype_name(want));
    ct_release(t);
}

static void module_to_16_bits_converts_floating_tensors_only(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        ct_scope_push();
        ct_module *net = ct_sequential((ct_module *[]){ct_linear(4, 3, true), ct_batch_norm1d(3, NULL)}, 2);
        assert_non_null(net);
        assert_ok(ct_module_to_dtype(net, halves[k]));
        const char *floating[] = {"0.weight", "0.bias", "1.weight",
                                  "1.bias", "1.running_mean", "1.running_var"};
        for (int i = 0; i < 6; i++) check_dtype(net, floating[i], halves[k]);
        check_dtype(net, "1.num_batches_tracked", CT_I64);
        /* and back, as module.float() after module.half() */
        assert_ok(ct_module_to_dtype(net, CT_F32));
        check_dtype(net, "0.weight", CT_F32);
        check_dtype(net, "1.num_batches_tracked", CT_I64);
        ct_module_free(net);
        ct_scope_pop();
    }
}

/* ---- batch normalisation: training forward, running statistics, gradients ---- */

static void batch_norm_in_16_bits_is_float32_rounded(ct_device device, ct_dtype dtype)
{
    enum { N = 4, C = 3, L = 6 };
    double x_values[N * C * L], g_values[N * C * L], affine[2 * C];
    draw(x_values, N * C * L, -3, 3, 1, false);
    draw(g_values, N * C * L, -1, 1, 2, false);
    draw(affine, 2 * C, 0.5, 1.5, 3, false);
    ct_module *bn[2] = {ct_batch_norm1d(C, NULL), ct_batch_norm1d(C, NULL)};
    assert_ok(ct_module_to_dtype(bn[0], dtype));
    for (int m = 0; m < 2; m++) {
        assert_ok(ct_module_to(bn[m], device));
        ct_tensor *weight = ct_module_parameter(bn[m], "weight");
        ct_tensor *w = tensor_of(affine, (int64_t[]){C}, 1, ct_tensor_dtype(weight), device);
        ct_no_grad_push();
        assert_ok(ct_copy_(weight, w));
        ct_no_grad_pop();
        ct_release(weight);
    }
    ct_tensor *x[2], *g = tensor_of(g_values, (int64_t[]){N, C, L}, 3, dtype, device);
    twin_leaves(x_values, (int64_t[]){N, C, L}, 3, dtype, device, &x[0], &x[1]);
    ct_tensor *upstream[2] = {g, ct_to_dtype(g, CT_F32)};
    ct_tensor *y[2];
    for (int m = 0; m < 2; m++) {
        y[m] = ct_module_forward(bn[m], x[m]);
        assert_non_null(y[m]);
        assert_ok(ct_backward_with(y[m], upstream[m], false));
    }
    assert_within_units(y[0], y[1], dtype, 1, 1e-3, "batch_norm output");
    assert_within_units(ct_grad(x[0]), ct_grad(x[1]), dtype, 1, 1e-3, "input gradient");
    const char *names[4] = {"weight", "bias", "running_mean", "running_var"};
    for (int i = 0; i < 4; i++) {
        ct_tensor *low = i < 2 ? ct_module_parameter(bn[0], names[i]) : ct_module_buffer(bn[0], names[i]);
        ct_tensor *wide = i < 2 ? ct_module_parameter(bn[1], names[i]) : ct_module_buffer(bn[1], names[i]);
        if (i < 2) /* the gradients arrive in the parameter's own dtype */
            assert_within_units(ct_grad(low), ct_grad(wide), dtype, 1, 1e-3, names[i]);
        else
            assert_within_units(low, wide, dtype, 1, 1e-3, names[i]);
        ct_release(low);
        ct_release(wide);
    }
    ct_tensor *count = ct_module_buffer(bn[0], "num_batches_tracked");
    assert_int_equal(ct_tensor_dtype(count), CT_I64);
    assert_true(value_of(count) == 1.0);
    ct_release(count);
    ct_module_free(bn[0]);
    ct_module_free(bn[1]);
}

/* ---- cross-entropy ---- */

static void cross_entropy_in_16_bits_is_float32_rounded(ct_device device, ct_dtype dtype)
{
    enum { N = 8, C = 5 };
    double values[N * C];
    draw(values, N * C, -4, 4, 4, false);
    ct_tensor *target = class_targets(N, C, device);
    for (int smoothing = 0; smoothing < 2; smoothing++) {
        ct_tensor *logits[2], *loss[2];
        twin_leaves(values, (int64_t[]){N, C}, 2, dtype, device, &logits[0], &logits[1]);
        for (int m = 0; m < 2; m++) {
            loss[m] = ct_cross_entropy(logits[m], target, smoothing ? 0.1 : 0.0);
            assert_non_null(loss[m]);
            assert_ok(ct_backward(loss[m]));
        }
        assert_within_units(loss[0], loss[1], dtype, 1, 1e-3, "cross_entropy loss");
        assert_within_units(ct_grad(logits[0]), ct_grad(logits[1]), dtype, 1, 1e-3, "logits gradient");
    }
}

/* ---- optimizer steps ---- */

typedef ct_optimizer *(*make_optimizer)(ct_tensor *param);

static ct_optimizer *make_sgd(ct_tensor *param)
{
    ct_sgd_options o = {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true};
    return ct_optim_sgd_params(&param, 1, &o);
}

static ct_optimizer *make_adam(ct_tensor *param)
{
    ct_adam_options o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    return ct_optim_adam_params(&param, 1, &o);
}

static ct_optimizer *make_adamw(ct_tensor *param)
{
    ct_adam_options o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    return ct_optim_adamw_params(&param, 1, &o);
}

/* Three steps from the same parameter and gradients: the 16-bit parameter and state (rounded
 * after every step) stay within 4 units of float32's. Gradients are at least 0.1 in size:
 * float16 cannot hold 1e-3 g^2 of smaller ones (see docs/design.md, 16-bit models). */
static void steps_in_16_bits_follow_float32(ct_device device, ct_dtype dtype)
{
    enum { N = 24, STEPS = 3 };
    make_optimizer makes[3] = {make_sgd, make_adam, make_adamw};
    const char *state_names[3][2] = {
        {"momentum_buffer"}, {"exp_avg", "exp_avg_sq"}, {"exp_avg", "exp_avg_sq"}};
    double start[N], grads[STEPS][N];
    draw(start, N, -2, 2, 5, false);
    for (int s = 0; s < STEPS; s++) draw(grads[s], N, -1, 1, 6 + (unsigned)s, true);
    for (int o = 0; o < 3; o++) {
        ct_tensor *param[2];
        twin_leaves(start, (int64_t[]){N}, 1, dtype, device, &param[0], &param[1]);
        ct_optimizer *opt[2] = {makes[o](param[0]), makes[o](param[1])};
        assert_true(opt[0] && opt[1]);
        for (int s = 0; s < STEPS; s++)
            for (int m = 0; m < 2; m++) {
                ct_tensor *g = tensor_of(grads[s], (int64_t[]){N}, 1, ct_tensor_dtype(param[m]), device);
                assert_ok(ct_backward_with(param[m], g, false));
                assert_ok(ct_optimizer_step(opt[m]));
                ct_optimizer_zero_grad(opt[m]);
            }
        assert_within_units(param[0], param[1], dtype, 4, 1, "parameter");
        for (int k = 0; k < 2 && state_names[o][k]; k++) {
            ct_tensor *low = ct_optimizer_state(opt[0], 0, state_names[o][k]);
            ct_tensor *wide = ct_optimizer_state(opt[1], 0, state_names[o][k]);
            /* the state keeps the parameter's dtype; momentum sums terms that cancel */
            assert_within_units(low, wide, dtype, 4, -1, state_names[o][k]);
            ct_release(low);
            ct_release(wide);
        }
        ct_optimizer_free(opt[0]);
        ct_optimizer_free(opt[1]);
    }
}

/* ---- training: average pooling, cross-entropy, SGD ---- */

static ct_optimizer *make_training_sgd(ct_tensor *param)
{
    ct_sgd_options o = {.lr = 2.0, .momentum = 0.9};
    return ct_optim_sgd_params(&param, 1, &o);
}

/* Trains free scores [N, C, 2, 2], pooled to logits [N, C], towards fixed classes. (SGD: their
 * gradients, below 0.01, are too small for float16 Adam's exp_avg_sq.) */
static void training_in_16_bits_follows_float32(ct_device device, ct_dtype dtype)
{
    enum { N = 8, C = 5, STEPS = 12 };
    double start[N * C * 4];
    draw(start, N * C * 4, -1, 1, 9, false);
    ct_tensor *target = class_targets(N, C, device);
    ct_tensor *scores[2];
    twin_leaves(start, (int64_t[]){N, C, 2, 2}, 4, dtype, device, &scores[0], &scores[1]);
    ct_optimizer *opt[2] = {make_training_sgd(scores[0]), make_training_sgd(scores[1])};
    double first = 0, last[2] = {0, 0};
    for (int s = 0; s < STEPS; s++)
        for (int m = 0; m < 2; m++) {
            ct_tensor *pooled = ct_avg_pool2d(scores[m], (int64_t[]){2, 2}, NULL, NULL, false);
            ct_tensor *logits = pooled ? ct_reshape(pooled, (int64_t[]){N, C}, 2) : NULL;
            ct_tensor *loss = logits ? ct_cross_entropy(logits, target, 0.0) : NULL;
            assert_non_null(loss);
            assert_int_equal(ct_tensor_dtype(loss), ct_tensor_dtype(scores[m]));
            assert_ok(ct_backward(loss));
            assert_ok(ct_optimizer_step(opt[m]));
            ct_optimizer_zero_grad(opt[m]);
            last[m] = value_of(loss);
            if (s == 0 && m == 0) first = last[0];
        }
    if (!(last[0] < first - 0.05))
        fail_msg("%s: the loss went from %g to %g", ct_dtype_name(dtype), first, last[0]);
    if (!(fabs(last[0] - last[1]) <= 8 * unit(dtype) * fmax(1, fabs(last[1]))))
        fail_msg("%s: the last loss is %.9g, float32's %.9g", ct_dtype_name(dtype), last[0], last[1]);
    assert_within_units(scores[0], scores[1], dtype, 8, 1, "trained scores");
    ct_optimizer_free(opt[0]);
    ct_optimizer_free(opt[1]);
}

/* ---- an MLP: two Linear layers (16-bit matrix products), cross-entropy, SGD ---- */

static ct_module *mlp(ct_dtype dtype, ct_device device)
{
    ct_manual_seed(7);
    ct_module *net = ct_sequential((ct_module *[]){ct_linear(6, 16, true), ct_linear(16, 4, true)}, 2);
    assert_non_null(net);
    assert_ok(ct_module_to_dtype(net, dtype));
    assert_ok(ct_module_to(net, device));
    return net;
}

static void mlp_in_16_bits_follows_float32(ct_device device, ct_dtype dtype)
{
    enum { N = 12, STEPS = 5 };
    double features[N * 6];
    draw(features, N * 6, -2, 2, 11, false);
    ct_tensor *target = class_targets(N, 4, device);
    ct_module *net[2] = {mlp(dtype, device), mlp(dtype, device)};
    assert_ok(ct_module_to_dtype(net[1], CT_F32)); /* the same rounded weights, in float32 */
    ct_sgd_options o = {.lr = 0.5, .momentum = 0.9};
    ct_optimizer *opt[2] = {ct_optim_sgd(net[0], &o), ct_optim_sgd(net[1], &o)};
    ct_tensor *x = tensor_of(features, (int64_t[]){N, 6}, 2, dtype, device);
    ct_tensor *xs[2] = {x, ct_to_dtype(x, CT_F32)};
    double first = 0, last[2] = {0, 0};
    for (int s = 0; s < STEPS; s++)
        for (int m = 0; m < 2; m++) {
            ct_tensor *loss = ct_cross_entropy(ct_module_forward(net[m], xs[m]), target, 0.0);
            assert_non_null(loss);
            ct_optimizer_zero_grad(opt[m]);
            assert_ok(ct_backward(loss));
            assert_ok(ct_optimizer_step(opt[m]));
            last[m] = value_of(loss);
            if (s == 0 && m == 0) first = last[0];
        }
    if (!(last[0] < first))
        fail_msg("%s: the loss went from %g to %g", ct_dtype_name(dtype), first, last[0]);
    if (!(fabs(last[0] - last[1]) <= 16 * unit(dtype) * fmax(1, fabs(last[1]))))
        fail_msg("%s: the last loss is %.9g, float32's %.9g", ct_dtype_name(dtype), last[0], last[1]);
    ct_named_tensors *p[2] = {ct_module_named_parameters(net[0]), ct_module_named_parameters(net[1])};
    for (int64_t i = 0; i < p[0]->count; i++)
        assert_within_units(p[0]->tensors[i], p[1]->tensors[i], dtype, 16, 1, p[0]->names[i]);
    ct_named_tensors_free(p[0]);
    ct_named_tensors_free(p[1]);
    ct_optimizer_free(opt[0]);
    ct_optimizer_free(opt[1]);
    ct_module_free(net[0]);
    ct_module_free(net[1]);
}

typedef void (*device_check)(ct_device device, ct_dtype dtype);

static void on_every_device(device_check check)
{
    ct_device devices[2];
    int count;
    devices_under_test(&count, devices);
    for (int d = 0; d < count; d++)
        for (int k = 0; k < 2; k++) {
            ct_scope_push();
            check(devices[d], halves[k]);
            ct_scope_pop();
        }
}

static void batch_norm(void **state)
{
    (void)state;
    on_every_device(batch_norm_in_16_bits_is_float32_rounded);
}

static void cross_entropy(void **state)
{
    (void)state;
    on_every_device(cross_entropy_in_16_bits_is_float32_rounded);
}

static void optimizer_steps(void **state)
{
    (void)state;
    on_every_device(steps_in_16_bits_follow_float32);
}

static void training(void **state)
{
    (void)state;
    on_every_device(training_in_16_bits_follows_float32);
}

static void mlp_training(void **state)
{
    (void)state;
    on_every_device(mlp_in_16_bits_follows_float32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_to_16_bits_converts_floating_tensors_only),
        cmocka_unit_test(batch_norm),
        cmocka_unit_test(cross_entropy),
        cmocka_unit_test(optimizer_steps),
        cmocka_unit_test(training),
        cmocka_unit_test(mlp_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
