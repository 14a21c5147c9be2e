/* Parameter groups (PyTorch's param_groups): SGD, Adam, AdamW, RMSprop and Adagrad over two groups
 * equal torch.optim's numbers on the CPU and every OpenCL device (param_group_steps.h); the state dict
 * keeps the groups and loads them back; schedulers scale each group's own initial lr, llm.c's
 * warm-up cosine among them; a scheduler keeps its optimizer; bad groups are refused by name. */
#include "optim/param_group_steps.h"

static void groups_equal_pytorch_on_the_cpu(void **state)
{
    (void)state;
    group_check_against_pytorch(CT_DEVICE_CPU);
}

static void groups_equal_pytorch_on_opencl(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    for (int i = 0; i < count; i++) group_check_against_pytorch((ct_device){CT_OPENCL, i});
}

static void make_params(ct_tensor **p)
{
    for (int k = 0; k < GROUP_PARAMS; k++) {
        double v[8];
        for (int i = 0; i < group_sizes[k]; i++) v[i] = group_initial(k, i);
        p[k] = group_tensor(v, group_sizes[k], CT_F64, CT_DEVICE_CPU);
    }
}

static void take_step(ct_optimizer *o, ct_tensor **p, int step)
{
    for (int k = 0; k < GROUP_PARAMS; k++) {
        double g[8];
        for (int i = 0; i < group_sizes[k]; i++) g[i] = group_gradient(step, k, i);
        ct_tensor *gt = group_tensor(g, group_sizes[k], CT_F64, CT_DEVICE_CPU);
        assert_int_equal(ct_backward_with(p[k], gt, false), CT_OK);
        ct_release(gt);
    }
    assert_int_equal(ct_optimizer_step(o), CT_OK);
    ct_optimizer_zero_grad(o);
}

static double scalar_of(const ct_state_dict *sd, const char *name)
{
    ct_tensor *t = ct_state_dict_get(sd, name);
    assert_non_null(t);
    double v = 0;
    assert_int_equal(ct_item(t, &v), CT_OK);
    ct_release(t);
    return v;
}

/* Saved after 2 steps, loaded into an optimizer made with other hyperparameters: the groups'
 * come back, and 2 more steps give the bits of the run never stopped. */
static void the_state_dict_keeps_the_groups(void **state)
{
    (void)state;
    ct_tensor *p[GROUP_PARAMS], *q[GROUP_PARAMS];
    make_params(p);
    make_params(q);
    ct_optimizer *a = group_optimizer(2, p, false);
    take_step(a, p, 0);
    take_step(a, p, 1);
    ct_state_dict *sd = ct_optimizer_state_dict(a);
    assert_non_null(sd);
    assert_true(scalar_of(sd, "param_groups.0.lr") == 0.01);
    assert_true(scalar_of(sd, "param_groups.1.lr") == 0.03);
    assert_true(scalar_of(sd, "param_groups.0.weight_decay") == 0.1);
    assert_true(scalar_of(sd, "param_groups.1.weight_decay") == 0.0);
    assert_true(scalar_of(sd, "param_groups.1.beta1") == 0.8);
    assert_true(scalar_of(sd, "param_groups.1.params") == 2.0); /* p[1]: after group 0's two */

    /* the same parameters in the same groups, every hyperparameter the optimizer's */
    ct_tensor *decay[2] = {q[0], q[2]};
    ct_param_group groups[2] = {ct_param_group_of(decay, 2), ct_param_group_of(&q[1], 1)};
    ct_optimizer *b = ct_optim_adamw_groups(groups, 2, NULL);
    assert_non_null(b);
    assert_true(ct_optimizer_group_lr(b, 1) == 1e-3);
    /* the parameters' values as a's */
    for (int k = 0; k < GROUP_PARAMS; k++) {
        ct_no_grad_push();
        assert_int_equal(ct_copy_(q[k], p[k]), CT_OK);
        ct_no_grad_pop();
    }
    assert_int_equal(ct_optimizer_load_state_dict(b, sd), CT_OK);
    assert_true(ct_optimizer_group_lr(b, 0) == 0.01);
    assert_true(ct_optimizer_group_lr(b, 1) == 0.03);
    assert_int_equal(ct_optimizer_steps(b), 2);
    for (int step = 2; step < 4; step++) {
        take_step(a, p, step);
        take_step(b, q, step);
    }
    for (int k = 0; k < GROUP_PARAMS; k++) {
        double x[8], y[8];
        assert_int_equal(ct_tensor_to_array(p[k], x, sizeof(double) * (size_t)group_sizes[k]), CT_OK);
        assert_int_equal(ct_tensor_to_array(q[k], y, sizeof(double) * (size_t)group_sizes[k]), CT_OK);
        assert_memory_equal(x, y, sizeof(double) * (size_t)group_sizes[k]);
    }

    /* one group where two were saved: refused, nothing changed */
    ct_optimizer *one = ct_optim_adamw_params(q, GROUP_PARAMS, NULL);
    assert_int_equal(ct_optimizer_load_state_dict(one, sd), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "different number of parameter groups (2 saved, 1 here)");
    assert_int_equal(ct_optimizer_steps(one), 0);
    ct_optimizer_free(one);
    /* groups of other sizes */
    ct_param_group other[2] = {ct_param_group_of(q, 1), ct_param_group_of(&q[1], 2)};
    ct_optimizer *c = ct_optim_adamw_groups(other, 2, NULL);
    assert_int_equal(ct_optimizer_load_state_dict(c, sd), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "(2 saved parameters, 1 here) in param_groups[0]");
    ct_optimizer_free(c);

    ct_state_dict_free(sd);
    ct_optimizer_free(a);
    ct_optimizer_free(b);
    for (int k = 0; k < GROUP_PARAMS; k++) {
        ct_release(p[k]);
        ct_release(q[k]);
    }
}

