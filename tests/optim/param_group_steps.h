/* Parameter groups against PyTorch, on one device: SGD, Adam, AdamW, RMSprop (centered and not) and
 * Adagrad over two groups (decay and no decay, their own lr, momentum and betas) equal torch.optim's numbers with the same
 * param_groups (param_group_fixture.h, made by make_param_group_fixture.py), fused, per parameter,
 * capturable (Adam, AdamW) and through ct_optimizer_step_unscaled; in float64 (to 1e-12) and
 * float32. Shared by tests/optim/test_param_groups.c (the CPU, PoCL) and the stand-in CUDA tests. */
#ifndef CT_TEST_OPTIM_PARAM_GROUP_STEPS_H
#define CT_TEST_OPTIM_PARAM_GROUP_STEPS_H

#include <math.h>

#include "ctorch/optim.h"
#include "optim/param_group_fixture.h"
#include "test_common.h"

enum { GROUP_PARAMS = 3, GROUP_STEPS = 4, GROUP_VALUES = 12 };
static const int64_t group_sizes[GROUP_PARAMS] = {5, 3, 4};

typedef enum group_way { GROUP_FUSED, GROUP_PER_PARAMETER, GROUP_CAPTURABLE, GROUP_UNSCALED } group_way;

static double group_initial(int k, int i) { return 0.5 - 0.3 * i + 0.05 * i * i + 0.1 * k; }
static double group_gradient(int step, int k, int i)
{
    return sin(1.0 + 0.7 * i + 1.3 * step + 0.5 * k) * (1.0 + 0.5 * step);
}

enum { GROUP_KINDS = 6 };
/* kind 0 SGD, 1 Adam, 2 AdamW, 3 RMSprop centered, 4 RMSprop, 5 Adagrad: the fixture's
 * param_groups and options. */
static ct_optimizer *group_optimizer(int kind, ct_tensor **p, bool capturable)
{
    ct_tensor *decay[2] = {p[0], p[2]};
    ct_param_group groups[2] = {ct_param_group_of(decay, 2), ct_param_group_of(&p[1], 1)};
    if (kind == 0) {
        groups[0].lr = 0.05, groups[0].weight_decay = 0.1, groups[0].momentum = 0.9;
        groups[1].lr = 0.2, groups[1].weight_decay = 0.0, groups[1].momentum = 0.5;
        ct_sgd_options o = ct_sgd_options_default(0.01);
        o.dampening = 0.1;
        return ct_optim_sgd_groups(groups, 2, &o);
    }
    if (kind == 3 || kind == 4) {
        groups[0].lr = 0.01, groups[0].weight_decay = 0.1, groups[0].momentum = kind == 3 ? 0.5 : 0.9;
        groups[1].lr = 0.02, groups[1].weight_decay = 0.0, groups[1].momentum = 0.0;
        ct_rmsprop_options o = ct_rmsprop_options_default(0.001);
        if (kind == 3) o.alpha = 0.9, o.eps = 1e-6, o.centered = true;
        return ct_optim_rmsprop_groups(groups, 2, kind == 3 ? &o : NULL); /* NULL: PyTorch's defaults */
    }
    if (kind == 5) {
        groups[0].lr = 0.05, groups[0].weight_decay = 0.1;
        groups[1].lr = 0.1, groups[1].weight_decay = 0.0;
        ct_adagrad_options o = ct_adagrad_options_default(0.01);
        o.lr_decay = 0.1, o.initial_accumulator_value = 0.1;
        return ct_optim_adagrad_groups(groups, 2, &o);
    }
    groups[0].lr = 0.01, groups[0].weight_decay = 0.1;
    groups[1].lr = 0.03, groups[1].weight_decay = 0.0, groups[1].beta1 = 0.8, groups[1].beta2 = 0.99;
    ct_adam_options o = ct_adam_options_default(0.001);
    o.eps = 1e-6;
    o.capturable = capturable;
    return kind == 1 ? ct_optim_adam_groups(groups, 2, &o) : ct_optim_adamw_groups(groups, 2, &o);
}

