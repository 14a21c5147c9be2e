/* ct_optimizer_load_state_dict checks every value before it changes anything (issue 26): a
 * missing exp_avg or step, a step that is negative, fractional, NaN, 1e30 or 2^63-1, lr -1 or NaN,
 * eps -1, beta1 1, beta2 2, nesterov 3 are refused by name, and the optimizer keeps its state,
 * even when an early parameter's entries were fine and a later one's were not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "test_common.h"

enum { N = 3 };

static ct_tensor *param(int k)
{
    return ct_full((int64_t[]){4}, 1, 0.5 + k, CT_F32, CT_DEVICE_CPU);
}

/* Two steps of o over p. */
static void two_steps(ct_optimizer *o, ct_tensor **p)
{
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < N; k++) {
            ct_tensor *g = ct_full((int64_t[]){4}, 1, 0.1 * (k + 1) + step, CT_F32, CT_DEVICE_CPU);
            assert_int_equal(ct_backward_with(p[k], g, false), CT_OK);
            ct_release(g);
        }
        assert_int_equal(ct_optimizer_step(o), CT_OK);
        ct_optimizer_zero_grad(o);
    }
}

static void set_scalar(ct_state_dict *sd, const char *name, double value, ct_dtype dtype)
{
    if (ct_state_dict_contains(sd, name)) assert_int_equal(ct_state_dict_remove(sd, name), CT_OK);
    ct_tensor *t;
    if (dtype == CT_I64) { /* exactly, up to INT64_MAX (which a double does not hold) */
        int64_t whole = value >= 9.2e18 ? INT64_MAX : (int64_t)value;
        t = ct_tensor_from_data(&whole, CT_I64, NULL, 0, CT_DEVICE_CPU);
    } else {
        t = ct_full(NULL, 0, value, dtype, CT_DEVICE_CPU);
    }
    assert_non_null(t);
    assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
    ct_release(t);
}

/* o's whole state, to compare before and after a refused load. */
static double fingerprint(ct_optimizer *o)
{
    double sum = (double)ct_optimizer_steps(o) * 1000.0 + ct_optimizer_lr(o);
    for (int64_t i = 0; i < ct_optimizer_param_count(o); i++) {
        ct_tensor *m = ct_optimizer_state(o, i, "exp_avg");
        if (!m) {
            ct_clear_error();
            continue;
        }
        float v[4];
        assert_int_equal(ct_tensor_to_array(m, v, sizeof v), CT_OK);
        sum += v[0] * (double)(i + 1);
        ct_release(m);
    }
    return sum;
}

typedef struct tamper {
    const char *name; /* set to value (or removed: NAN with remove) */
    double value;
    ct_dtype dtype;
    bool remove;
    const char *message;
} tamper;

static void bad_values_change_nothing(void **state)
{
    (void)state;
    ct_tensor *p[N], *q[N];
    for (int k = 0; k < N; k++) p[k] = param(k), q[k] = param(k);
    ct_optimizer *a = ct_optim_adamw_params(p, N, NULL);
    two_steps(a, p);
    ct_optimizer *b = ct_optim_adamw_params(q, N, NULL);
    two_steps(b, q);
    two_steps(b, q); /* 4 steps: other state than a's */
    const tamper cases[] = {
        {"state.2.exp_avg", 0, CT_F32, true, "no 'state.2.exp_avg'"},
        {"state.2.step", 0, CT_I64, true, "no 'state.2.step'"},
        {"state.2.step", -1, CT_I64, false, "'state.2.step' is -1"},
        {"state.2.step", 2.5, CT_F64, false, "'state.2.step' is 2.5"},
        {"state.2.step", NAN, CT_F64, false, "'state.2.step' is nan"},
        {"state.2.step", 1e30, CT_F64, false, "'state.2.step' is 1e+30"},
        {"state.2.step", 9223372036854775807.0, CT_I64, false, "a whole number from 0 to 2^53"},
        {"param_groups.0.lr", -1, CT_F64, false, "Invalid learning rate: -1"},
        {"param_groups.0.lr", NAN, CT_F64, false, "Invalid learning rate: nan"},
        {"param_groups.0.eps", -1, CT_F64, false, "Invalid epsilon value: -1"},
        {"param_groups.0.beta1", 1, CT_F64, false, "Invalid beta parameter at index 0: 1"},
        {"param_groups.0.beta2", 2, CT_F64, false, "Invalid beta parameter at index 1: 2"},
        {"param_groups.0.weight_decay", NAN, CT_F64, false, "Invalid weight_decay value: nan"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ct_state_dict *sd = ct_optimizer_state_dict(a);
        assert_non_null(sd);
        if (cases[c].remove)
            assert_int_equal(ct_state_dict_remove(sd, cases[c].name), CT_OK);
        else
            set_scalar(sd, cases[c].name, cases[c].value, cases[c].dtype);
        double before = fingerprint(b);
        if (ct_optimizer_load_state_dict(b, sd) != CT_ERR_INVALID_ARGUMENT)
            fail_msg("%s: loaded (%s)", cases[c].message, ct_last_error_message());
        assert_error(CT_ERR_INVALID_ARGUMENT, cases[c].message);
        assert_true(fingerprint(b) == before); /* parameters 0 and 1 were fine: not loaded either */
        assert_int_equal(ct_optimizer_steps(b), 4);
        ct_state_dict_free(sd);
    }
    /* untampered: loads */
    ct_state_dict *sd = ct_optimizer_state_dict(a);
    assert_int_equal(ct_optimizer_load_state_dict(b, sd), CT_OK);
    assert_int_equal(ct_optimizer_steps(b), 2);
    ct_state_dict_free(sd);
    ct_optimizer_free(a);
    ct_optimizer_free(b);
    for (int k = 0; k < N; k++) ct_release(p[k]), ct_release(q[k]);
}

static void bad_sgd_values_are_refused(void **state)
{
    (void)state;
    ct_tensor *p[N];
    for (int k = 0; k < N; k++) p[k] = param(k);
    ct_sgd_options o = ct_sgd_options_default(0.1);
    o.momentum = 0.9;
    ct_optimizer *a = ct_optim_sgd_params(p, N, &o);
    two_steps(a, p);
    const tamper cases[] = {
        {"param_groups.0.momentum", -0.5, CT_F64, false, "Invalid momentum value: -0.5"},
        {"param_groups.0.nesterov", 3, CT_F64, false, "nesterov is 3"},
        {"param_groups.0.dampening", INFINITY, CT_F64, false, "Invalid dampening value: inf"},
        {"state.1.step", -3, CT_I64, false, "'state.1.step' is -3"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ct_state_dict *sd = ct_optimizer_state_dict(a);
        set_scalar(sd, cases[c].name, cases[c].value, cases[c].dtype);
        assert_int_equal(ct_optimizer_load_state_dict(a, sd), CT_ERR_INVALID_ARGUMENT);
        assert_error(CT_ERR_INVALID_ARGUMENT, cases[c].message);
        assert_true(ct_optimizer_lr(a) == 0.1);
        assert_int_equal(ct_optimizer_steps(a), 2);
        ct_state_dict_free(sd);
    }
    ct_optimizer_free(a);
    for (int k = 0; k < N; k++) ct_release(p[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_values_change_nothing),
        cmocka_unit_test(bad_sgd_values_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
