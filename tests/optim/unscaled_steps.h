/* The checks of ct_optimizer_step_unscaled (loss scaling joined into the fused step) on one
 * device, shared by tests/optim/test_fused_step_unscales_gradients.c (the CPU, PoCL) and
 * tests/cuda/test_cuda_fused_optimizer_steps.c (the stand-in). Gradients of loss * 1024 (exact:
 * a power of 2) stepped with inv_scale 1/1024 give the bits of a plain step from the unscaled
 * gradients, fused and per parameter, and leave the unscaled gradients in .grad; an inf or NaN
 * (also one that only unscaling makes) changes nothing and is reported; a step costs a launch
 * per 8 gradients more than a plain one, and one wait of the host. */
#ifndef CT_TEST_OPTIM_UNSCALED_STEPS_H
#define CT_TEST_OPTIM_UNSCALED_STEPS_H

#include "optim/fused_steps.h"

/* Sets each parameter's gradient to scale times fused_set_grads' (step 0's, all present). */
static void unscaled_set_grads(ct_tensor *const *params, int count, double scale)
{
    fused_set_grads(params, count, 0);
    for (int k = 0; k < count; k++) {
        ct_tensor *g = ct_grad(params[k]);
        ct_tensor *scaled = ct_mul_scalar(g, scale);
        assert_int_equal(ct_copy_(g, scaled), CT_OK);
        ct_release(g), ct_release(scaled);
    }
}

static void unscaled_expect_params_equal(ct_tensor *const *a, ct_tensor *const *b, int count, const char *what)
{
    for (int k = 0; k < count; k++) fused_expect_same_bits(a[k], b[k], what);
}

/* Ways: 0 unscaled fused, 1 unscaled per parameter, 2 the reference (plain steps, no scale). */
static inline void unscaled_check_same_bits(ct_device device)
{
    for (int kind = 0; kind < FUSED_KINDS; kind++) {
        ct_tensor *params[3][FUSED_PARAMS];
        ct_optimizer *o[3];
        for (int way = 0; way < 3; way++) {
            for (int k = 0; k < FUSED_PARAMS; k++) params[way][k] = fused_make_param(k, device, false);
            o[way] = fused_make_optimizer(kind, params[way], FUSED_PARAMS);
            ct_optimizer_set_per_parameter(o[way], way == 1);
        }
        for (int step = 0; step < FUSED_STEPS; step++) {
            for (int way = 0; way < 3; way++) {
                bool found = true;
                unscaled_set_grads(params[way], FUSED_PARAMS, way == 2 ? 1.0 : 1024.0);
                if (way == 2) assert_int_equal(ct_optimizer_step(o[way]), CT_OK);
                else assert_int_equal(ct_optimizer_step_unscaled(o[way], 1.0 / 1024.0, &found), CT_OK);
                if (way < 2) assert_false(found);
            }
            for (int k = 0; k < FUSED_PARAMS; k++) /* .grad holds the unscaled gradients */
                for (int way = 0; way < 2; way++) {
                    ct_tensor *g = ct_grad(params[way][k]), *want = ct_grad(params[2][k]);
                    fused_expect_same_bits(g, want, "an unscaled gradient");
                    ct_release(g), ct_release(want);
                }
            for (int way = 0; way < 3; way++) ct_optimizer_zero_grad(o[way]);
        }
        unscaled_expect_params_equal(params[0], params[2], FUSED_PARAMS, "unscaled fused step");
        unscaled_expect_params_equal(params[1], params[2], FUSED_PARAMS, "unscaled step per parameter");
        for (int way = 0; way < 3; way++) {
            ct_optimizer_free(o[way]);
            for (int k = 0; k < FUSED_PARAMS; k++) ct_release(params[way][k]);
        }
    }
}

/* One bad value in one gradient (inf, NaN, or 3e38 that unscaling by 4 takes past float32's
 * range): found, and nothing changed; the next good step goes on as if the bad one never was. */
