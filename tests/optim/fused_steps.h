/* The checks of the fused optimizer steps on one device, shared by
 * tests/optim/test_fused_steps_equal_steps_per_parameter.c (the CPU, PoCL) and
 * tests/cuda/test_cuda_fused_optimizer_steps.c (the stand-in): steps of SGD (plain, momentum,
 * Nesterov and weight decay), Adam and AdamW over 13 parameters (more than a launch takes, in
 * float32 and float64, empty, 0-d, a strided one, one without a gradient at one step) give the
 * same bits fused as per parameter, and a step costs a launch per 8 parameters. Capturable Adam
 * and AdamW (kinds 6, 7: the step count and bias correction on the device) give the bits of the
 * same optimizers that are not capturable, and cost a launch per 8 parameters (the step records
 * advanced) and one per 6 (the step). */
#ifndef CT_TEST_OPTIM_FUSED_STEPS_H
#define CT_TEST_OPTIM_FUSED_STEPS_H

#include <math.h>
#include <string.h>

#include "optim/optimizer_internal.h"
#include "test_common.h"

enum { FUSED_PARAMS = 13, FUSED_STEPS = 3, FUSED_KINDS = 8, FUSED_FIRST_CAPTURABLE = 6 };

static ct_tensor *fused_make_param(int k, ct_device device, bool same_shape)
{
    static const int64_t shapes[FUSED_PARAMS][3] = {{5, 4}, {7}, {0, 3}, {3, 4, 5}, {0}, {6, 5},
                                                     {2, 3}, {9}, {4, 4}, {3, 3}, {1}, {8, 2}, {5}};
    static const int ndims[FUSED_PARAMS] = {2, 1, 2, 3, 0, 2, 2, 1, 2, 2, 1, 2, 1};
    int64_t square[2] = {4, 4};
    const int64_t *shape = same_shape ? square : shapes[k];
    int ndim = same_shape ? 2 : ndims[k];
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double values[64];
    for (int64_t i = 0; i < n; i++) values[i] = sin(1.0 + 0.37 * (double)i + 0.9 * k);
    ct_dtype dtype = !same_shape && k % 4 == 3 ? CT_F64 : CT_F32;
    ct_tensor *d = ct_tensor_from_data(values, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *c = ct_to_dtype(d, dtype);
    ct_tensor *t = ct_to(c, device);
    ct_release(d);
    ct_release(c);
    if (!same_shape && k == 5) { /* a strided parameter: updated through a contiguous copy */
        ct_tensor *strided = ct_transpose(t, 0, 1);
        ct_tensor *leaf = ct_detach(strided);
        ct_release(strided);
        ct_release(t);
        t = leaf;
    }
    assert_non_null(t);
    return t;
}

/* kind's optimizer; a capturable kind made not capturable when `capturable` is false. */
static ct_optimizer *fused_make_optimizer_as(int kind, ct_tensor *const *params, int count, bool capturable)
{
    ct_sgd_options sgd = ct_sgd_options_default(0.1);
    ct_adam_options adam = ct_adam_options_default(1e-2);
    if (kind >= FUSED_FIRST_CAPTURABLE) {
        if (kind == FUSED_FIRST_CAPTURABLE) adam.weight_decay = 0.1;
        else adam = ct_adamw_options_default(1e-2);
        adam.capturable = capturable;
        return kind == FUSED_FIRST_CAPTURABLE ? ct_optim_adam_params(params, count, &adam)
                                              : ct_optim_adamw_params(params, count, &adam);
    }
    switch (kind) {
    case 0: return ct_optim_sgd_params(params, count, &sgd);
    case 1: sgd.momentum = 0.9, sgd.dampening = 0.25, sgd.weight_decay = 0.01;
            return ct_optim_sgd_params(params, count, &sgd);
    case 2: sgd.momentum = 0.9, sgd.nesterov = true, sgd.weight_decay = 0.01;
            return ct_optim_sgd_params(params, count, &sgd);
    case 3: return ct_optim_adam_params(params, count, &adam);
    case 4: adam.weight_decay = 0.1; return ct_optim_adam_params(params, count, &adam);
    default: adam = ct_adamw_options_default(1e-2); return ct_optim_adamw_params(params, count, &adam);
    }
}

static ct_optimizer *fused_make_optimizer(int kind, ct_tensor *const *params, int count)
{
    return fused_make_optimizer_as(kind, params, count, true);
}

/* Sets each parameter's gradient for a step (none for parameter 1 at step 1). */
static void fused_set_grads(ct_tensor *const *params, int count, int step)
{
    for (int k = 0; k < count; k++) {
        if (k == 1 && step == 1) continue;
        ct_no_grad_push();
        ct_tensor *g = ct_mul_scalar(params[k], -0.5 - 0.25 * step);
        ct_tensor *s = ct_tanh(g);
        ct_no_grad_pop();
        assert_int_equal(ct_backward_with(params[k], s, false), CT_OK);
        ct_release(g);
        ct_release(s);
    }
}

static void fused_expect_same_bits(const ct_tensor *a, const ct_tensor *b, const char *what)
{
    size_t bytes = (size_t)ct_numel(a) * ct_dtype_size(ct_tensor_dtype(a));
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    assert_int_equal(ct_tensor_to_array(a, x, bytes), CT_OK);
    assert_int_equal(ct_tensor_to_array(b, y, bytes), CT_OK);
    if (memcmp(x, y, bytes) != 0) fail_msg("%s: the fused step differs from the steps per parameter", what);
    free(x), free(y);
}

/* Fused and per-parameter steps of every kind from the same start give the same bits (a
 * capturable kind's per-parameter steps not capturable); the parameters alternate between
 * devices a and b (one launch group per device and dtype). */
static inline void fused_check_same_bits(ct_device a, ct_device b)
{
    for (int kind = 0; kind < FUSED_KINDS; kind++) {
        ct_tensor *params[2][FUSED_PARAMS];
        ct_optimizer *o[2];
        for (int way = 0; way < 2; way++) {
            for (int k = 0; k < FUSED_PARAMS; k++) params[way][k] = fused_make_param(k, k % 2 ? b : a, false);
            o[way] = fused_make_optimizer_as(kind, params[way], FUSED_PARAMS, way == 0);
            assert_non_null(o[way]);
            ct_optimizer_set_per_parameter(o[way], way == 1);
        }
        for (int step = 0; step < FUSED_STEPS; step++)
            for (int way = 0; way < 2; way++) {
                fused_set_grads(params[way], FUSED_PARAMS, step);
                assert_int_equal(ct_optimizer_step(o[way]), CT_OK);
                ct_optimizer_zero_grad(o[way]);
            }
        /* a capturable optimizer's counts are its devices': parameter 1 missed a step */
        assert_int_equal(ct_optimizer_steps(o[0]), FUSED_STEPS);
        for (int k = 0; k < FUSED_PARAMS; k++) {
            char what[96];
            snprintf(what, sizeof what, "%s, kind %d, parameter %d", ct_optimizer_kind(o[0]), kind, k);
            fused_expect_same_bits(params[0][k], params[1][k], what);
            for (int slot = 0; slot < ct_optim_state_count(o[0]); slot++) {
                const char *name = ct_optim_state_name(o[0], slot);
                if (kind == 0) break; /* plain SGD keeps no state */
                ct_tensor *s0 = ct_optimizer_state(o[0], k, name), *s1 = ct_optimizer_state(o[1], k, name);
                assert_non_null(s0);
                assert_non_null(s1);
                fused_expect_same_bits(s0, s1, what);
                ct_release(s0), ct_release(s1);
            }
        }
        for (int way = 0; way < 2; way++) {
            ct_optimizer_free(o[way]);
            for (int k = 0; k < FUSED_PARAMS; k++) ct_release(params[way][k]);
        }
    }
}

/* The launches of one step (after the first, which makes the state) of models of 1, 2, 8 and 30
 * float32 parameters of several shapes, as ct_device_kernel_launches counts them: a launch (SGD)
 * or two (Adam) per parameter, and fused one per 8 parameters, so a lone Adam parameter is one;
 * a capturable Adam's, a launch per 8 parameters to advance the step records and one per 6. */
static inline void fused_check_launch_counts(ct_device device)
{
    static const int models[] = {1, 2, 8, 30};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++)
        for (int kind = 0; kind < FUSED_KINDS; kind++)
            for (int way = 0; way < 2; way++) {
                int count = models[m];
                ct_tensor *params[30];
                for (int k = 0; k < count; k++) {
                    int64_t shape[2] = {1 + k % 5, 3};
                    params[k] = ct_full(shape, 2, 0.5 + 0.01 * k, CT_F32, device);
                    assert_non_null(params[k]);
                }
                ct_optimizer *o = fused_make_optimizer(kind, params, count);
                ct_optimizer_set_per_parameter(o, way == 1);
                uint64_t launches = 0;
                for (int step = 0; step < 2; step++) {
                    fused_set_grads(params, count, 0);
                    uint64_t before = 0, after = 0;
                    assert_int_equal(ct_device_kernel_launches(device, &before), CT_OK);
                    assert_int_equal(ct_optimizer_step(o), CT_OK);
                    assert_int_equal(ct_device_kernel_launches(device, &after), CT_OK);
                    launches = after - before;
                    ct_optimizer_zero_grad(o);
                }
                uint64_t want = way == 1 ? (uint64_t)count * (kind >= 3 ? 2 : 1) : (uint64_t)(count + 7) / 8;
                if (kind >= FUSED_FIRST_CAPTURABLE && way == 0) want += (uint64_t)(count + 5) / 6;
                if (launches != want)
                    fail_msg("%s (kind %d) over %d parameters %s: %llu launches per step, expected %llu",
                             ct_optimizer_kind(o), kind, count, way == 1 ? "per parameter" : "fused",
                             (unsigned long long)launches, (unsigned long long)want);
                ct_optimizer_free(o);
                for (int k = 0; k < count; k++) ct_release(params[k]);
            }
}

#endif