/* RMSprop (with its momentum buffer and grad_avg) and Adagrad resume from their state dicts with
 * the bits of the run never stopped; their hyperparameters go under PyTorch's names. */
static void rmsprop_and_adagrad_resume_from_their_state_dicts(void **state)
{
    (void)state;
    for (int kind = 3; kind <= 5; kind++) {
        ct_tensor *p[GROUP_PARAMS], *q[GROUP_PARAMS];
        make_params(p);
        make_params(q);
        ct_optimizer *a = group_optimizer(kind, p, false), *b = group_optimizer(kind, q, false);
        take_step(a, p, 0);
        take_step(a, p, 1);
        ct_state_dict *sd = ct_optimizer_state_dict(a);
        assert_non_null(sd);
        assert_true(ct_state_dict_contains(sd, kind == 5 ? "param_groups.1.lr_decay" : "param_groups.1.alpha"));
        assert_true(ct_state_dict_contains(sd, kind == 5 ? "state.0.sum" : "state.0.square_avg"));
        if (kind == 3) assert_true(ct_state_dict_contains(sd, "state.0.grad_avg"));
        if (kind != 5) assert_true(ct_state_dict_contains(sd, "state.0.momentum_buffer"));
        for (int k = 0; k < GROUP_PARAMS; k++) {
            ct_no_grad_push();
            assert_int_equal(ct_copy_(q[k], p[k]), CT_OK);
            ct_no_grad_pop();
        }
        assert_int_equal(ct_optimizer_load_state_dict(b, sd), CT_OK);
        for (int step = 2; step < 4; step++) {
            take_step(a, p, step);
            take_step(b, q, step);
        }
        for (int k = 0; k < GROUP_PARAMS; k++) {
            double x[8], y[8];
            assert_int_equal(ct_tensor_to_array(p[k], x, sizeof(double) * (size_t)group_sizes[k]), CT_OK);
            assert_int_equal(ct_tensor_to_array(q[k], y, sizeof(double) * (size_t)group_sizes[k]), CT_OK);
            assert_memory_equal(x, y, sizeof(double) * (size_t)group_sizes[k]);
        }
        ct_state_dict_free(sd);
        ct_optimizer_free(a);
        ct_optimizer_free(b);
        for (int k = 0; k < GROUP_PARAMS; k++) ct_release(p[k]), ct_release(q[k]);
    }
}

