/* Helpers of the DataParallel tests (on PoCL's two devices and on the fake backend's): models
 * made from a seed, batches, training loops, and every parameter's values or gradients as one
 * array of doubles. */
#ifndef CT_TEST_DATA_PARALLEL_TEST_H
#define CT_TEST_DATA_PARALLEL_TEST_H

#include <stdatomic.h>

#include "device/backend_interface.h" /* CT_MAX_DEVICES_PER_TYPE */
#include "nn/nn_test.h"

enum { DP_IN = 6, DP_HIDDEN = 16, DP_OUT = 3, DP_MAX_VALUES = 1024 };

#define DEVICE0 ((ct_device){CT_OPENCL, 0})
#define DEVICE1 ((ct_device){CT_OPENCL, 1})

/* The PoCL tests need two OpenCL devices (the suite's environment gives two). They may be in
 * two contexts (a GPU's platform and PoCL's): DataParallel's copies between them then go through
 * the host, with the same results. */
#define NEED_TWO_DEVICES()                                                                         \
    do {                                                                                           \
        if (ct_device_count(CT_OPENCL) < 2) {                                                      \
            print_message("needs two OpenCL devices, found %d (%s): skipped\n",                   \
                          ct_device_count(CT_OPENCL), ct_backend_unavailable_reason(CT_OPENCL));   \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static const ct_device dp_two_devices[2] = {{CT_OPENCL, 0}, {CT_OPENCL, 1}};
static const ct_device dp_one_device[1] = {{CT_OPENCL, 0}};

/* Linear, ReLU, Linear, initialised from seed, on device. */
static inline ct_module *dp_make_mlp(uint64_t seed, ct_device device)
{
    ct_manual_seed(seed);
    ct_module *m = ct_sequential((ct_module *[]){ct_linear(DP_IN, DP_HIDDEN, true), ct_relu_module(),
                                                 ct_linear(DP_HIDDEN, DP_OUT, true)}, 3);
    assert_non_null(m);
    assert_int_equal(ct_module_to(m, device), CT_OK);
    return m;
}

/* Linear, BatchNorm1d, ReLU, Linear. */
static inline ct_module *dp_make_batch_norm_model(uint64_t seed, ct_device device)
{
    ct_manual_seed(seed);
    ct_module *m = ct_sequential((ct_module *[]){ct_linear(DP_IN, DP_HIDDEN, true),
                                                 ct_batch_norm1d(DP_HIDDEN, NULL), ct_relu_module(),
                                                 ct_linear(DP_HIDDEN, DP_OUT, true)}, 4);
    assert_non_null(m);
    assert_int_equal(ct_module_to(m, device), CT_OK);
    return m;
}

/* One Linear(6, 6) called twice (its weight reached under two names, "0." and "1."), then a
 * Linear(6, 3): tied weights are replicated once and get the sum of both uses' gradients. */
static inline ct_module *dp_make_tied_mlp(uint64_t seed, ct_device device)
{
    ct_manual_seed(seed);
    ct_module *shared = ct_linear(DP_IN, DP_IN, true);
    ct_module *m = ct_sequential((ct_module *[]){ct_module_retain(shared), shared,
                                                 ct_linear(DP_IN, DP_OUT, true)}, 3);
    assert_non_null(m);
    assert_int_equal(ct_module_to(m, device), CT_OK);
    return m;
}

/* The BatchNorm model with running statistics of its own: three training forwards (no grad) on
 * batches drawn from seed. */
static inline ct_module *dp_make_warm_batch_norm_model(uint64_t seed, ct_device device)
{
    ct_module *m = dp_make_batch_norm_model(seed, device);
    ct_no_grad_push();
    for (int i = 0; i < 3; i++) {
        ct_manual_seed(seed * 31 + (uint64_t)i);
        ct_tensor *x = ct_randn((int64_t[]){10, DP_IN}, 2, CT_F32, device);
        ct_tensor *shifted = ct_add_scalar(x, 0.5 * i);
        ct_tensor *y = ct_module_forward(m, shifted);
        assert_non_null(y);
        ct_release(x);
        ct_release(shifted);
        ct_release(y);
    }
    ct_no_grad_pop();
    return m;
}

/* rows of inputs and regression targets from seed, on the cpu. */
static inline void dp_make_batch(uint64_t seed, int64_t rows, ct_tensor **x, ct_tensor **target)
{
    ct_manual_seed(seed);
    *x = ct_randn((int64_t[]){rows, DP_IN}, 2, CT_F32, CT_DEVICE_CPU);
    *target = ct_randn((int64_t[]){rows, DP_OUT}, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(*x);
    assert_non_null(*target);
}

/* One step: forward through `forward` (a DataParallel or a plain module), MSE against target on
 * the output's device, backward, and an optimizer step when there is one. */
static inline void dp_step(ct_module *forward, ct_optimizer *optimizer, const ct_tensor *x,
                           const ct_tensor *target)
{
    ct_scope_push();
    if (optimizer) ct_optimizer_zero_grad(optimizer);
    ct_tensor *y = ct_module_forward(forward, x);
    if (!y) fail_msg("forward: %s", ct_last_error_message());
    ct_tensor *t = ct_to(target, ct_tensor_device(y));
    ct_tensor *loss = ct_mse_loss(y, t);
    if (!loss) fail_msg("loss: %s", ct_last_error_message());
    assert_int_equal(ct_backward(loss), CT_OK);
    if (optimizer) assert_int_equal(ct_optimizer_step(optimizer), CT_OK);
    ct_scope_pop();
}

static inline ct_optimizer *dp_sgd(ct_module *m)
{
    ct_sgd_options o = ct_sgd_options_default(0.05);
    o.momentum = 0.9;
    ct_optimizer *optimizer = ct_optim_sgd(m, &o);
    assert_non_null(optimizer);
    return optimizer;
}

/* ---- the equivalences: 2 devices against 1, with the same global batch ---- */

typedef ct_module *(*dp_model_maker)(uint64_t seed, ct_device device);

/* After one forward and backward of `rows` rows, the wrapped module's gradients on two devices are
 * those on one device, within 1e-5 relative. eval: the models run in eval mode. */
static inline void dp_check_gradients_match(dp_model_maker make, int64_t rows, bool eval)
{
    ct_module *one = make(7, DEVICE0), *two = make(7, DEVICE0);
    ct_module *dp_one = ct_data_parallel(one, dp_one_device, 1, DEVICE0);
    ct_module *dp_two = ct_data_parallel(two, dp_two_devices, 2, DEVICE0);
    assert_non_null(dp_one);
    assert_non_null(dp_two);
    if (eval) {
        ct_module_eval(dp_one);
        ct_module_eval(dp_two);
    }
    ct_tensor *x, *target;
    dp_make_batch(11, rows, &x, &target);
    dp_step(dp_one, NULL, x, target);
    dp_step(dp_two, NULL, x, target);
    double want[DP_MAX_VALUES], got[DP_MAX_VALUES];
    int64_t n = module_parameter_values(one, true, want, DP_MAX_VALUES);
    assert_int_equal(module_parameter_values(two, true, got, DP_MAX_VALUES), n);
    assert_close_to_scale(got, want, n, 1e-5, "gradient");
    ct_release(x);
    ct_release(target);
    ct_module_release(dp_one);
    ct_module_release(dp_two);
    ct_module_release(one);
    ct_module_release(two);
}

/* After `steps` SGD steps (momentum) on the same batches, the parameters on two devices are those
 * on one device, within 1e-4 relative. */
static inline void dp_check_training_matches(dp_model_maker make, int steps, bool eval)
{
    ct_module *one = make(5, DEVICE0), *two = make(5, DEVICE0);
    ct_module *dp_one = ct_data_parallel(one, dp_one_device, 1, DEVICE0);
    ct_module *dp_two = ct_data_parallel(two, dp_two_devices, 2, DEVICE0);
    assert_non_null(dp_one);
    assert_non_null(dp_two);
    if (eval) {
        ct_module_eval(dp_one);
        ct_module_eval(dp_two);
    }
    ct_optimizer *opt_one = dp_sgd(dp_one), *opt_two = dp_sgd(dp_two);
    for (int step = 0; step < steps; step++) {
        ct_tensor *x, *target;
        dp_make_batch(100 + (uint64_t)step, 12, &x, &target);
        dp_step(dp_one, opt_one, x, target);
        dp_step(dp_two, opt_two, x, target);
        ct_release(x);
        ct_release(target);
    }
    double want[DP_MAX_VALUES], got[DP_MAX_VALUES];
    int64_t n = module_parameter_values(one, false, want, DP_MAX_VALUES);
    assert_int_equal(module_parameter_values(two, false, got, DP_MAX_VALUES), n);
    assert_close_to_scale(got, want, n, 1e-4, "parameter");
    ct_optimizer_free(opt_one);
    ct_optimizer_free(opt_two);
    ct_module_release(dp_one);
    ct_module_release(dp_two);
    ct_module_release(one);
    ct_module_release(two);
}

/* ---- a module that notes the batch size each device sees (seed 003's FooNet prints it) ---- */

/* Rows and forwards seen on opencl:i (-1 and 0 where the device ran no replica). */
enum { DP_MAX_SEEN = CT_MAX_DEVICES_PER_TYPE };
static _Atomic int64_t dp_rows_seen[DP_MAX_SEEN];
static atomic_int dp_forwards_seen[DP_MAX_SEEN];

static inline ct_tensor *dp_noting_forward(ct_module *self, const ct_tensor *x)
{
    ct_device d = ct_tensor_device(x);
    if (d.type == CT_OPENCL && d.index >= 0 && d.index < DP_MAX_SEEN) {
        atomic_store(&dp_rows_seen[d.index], ct_tensor_size(x, 0));
        atomic_fetch_add(&dp_forwards_seen[d.index], 1);
    }
    return ct_module_forward(ct_module_child(self, "body"), x);
}

static inline void dp_reset_seen(void)
{
    for (int i = 0; i < DP_MAX_SEEN; i++) {
        atomic_store(&dp_rows_seen[i], -1);
        atomic_store(&dp_forwards_seen[i], 0);
    }
}

/* An MLP inside a module that notes what it sees. */
static inline ct_module *dp_make_noting_mlp(uint64_t seed, ct_device device)
{
    ct_module *body = dp_make_mlp(seed, device);
    ct_module *m = ct_module_create("Noting", dp_noting_forward, NULL, NULL);
    assert_non_null(m);
    assert_int_equal(ct_module_register_module(m, "body", body), CT_OK);
    ct_module_release(body);
    return m;
}

#endif