static ct_tensor *group_tensor(const double *values, int64_t n, ct_dtype dtype, ct_device device)
{
    ct_tensor *d = ct_tensor_from_data(values, CT_F64, &n, 1, CT_DEVICE_CPU);
    ct_tensor *c = ct_to_dtype(d, dtype);
    ct_tensor *t = ct_to(c, device);
    ct_release(d);
    ct_release(c);
    assert_non_null(t);
    return t;
}

/* GROUP_STEPS steps one way; the parameters' values, in parameter order, into out. */
static void group_run(int kind, group_way way, ct_dtype dtype, ct_device device, double *out)
{
    ct_tensor *p[GROUP_PARAMS];
    for (int k = 0; k < GROUP_PARAMS; k++) {
        double v[8];
        for (int i = 0; i < group_sizes[k]; i++) v[i] = group_initial(k, i);
        p[k] = group_tensor(v, group_sizes[k], dtype, device);
    }
    ct_optimizer *o = group_optimizer(kind, p, way == GROUP_CAPTURABLE);
    assert_non_null(o);
    assert_int_equal(ct_optimizer_group_count(o), 2);
    assert_int_equal(ct_optimizer_set_fused(o, way != GROUP_PER_PARAMETER), CT_OK);
    double scale = way == GROUP_UNSCALED ? 4.0 : 1.0; /* a power of two: unscaling is exact */
    for (int step = 0; step < GROUP_STEPS; step++) {
        for (int k = 0; k < GROUP_PARAMS; k++) {
            double g[8];
            for (int i = 0; i < group_sizes[k]; i++) g[i] = scale * group_gradient(step, k, i);
            ct_tensor *gt = group_tensor(g, group_sizes[k], dtype, device);
            assert_int_equal(ct_backward_with(p[k], gt, false), CT_OK);
            ct_release(gt);
        }
        if (way == GROUP_UNSCALED) {
            bool found_inf = true;
            assert_int_equal(ct_optimizer_step_unscaled(o, 1.0 / scale, &found_inf), CT_OK);
            assert_false(found_inf);
        } else {
            assert_int_equal(ct_optimizer_step(o), CT_OK);
        }
        ct_optimizer_zero_grad(o);
    }
    assert_int_equal(ct_optimizer_steps(o), GROUP_STEPS);
    int64_t at = 0;
    for (int k = 0; k < GROUP_PARAMS; k++) {
        ct_tensor *c = ct_to_dtype(p[k], CT_F64);
        ct_tensor *h = ct_to(c, CT_DEVICE_CPU);
        assert_int_equal(ct_tensor_to_array(h, out + at, (size_t)group_sizes[k] * sizeof(double)), CT_OK);
        at += group_sizes[k];
        ct_release(c);
        ct_release(h);
        ct_release(p[k]);
    }
    ct_optimizer_free(o);
}

static void group_check_against_pytorch(ct_device device)
{
    static const double *const want[GROUP_KINDS] = {
        param_group_fixture_sgd,     param_group_fixture_adam, param_group_fixture_adamw,
        param_group_fixture_rmsprop_centered, param_group_fixture_rmsprop, param_group_fixture_adagrad};
    static const char *const names[GROUP_KINDS] = {"SGD", "Adam", "AdamW", "RMSprop centered", "RMSprop", "Adagrad"};
    static const char *const ways[4] = {"fused", "per parameter", "capturable", "unscaled"};
    for (int kind = 0; kind < GROUP_KINDS; kind++)
        for (int way = GROUP_FUSED; way <= GROUP_UNSCALED; way++) {
            if (way == GROUP_CAPTURABLE && kind != 1 && kind != 2) continue;
            for (int d = 0; d < 2; d++) {
                ct_dtype dtype = d ? CT_F32 : CT_F64;
                double got[GROUP_VALUES];
                group_run(kind, (group_way)way, dtype, device, got);
                for (int i = 0; i < GROUP_VALUES; i++) {
                    double tol = dtype == CT_F64 ? 1e-12 : 2e-6;
                    if (!(fabs(got[i] - want[kind][i]) <= tol * (1.0 + fabs(want[kind][i]))))
                        fail_msg("%s %s %s: value %d is %.17g, PyTorch's %.17g", names[kind], ways[way],
                                 dtype == CT_F64 ? "float64" : "float32", i, got[i], want[kind][i]);
                }
            }
        }
}

#endif
