/* ExponentialLR, MultiStepLR, LambdaLR (a C callback per group), SequentialLR, ChainedScheduler and
 * ReduceLROnPlateau over two parameter groups give PyTorch's rates step by step
 * (scheduler_fixture.h, made by make_scheduler_fixture.py), with the optimizer's parameters on the
 * CPU and on every OpenCL device; misuse is refused by name. */
#include <math.h>

#include "optim/scheduler_fixture.h"
#include "test_common.h"

enum { STEPS = 10 };
static const double metrics[STEPS] = {1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85};

static ct_optimizer *two_groups(ct_device device, ct_tensor **a, ct_tensor **b)
{
    *a = ct_zeros((int64_t[]){2}, 1, CT_F32, device);
    *b = ct_zeros((int64_t[]){3}, 1, CT_F32, device);
    ct_param_group groups[2] = {ct_param_group_of(a, 1), ct_param_group_of(b, 1)};
    groups[0].lr = 0.1, groups[1].lr = 0.02;
    ct_sgd_options o = ct_sgd_options_default(0.5);
    ct_optimizer *opt = ct_optim_sgd_groups(groups, 2, &o);
    assert_non_null(opt);
    return opt;
}

static double lambda(int64_t epoch, int64_t group, void *context)
{
    (void)context;
    return group == 0 ? pow(0.5, (double)epoch) : 1.0 / (1.0 + (double)epoch);
}

static ct_lr_scheduler *make(int kind, ct_optimizer *o)
{
    ct_lr_scheduler *s = NULL, *parts[2] = {NULL, NULL};
    ct_status status = CT_OK;
    switch (kind) {
    case 0: status = ct_lr_scheduler_exponential(o, 0.9, &s); break;
    case 1: status = ct_lr_scheduler_multi_step(o, (const int64_t[]){2, 5}, 2, 0.5, &s); break;
    case 2: status = ct_lr_scheduler_lambda(o, lambda, NULL, &s); break;
    case 3:
        assert_int_equal(ct_lr_scheduler_linear(o, 0.25, 1.0, 3, &parts[0]), CT_OK);
        assert_int_equal(ct_lr_scheduler_exponential(o, 0.8, &parts[1]), CT_OK);
        status = ct_lr_scheduler_sequential(parts, 2, (const int64_t[]){3}, &s);
        break;
    case 4:
        assert_int_equal(ct_lr_scheduler_step_lr(o, 2, 0.5, &parts[0]), CT_OK);
        assert_int_equal(ct_lr_scheduler_exponential(o, 0.9, &parts[1]), CT_OK);
        status = ct_lr_scheduler_chained(parts, 2, &s);
        break;
    default: {
        ct_plateau_options p = ct_plateau_options_default();
        p.factor = 0.5, p.patience = 1, p.cooldown = 1, p.min_lr = 0.001;
        status = ct_lr_scheduler_reduce_on_plateau(o, &p, &s);
    }
    }
    if (status != CT_OK) fail_msg("scheduler %d: %s", kind, ct_last_error_message());
    return s;
}

static void check_on(ct_device device)
{
    static const double *const want[6] = {scheduler_fixture_exponential, scheduler_fixture_multi_step,
                                          scheduler_fixture_lambda,      scheduler_fixture_sequential,
                                          scheduler_fixture_chained,     scheduler_fixture_plateau};
    for (int kind = 0; kind < 6; kind++) {
        ct_tensor *a, *b;
        ct_optimizer *o = two_groups(device, &a, &b);
        ct_lr_scheduler *s = make(kind, o);
        for (int t = 0; t <= STEPS; t++) {
            if (t > 0)
                assert_int_equal(kind == 5 ? ct_lr_scheduler_step_metric(s, metrics[t - 1]) : ct_lr_scheduler_step(s),
                                 CT_OK);
            for (int g = 0; g < 2; g++) {
                double got = ct_optimizer_group_lr(o, g), expect = want[kind][2 * t + g];
                if (!(fabs(got - expect) <= 1e-13 * expect))
                    fail_msg("%s step %d group %d: %.17g, PyTorch %.17g", ct_lr_scheduler_kind(s), t, g, got, expect);
            }
            assert_true(ct_lr_scheduler_get_last_lr(s) == ct_optimizer_group_lr(o, 0));
        }
        ct_lr_scheduler_free(s);
        ct_optimizer_free(o);
        ct_release(a);
        ct_release(b);
    }
}

static void rates_equal_pytorchs_on_every_device(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

static void misuse_is_refused(void **state)
{
    (void)state;
    ct_tensor *a, *b;
    ct_optimizer *o = two_groups(CT_DEVICE_CPU, &a, &b);
    ct_release(a), ct_release(b); /* the optimizers hold them */
    ct_optimizer *other = two_groups(CT_DEVICE_CPU, &a, &b);
    ct_release(a), ct_release(b);
    ct_lr_scheduler *s = NULL, *p = make(5, o), *c = NULL;
    assert_int_equal(ct_lr_scheduler_step(p), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_lr_scheduler_step_metric");
    assert_int_equal(ct_lr_scheduler_set_last_epoch(p, 3), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "no closed form");
    assert_int_equal(ct_lr_scheduler_multi_step(o, (const int64_t[]){3, 2}, 2, 0.5, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "milestones[1] is 2; the milestones must increase");
    assert_int_equal(ct_lr_scheduler_lambda(o, NULL, NULL, &s), CT_ERR_NULL_ARGUMENT);
    assert_int_equal(ct_lr_scheduler_exponential(o, 0.0, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "gamma is 0");
    ct_plateau_options bad = ct_plateau_options_default();
    bad.factor = 1.0;
    assert_int_equal(ct_lr_scheduler_reduce_on_plateau(o, &bad, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "Factor should be < 1.0");
    assert_int_equal(ct_lr_scheduler_cosine_annealing(o, 4, 0.0, &c), CT_OK);
    assert_int_equal(ct_lr_scheduler_step_metric(c, 1.0), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_lr_scheduler_chained((ct_lr_scheduler *[]){c}, 1, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "schedulers[0] is a CosineAnnealingLR");
    assert_int_equal(ct_lr_scheduler_sequential((ct_lr_scheduler *[]){c, p}, 2, (const int64_t[]){2}, &s),
                     CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ReduceLROnPlateau cannot be part of a sequence");
    ct_lr_scheduler *elsewhere = NULL;
    assert_int_equal(ct_lr_scheduler_exponential(other, 0.5, &elsewhere), CT_OK);
    assert_int_equal(ct_lr_scheduler_sequential((ct_lr_scheduler *[]){c, elsewhere}, 2, (const int64_t[]){2}, &s),
                     CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "steers another optimizer");
    assert_int_equal(ct_lr_scheduler_sequential((ct_lr_scheduler *[]){c, c}, 2, (const int64_t[]){2}, &s),
                     CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "are the same");
    assert_null(s);
    /* refused composites leave their schedulers to the caller */
    ct_lr_scheduler_free(elsewhere);
    ct_lr_scheduler_free(c);
    ct_lr_scheduler_free(p);
    ct_optimizer_free(o);
    ct_optimizer_free(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rates_equal_pytorchs_on_every_device),
        cmocka_unit_test(misuse_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