static inline void unscaled_check_skips(ct_device device)
{
    static const double bad[3] = {INFINITY, NAN, 3e38};
    for (int kind = 0; kind < FUSED_KINDS; kind++)
        for (int b = 0; b < 3; b++) {
            ct_tensor *params[2][FUSED_PARAMS];
            ct_optimizer *o[2];
            for (int way = 0; way < 2; way++) {
                for (int k = 0; k < FUSED_PARAMS; k++) params[way][k] = fused_make_param(k, device, false);
                o[way] = fused_make_optimizer(kind, params[way], FUSED_PARAMS);
                unscaled_set_grads(params[way], FUSED_PARAMS, 1.0);
                assert_int_equal(ct_optimizer_step(o[way]), CT_OK); /* state to keep */
                ct_optimizer_zero_grad(o[way]);
            }
            double inv_scale = b == 2 ? 4.0 : 0.5;
            unscaled_set_grads(params[0], FUSED_PARAMS, 1.0 / inv_scale);
            ct_tensor *g = ct_grad(params[0][1]); /* float32 [7] */
            int64_t one = 1;
            ct_tensor *spot = ct_narrow(g, 0, 4, 1), *value = ct_full(&one, 1, bad[b], CT_F32, device);
            assert_int_equal(ct_copy_(spot, value), CT_OK);
            ct_release(spot), ct_release(value), ct_release(g);
            bool found = false;
            int64_t steps = ct_optimizer_steps(o[0]);
            assert_int_equal(ct_optimizer_step_unscaled(o[0], inv_scale, &found), CT_OK);
            assert_true(found);
            assert_int_equal(ct_optimizer_steps(o[0]), steps);
            unscaled_expect_params_equal(params[0], params[1], FUSED_PARAMS, "a skipped step");
            for (int way = 0; way < 2; way++) {
                ct_optimizer_zero_grad(o[way]);
                unscaled_set_grads(params[way], FUSED_PARAMS, way == 0 ? 2.0 : 1.0);
            }
            assert_int_equal(ct_optimizer_step_unscaled(o[0], 0.5, &found), CT_OK);
            assert_false(found);
            assert_int_equal(ct_optimizer_step(o[1]), CT_OK);
            unscaled_expect_params_equal(params[0], params[1], FUSED_PARAMS, "the step after a skipped one");
            for (int way = 0; way < 2; way++) {
                ct_optimizer_free(o[way]);
                for (int k = 0; k < FUSED_PARAMS; k++) ct_release(params[way][k]);
            }
        }
}

/* 30 float32 parameters: a plain step's ceil(30/8) launches plus as many for the check. */
static inline void unscaled_check_launches(ct_device device)
{
    enum { COUNT = 30 };
    ct_tensor *params[COUNT];
    for (int k = 0; k < COUNT; k++) params[k] = fused_make_param(k, device, true);
    ct_adam_options adam = ct_adam_options_default(1e-3);
    ct_optimizer *o = ct_optim_adam_params(params, COUNT, &adam);
    for (int step = 0; step < 2; step++) {
        unscaled_set_grads(params, COUNT, 8.0);
        uint64_t before = 0, after = 0;
        ct_transfer_stats s0, s1;
        assert_int_equal(ct_device_kernel_launches(device, &before), CT_OK);
        assert_int_equal(ct_transfer_stats_get(device, &s0), CT_OK);
        bool found = true;
        assert_int_equal(ct_optimizer_step_unscaled(o, 0.125, &found), CT_OK);
        assert_false(found);
        assert_int_equal(ct_device_kernel_launches(device, &after), CT_OK);
        assert_int_equal(ct_transfer_stats_get(device, &s1), CT_OK);
        if (step == 1) { /* the first made the state */
            assert_int_equal(after - before, 2 * ((COUNT + 7) / 8));
            if (device.type != CT_CPU) assert_int_equal(s1.host_syncs - s0.host_syncs, 1);
        }
        ct_optimizer_zero_grad(o);
    }
    ct_optimizer_free(o);
    for (int k = 0; k < COUNT; k++) ct_release(params[k]);
}

#endif