/* Each group's value from its own initial lr (PyTorch's base_lrs); set_lr sets them all. */
static void schedulers_scale_each_groups_lr(void **state)
{
    (void)state;
    ct_tensor *p[GROUP_PARAMS];
    make_params(p);
    ct_optimizer *o = group_optimizer(0, p, false); /* lrs 0.05 and 0.2 */
    ct_lr_scheduler *s = NULL;
    assert_int_equal(ct_lr_scheduler_step_lr(o, 2, 0.5, &s), CT_OK);
    for (int t = 1; t <= 5; t++) {
        assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
        double factor = pow(0.5, t / 2);
        assert_true(ct_optimizer_group_lr(o, 0) == 0.05 * factor);
        assert_true(ct_optimizer_group_lr(o, 1) == 0.2 * factor);
        assert_true(ct_lr_scheduler_get_last_lr(s) == 0.05 * factor);
        assert_true(ct_optimizer_lr(o) == 0.05 * factor);
    }
    ct_lr_scheduler_free(s);
    assert_int_equal(ct_optimizer_set_lr(o, 0.3), CT_OK);
    assert_true(ct_optimizer_group_lr(o, 0) == 0.3 && ct_optimizer_group_lr(o, 1) == 0.3);
    assert_int_equal(ct_optimizer_set_group_lr(o, 1, 0.7), CT_OK);
    assert_true(ct_optimizer_group_lr(o, 0) == 0.3 && ct_optimizer_group_lr(o, 1) == 0.7);
    assert_int_equal(ct_optimizer_set_group_lr(o, 2, 0.7), CT_ERR_INDEX);
    assert_error(CT_ERR_INDEX, "group 2 is out of range for an optimizer of 2 parameter groups");
    assert_true(isnan(ct_optimizer_group_lr(o, -1)));
    assert_error(CT_ERR_INDEX, "group -1");
    assert_int_equal(ct_optimizer_set_group_lr(o, 0, NAN), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "Invalid learning rate");
    ct_optimizer_free(o);
    for (int k = 0; k < GROUP_PARAMS; k++) ct_release(p[k]);
}

/* llm.c's get_learning_rate (train_gpt2.cu), in double. */
static double llmc_lr(double lr, int warmup, int total, double final_frac, int step)
{
    if (step < warmup) return lr * (step + 1) / warmup;
    double decay_ratio = (double)(step - warmup) / (total - warmup);
    double coeff = 0.5 * (1.0 + cos(M_PI * decay_ratio));
    double min_lr = lr * final_frac;
    return min_lr + coeff * (lr - min_lr);
}

