/* The learning-rate schedulers against PyTorch's values: StepLR, CosineAnnealingLR, LinearLR and
 * OneCycleLR, each over a run of steps whose learning rates are written out below from
 * torch.optim.lr_scheduler's closed forms; the optimizer's rate follows get_last_lr; a count
 * restored with set_last_epoch continues with the same bits as one never stopped; bad arguments
 * and OneCycleLR's end are refused with PyTorch's messages. */
#include <stdint.h>
#include "nn/nn_test.h"

#include <string.h>

/* An SGD optimizer over one parameter, at learning rate lr. */
static ct_optimizer *optimizer_at(double lr, ct_tensor **param)
{
    *param = ct_zeros((int64_t[]){3}, 1, CT_F32, CT_DEVICE_CPU);
    ct_sgd_options o = ct_sgd_options_default(lr);
    ct_optimizer *opt = ct_optim_sgd_params(param, 1, &o);
    assert_non_null(opt);
    return opt;
}

/* The scheduler's rates at counts 0..n-1 (the constructor's, then n - 1 steps) match want
 * within a few ulps, and the optimizer's rate is the scheduler's each time. */
static void assert_schedule(ct_lr_scheduler *s, const ct_optimizer *opt, const double *want, int n, const char *what)
{
    for (int t = 0; t < n; t++) {
        if (t > 0) assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
        double got = ct_lr_scheduler_get_last_lr(s);
        assert_int_equal(ct_lr_scheduler_last_epoch(s), t);
        if (!(fabs(got - want[t]) <= 1e-15 + 1e-13 * fabs(want[t])))
            fail_msg("%s at step %d: got %.17g, want %.17g", what, t, got, want[t]);
        assert_true(ct_optimizer_lr(opt) == got);
    }
}

static void step_lr_decays_every_step_size_steps(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *opt = optimizer_at(0.1, &p);
    ct_lr_scheduler *s;
    assert_int_equal(ct_lr_scheduler_step_lr(opt, 3, 0.5, &s), CT_OK);
    assert_string_equal(ct_lr_scheduler_kind(s), "StepLR");
    /* StepLR(step_size=3, gamma=0.5) from lr 0.1: 0.1 * 0.5 ** (t // 3). */
    const double want[] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125};
    assert_schedule(s, opt, want, 10, "StepLR");
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);
    ct_release(p);
}

static void cosine_annealing_follows_the_half_cosine(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *opt = optimizer_at(1.0, &p);
    ct_lr_scheduler *s;
    assert_int_equal(ct_lr_scheduler_cosine_annealing(opt, 4, 0.0, &s), CT_OK);
    /* CosineAnnealingLR(T_max=4, eta_min=0) from lr 1: (1 + cos(pi t / 4)) / 2, on past T_max. */
    const double want[] = {1.0, 0.8535533905932737, 0.5, 0.14644660940672627, 0.0, 0.14644660940672616,
                           0.4999999999999999, 0.8535533905932737, 1.0};
    assert_schedule(s, opt, want, 9, "CosineAnnealingLR");
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);

    ct_release(p);
    /* eta_min: 0.1 + (1 - 0.1) (1 + cos(pi t / 2)) / 2. */
    opt = optimizer_at(1.0, &p);
    assert_int_equal(ct_lr_scheduler_cosine_annealing(opt, 2, 0.1, &s), CT_OK);
    const double with_min[] = {1.0, 0.55, 0.1};
    assert_schedule(s, opt, with_min, 3, "CosineAnnealingLR with eta_min");
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);
    ct_release(p);
}

static void linear_lr_warms_up_then_holds(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *opt = optimizer_at(0.4, &p);
    ct_lr_scheduler *s;
    assert_int_equal(ct_lr_scheduler_linear(opt, 0.25, 1.0, 3, &s), CT_OK);
    /* LinearLR(start_factor=0.25, end_factor=1, total_iters=3) from lr 0.4. */
    const double want[] = {0.1, 0.2, 0.3, 0.4, 0.4, 0.4};
    assert_schedule(s, opt, want, 6, "LinearLR");
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);
    ct_release(p);
}