static void warmup_cosine_follows_llmc(void **state)
{
    (void)state;
    ct_tensor *p[GROUP_PARAMS];
    make_params(p);
    ct_optimizer *o = group_optimizer(2, p, false); /* lrs 0.01 and 0.03 */
    const double base[2] = {0.01, 0.03};
    ct_lr_scheduler *s = NULL;
    assert_int_equal(ct_lr_scheduler_warmup_cosine(o, 3, 10, 0.1, &s), CT_OK);
    assert_string_equal(ct_lr_scheduler_kind(s), "WarmupCosine");
    for (int t = 0; t <= 13; t++) {
        if (t > 0) assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
        for (int g = 0; g < 2; g++) {
            double want = llmc_lr(base[g], 3, 10, 0.1, t > 10 ? 10 : t); /* min_lr from total_steps on */
            double got = ct_optimizer_group_lr(o, g);
            if (!(fabs(got - want) <= 1e-15 * want)) fail_msg("step %d group %d: %.17g, llm.c %.17g", t, g, got, want);
        }
    }
    assert_true(fabs(ct_lr_scheduler_get_last_lr(s) - 0.001) < 1e-18);
    /* resuming at a count gives that count's values */
    assert_int_equal(ct_lr_scheduler_set_last_epoch(s, 1), CT_OK);
    assert_true(fabs(ct_optimizer_group_lr(o, 1) - 0.02) < 1e-17);
    ct_lr_scheduler_free(s);
    /* no warm-up: the cosine from step 0 (from the lr the optimizer has now) */
    assert_int_equal(ct_optimizer_set_group_lr(o, 0, 0.01), CT_OK);
    assert_int_equal(ct_lr_scheduler_warmup_cosine(o, 0, 4, 0.0, &s), CT_OK);
    assert_true(ct_optimizer_group_lr(o, 0) == 0.01);
    ct_lr_scheduler_free(s);
    assert_int_equal(ct_lr_scheduler_warmup_cosine(o, 5, 5, 0.1, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "total_steps is 5; it must be above warmup_steps (5)");
    assert_int_equal(ct_lr_scheduler_warmup_cosine(o, -1, 5, 0.1, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "warmup_steps is -1");
    assert_int_equal(ct_lr_scheduler_warmup_cosine(o, 1, 5, 1.5, &s), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "min_lr_factor is 1.5");
    assert_null(s);
    ct_optimizer_free(o);
    for (int k = 0; k < GROUP_PARAMS; k++) ct_release(p[k]);
}

/* A scheduler holds a reference to its optimizer: freeing the optimizer first leaves it alive
 * (holding its parameters) until the scheduler goes. */
static void a_scheduler_keeps_its_optimizer(void **state)
{
    (void)state;
    ct_tensor *p[GROUP_PARAMS];
    make_params(p);
    ct_optimizer *o = group_optimizer(1, p, false);
    ct_lr_scheduler *s = NULL;
    assert_int_equal(ct_lr_scheduler_cosine_annealing(o, 4, 0.0, &s), CT_OK);
    int held = ct_refcount(p[0]);
    ct_optimizer_free(o);
    assert_int_equal(ct_refcount(p[0]), held); /* still the optimizer's */
    assert_int_equal(ct_lr_scheduler_step(s), CT_OK);
    ct_lr_scheduler_free(s);
    assert_int_equal(ct_refcount(p[0]), held - 1);
    for (int k = 0; k < GROUP_PARAMS; k++) ct_release(p[k]);
}

static void bad_groups_are_refused(void **state)
{
    (void)state;
    ct_tensor *p[GROUP_PARAMS];
    make_params(p);
    ct_param_group groups[2] = {ct_param_group_of(p, 2), ct_param_group_of(&p[1], 2)};
    assert_null(ct_optim_adamw_groups(groups, 2, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "params[1] and params[2] are the same tensor (of param_groups[0] and [1])");
    groups[1] = ct_param_group_of(&p[2], 1);
    groups[1].beta2 = 1.0;
    assert_null(ct_optim_adam_groups(groups, 2, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "(param_groups[1]): Invalid beta parameter at index 1: 1");
    groups[1] = ct_param_group_of(&p[2], 1);
    groups[1].lr = -0.5;
    assert_null(ct_optim_sgd_groups(groups, 2, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "(param_groups[1]): Invalid learning rate: -0.5");
    assert_null(ct_optim_sgd_groups(groups, 0, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "group_count is 0");
    assert_null(ct_optim_sgd_groups(NULL, 1, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "groups");
    groups[1].lr = NAN;
    groups[1].count = -1;
    assert_null(ct_optim_sgd_groups(groups, 2, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "param_groups[1] has count -1");
    /* every constructor takes NULL options: PyTorch's defaults */
    ct_optimizer *o = ct_optim_sgd_params(p, 1, NULL);
    assert_non_null(o);
    assert_true(ct_optimizer_lr(o) == 1e-3);
    ct_optimizer_free(o);
    for (int k = 0; k < GROUP_PARAMS; k++) ct_release(p[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(groups_equal_pytorch_on_the_cpu),
        cmocka_unit_test(groups_equal_pytorch_on_opencl),
        cmocka_unit_test(the_state_dict_keeps_the_groups),
        cmocka_unit_test(rmsprop_and_adagrad_resume_from_their_state_dicts),
        cmocka_unit_test(schedulers_scale_each_groups_lr),
        cmocka_unit_test(warmup_cosine_follows_llmc),
        cmocka_unit_test(a_scheduler_keeps_its_optimizer),
        cmocka_unit_test(bad_groups_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