static void one_cycle_rises_then_anneals_to_its_floor(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *opt = optimizer_at(123.0, &p); /* OneCycleLR ignores the optimizer's rate */
    ct_lr_scheduler *s;
    ct_one_cycle_options o = ct_one_cycle_options_default();
    assert_true(o.pct_start == 0.3 && o.div_factor == 25.0 && o.final_div_factor == 1e4 && !o.linear_anneal);
    assert_int_equal(ct_lr_scheduler_one_cycle(opt, 1.0, 10, &o, &s), CT_OK);
    /* OneCycleLR(max_lr=1, total_steps=10): initial 1/25 = 0.04, up to 1 at step 0.3 * 10 - 1 = 2,
     * then cosine down to 0.04 / 1e4 at step 9; step 10 is still allowed (pct 8/7). */
    const double want[] = {0.040000000000000036, 0.52, 1.0, 0.9504846320134737, 0.8117456539497631,
                           0.6112620219362893, 0.38874197806371075, 0.18825834605023697, 0.049519367986526286,
                           4e-06, 0.04951936798652623};
    assert_schedule(s, opt, want, 11, "OneCycleLR");
    assert_int_equal(ct_lr_scheduler_step(s), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "Tried to step 11 times. The specified number of total "
                                                    "steps is 10"));
    assert_int_equal(ct_lr_scheduler_last_epoch(s), 10); /* the refused step changed nothing */
    ct_lr_scheduler_free(s);

    /* Linear annealing: 0.04 -> 1 over 2 steps, 1 -> 4e-6 over 7. */
    o.linear_anneal = true;
    assert_int_equal(ct_lr_scheduler_one_cycle(opt, 1.0, 10, &o, &s), CT_OK);
    const double linear[] = {0.04, 0.52, 1.0, 1.0 - (1.0 - 4e-6) / 7.0};
    assert_schedule(s, opt, linear, 4, "OneCycleLR linear");
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);
    ct_release(p);
}

/* Resuming: a scheduler set to count k gives, from there on, exactly the rates of one stepped k
 * times. */
static void a_restored_count_continues_with_the_same_rates(void **state)
{
    (void)state;
    for (int kind = 0; kind < 4; kind++) {
        ct_tensor *p1, *p2;
        ct_optimizer *o1 = optimizer_at(0.3, &p1), *o2 = optimizer_at(0.3, &p2);
        ct_lr_scheduler *a = NULL, *b = NULL;
        for (int i = 0; i < 2; i++) {
            ct_optimizer *o = i ? o2 : o1;
            ct_lr_scheduler **s = i ? &b : &a;
            ct_status status = kind == 0   ? ct_lr_scheduler_step_lr(o, 2, 0.7, s)
                               : kind == 1 ? ct_lr_scheduler_cosine_annealing(o, 9, 0.01, s)
                               : kind == 2 ? ct_lr_scheduler_linear(o, 0.1, 0.9, 5, s)
                                           : ct_lr_scheduler_one_cycle(o, 0.5, 12, NULL, s);
            assert_int_equal(status, CT_OK);
        }
        for (int t = 0; t < 5; t++) assert_int_equal(ct_lr_scheduler_step(a), CT_OK);
        assert_int_equal(ct_lr_scheduler_set_last_epoch(b, 5), CT_OK);
        for (int t = 5; t <= 11; t++) {
            if (ct_lr_scheduler_get_last_lr(a) != ct_lr_scheduler_get_last_lr(b))
                fail_msg("%s at %d: %.17g stepped, %.17g restored", ct_lr_scheduler_kind(a), t,
                         ct_lr_scheduler_get_last_lr(a), ct_lr_scheduler_get_last_lr(b));
            assert_true(ct_optimizer_lr(o1) == ct_optimizer_lr(o2));
            assert_int_equal(ct_lr_scheduler_step(a), CT_OK);
            assert_int_equal(ct_lr_scheduler_step(b), CT_OK);
        }
        ct_lr_scheduler_free(a);
        ct_lr_scheduler_free(b);
        ct_optimizer_free(o1);
        ct_optimizer_free(o2);
        ct_release(p1);
        ct_release(p2);
    }
}

/* Issue 26: a count of INT64_MAX cannot advance (no signed overflow), and a cosine whose eta_min
 * is near DBL_MAX computes its values without overflow (its factor in [0, 1] first). */
static void huge_counts_and_values_stay_defined(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *o = optimizer_at(0.3, &p);
    ct_lr_scheduler *s = NULL;
    assert_int_equal(ct_lr_scheduler_step_lr(o, 2, 0.5, &s), CT_OK);
    assert_int_equal(ct_lr_scheduler_set_last_epoch(s, INT64_MAX), CT_OK);
    assert_int_equal(ct_lr_scheduler_step(s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the count of steps is 9223372036854775807");
    assert_int_equal(ct_lr_scheduler_last_epoch(s), INT64_MAX);
    ct_lr_scheduler_free(s);
    assert_int_equal(ct_optimizer_set_lr(o, 0.3), CT_OK);
    assert_int_equal(ct_lr_scheduler_cosine_annealing(o, 4, 1e308, &s), CT_OK);
    for (int t = 1; t <= 4; t++) {
        assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
        double lr = ct_optimizer_lr(o);
        if (!(isfinite(lr) && lr >= 0.3 && lr <= 1e308)) fail_msg("step %d: lr %g", t, lr);
    }
    assert_true(ct_optimizer_lr(o) == 1e308);
    ct_lr_scheduler_free(s);
    /* StepLR growing past DBL_MAX: refused by name, the rate left as it was */
    assert_int_equal(ct_optimizer_set_lr(o, 0.3), CT_OK);
    assert_int_equal(ct_lr_scheduler_step_lr(o, 1, 1e300, &s), CT_OK);
    assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
    assert_int_equal(ct_lr_scheduler_step(s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "StepLR's learning rate at step 2");
    assert_true(ct_optimizer_lr(o) == 0.3 * 1e300);
    assert_int_equal(ct_lr_scheduler_last_epoch(s), 1);
    ct_lr_scheduler_free(s);
    ct_optimizer_free(o);
    ct_release(p);
}

/* A scheduler's rate is the one the optimizer steps with. */
static void the_optimizer_steps_with_the_scheduled_rate(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *opt = optimizer_at(1.0, &p);
    ct_lr_scheduler *s;
    assert_int_equal(ct_lr_scheduler_step_lr(opt, 1, 0.5, &s), CT_OK);
    double want = 0.0;
    for (int step = 0; step < 3; step++) {
        ct_tensor *loss = ct_sum(p, NULL, 0, false); /* gradient 1 everywhere */
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_release(loss);
        assert_int_equal(ct_optimizer_step(opt), CT_OK);
        ct_optimizer_zero_grad(opt);
        want -= ct_lr_scheduler_get_last_lr(s); /* 1, 0.5, 0.25 */
        assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
    }
    double got[3];
    values_of(p, got, 3);
    for (int i = 0; i < 3; i++) assert_true(got[i] == -1.75 && want == -1.75);
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);
    ct_release(p);
}

/* The call's status and its *out are read after the call (the argument order is unspecified). */
static void expect_refused(ct_status status, ct_lr_scheduler *const *s, const char *part)
{
    assert_int_not_equal(status, CT_OK);
    assert_null(*s);
    if (!strstr(ct_last_error_message(), part)) fail_msg("'%s' lacks '%s'", ct_last_error_message(), part);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    ct_tensor *p;
    ct_optimizer *opt = optimizer_at(0.1, &p);
    ct_lr_scheduler *s = (ct_lr_scheduler *)&s; /* must be set to NULL */
    expect_refused(ct_lr_scheduler_step_lr(opt, 0, 0.5, &s), &s, "step_size is 0; it must be at least 1");
    expect_refused(ct_lr_scheduler_step_lr(opt, 2, 0.0, &s), &s, "gamma is 0");
    expect_refused(ct_lr_scheduler_step_lr(NULL, 2, 0.5, &s), &s, "optimizer");
    assert_int_equal(ct_lr_scheduler_step_lr(opt, 2, 0.5, NULL), CT_ERR_NULL_ARGUMENT);
    expect_refused(ct_lr_scheduler_cosine_annealing(opt, 0, 0.0, &s), &s, "t_max is 0");
    expect_refused(ct_lr_scheduler_cosine_annealing(opt, 5, -1.0, &s), &s, "eta_min is -1");
    expect_refused(ct_lr_scheduler_linear(opt, 0.0, 1.0, 5, &s), &s, "Starting multiplicative factor expected");
    expect_refused(ct_lr_scheduler_linear(opt, 0.5, 1.5, 5, &s), &s, "Ending multiplicative factor expected");
    expect_refused(ct_lr_scheduler_linear(opt, 0.5, 1.0, 0, &s), &s, "total_iters is 0");
    expect_refused(ct_lr_scheduler_one_cycle(opt, 0.0, 10, NULL, &s), &s, "max_lr is 0");
    expect_refused(ct_lr_scheduler_one_cycle(opt, 1.0, 1, NULL, &s), &s, "total_steps is 1");
    ct_one_cycle_options o = ct_one_cycle_options_default();
    o.pct_start = 1.5;
    expect_refused(ct_lr_scheduler_one_cycle(opt, 1.0, 10, &o, &s), &s, "Expected float between 0 and 1 pct_start");
    o.pct_start = 0.05; /* 0.05 * 10 - 1 < 0: the rise has no step */
    expect_refused(ct_lr_scheduler_one_cycle(opt, 1.0, 10, &o, &s), &s, "leaves a phase without steps");
    assert_true(ct_optimizer_lr(opt) == 0.1); /* nothing refused touched the optimizer */

    assert_int_equal(ct_lr_scheduler_step_lr(opt, 2, 0.5, &s), CT_OK);
    assert_int_equal(ct_lr_scheduler_set_last_epoch(s, -1), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_lr_scheduler_step(NULL), CT_ERR_NULL_ARGUMENT);
    assert_true(isnan(ct_lr_scheduler_get_last_lr(NULL)));
    assert_int_equal(ct_lr_scheduler_last_epoch(NULL), -1);
    ct_lr_scheduler_free(s);
    ct_lr_scheduler_free(NULL);
    ct_optimizer_free(opt);
    ct_release(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(step_lr_decays_every_step_size_steps),
        cmocka_unit_test(cosine_annealing_follows_the_half_cosine),
        cmocka_unit_test(linear_lr_warms_up_then_holds),
        cmocka_unit_test(one_cycle_rises_then_anneals_to_its_floor),
        cmocka_unit_test(a_restored_count_continues_with_the_same_rates),
        cmocka_unit_test(the_optimizer_steps_with_the_scheduled_rate),
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(huge_counts_and_values_stay_defined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
