/* SGD, Adam and AdamW against plain-C references of PyTorch's update rules over several steps
 * (momentum, dampening, Nesterov, weight decay, bias correction, decoupled decay), in float32
 * and float64, on the cpu and on opencl:0; state that follows ct_module_to; bad options. */
#include "nn/nn_test.h"

enum { P = 7, STEPS = 4 };

typedef struct config {
    const char *what;
    int kind; /* 0 SGD, 1 Adam, 2 AdamW */
    ct_sgd_options sgd;
    ct_adam_options adam;
} config;

static double gradient_at(int step, int i) { return sin(1.0 + 0.7 * i + 1.3 * step) * (1.0 + 0.5 * step); }
static double initial(int i) { return 0.5 - 0.3 * i + 0.05 * i * i; }

/* PyTorch's single-tensor SGD and Adam(W), in T (float or double) as its kernels compute. */
#define REFERENCE(T, name)                                                                       \
    static void name(const config *c, double *out)                                           \
    {                                                                                        \
        T p[P], buf[P], m[P], v[P];                                                          \
        for (int i = 0; i < P; i++) p[i] = (T)initial(i), buf[i] = m[i] = v[i] = 0;          \
        for (int step = 0; step < STEPS; step++) {                                           \
            for (int i = 0; i < P; i++) {                                                    \
                T g = (T)gradient_at(step, i);                                               \
                if (c->kind == 0) {                                                          \
                    const ct_sgd_options *o = &c->sgd;                                       \
                    if (o->weight_decay != 0) g = g + (T)o->weight_decay * p[i];             \
                    if (o->momentum != 0) {                                                  \
                        buf[i] = step == 0 ? g : (T)o->momentum * buf[i] + (T)(1.0 - o->dampening) * g; \
                        g = o->nesterov ? g + (T)o->momentum * buf[i] : buf[i];              \
                    }                                                                        \
                    p[i] = p[i] - (T)o->lr * g;                                              \
                } else {                                                                     \
                    const ct_adam_options *o = &c->adam;                                     \
                    if (c->kind == 1 && o->weight_decay != 0) g = g + (T)o->weight_decay * p[i]; \
                    if (c->kind == 2) p[i] = p[i] * (T)(1.0 - o->lr * o->weight_decay);      \
                    m[i] = m[i] + (T)(1.0 - o->beta1) * (g - m[i]);                          \
                    v[i] = (T)o->beta2 * v[i] + (T)(1.0 - o->beta2) * g * g;                 \
                    double bc1 = 1.0 - pow(o->beta1, step + 1), bc2 = 1.0 - pow(o->beta2, step + 1); \
                    T denom = (T)sqrt((double)v[i]) / (T)sqrt(bc2) + (T)o->eps;              \
                    p[i] = p[i] - (T)(o->lr / bc1) * (m[i] / denom);                         \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        for (int i = 0; i < P; i++) out[i] = (double)p[i];                                   \
    }
REFERENCE(float, reference_f32)
REFERENCE(double, reference_f64)

static ct_optimizer *make(const config *c, ct_tensor *p)
{
    ct_optimizer *o = c->kind == 0   ? ct_optim_sgd_params(&p, 1, &c->sgd)
                      : c->kind == 1 ? ct_optim_adam_params(&p, 1, &c->adam)
                                     : ct_optim_adamw_params(&p, 1, &c->adam);
    assert_non_null(o);
    return o;
}

/* Gives p the gradient g: the backward of sum(p * g). */
static void set_gradient(ct_tensor *p, int step)
{
    double g[P];
    for (int i = 0; i < P; i++) g[i] = gradient_at(step, i);
    ct_tensor *gt = tensor_of(g, (int64_t[]){P}, 1, ct_tensor_dtype(p), ct_tensor_device(p));
    ct_tensor *prod = ct_mul(p, gt);
    ct_tensor *total = ct_sum(prod, NULL, 0, false);
    assert_int_equal(ct_backward(total), CT_OK);
    ct_release(gt);
    ct_release(prod);
    ct_release(total);
}

static void run(const config *c, ct_dtype dtype, ct_device device)
{
    double init[P], got[P], want[P];
    for (int i = 0; i < P; i++) init[i] = initial(i);
    ct_tensor *p = tensor_of(init, (int64_t[]){P}, 1, dtype, device);
    ct_optimizer *o = make(c, p);
    for (int step = 0; step < STEPS; step++) {
        ct_optimizer_zero_grad(o);
        set_gradient(p, step);
        assert_int_equal(ct_optimizer_step(o), CT_OK);
    }
    assert_true(ct_is_leaf(p));
    assert_true(ct_requires_grad(p));
    assert_int_equal(ct_optimizer_steps(o), STEPS);
    values_of(p, got, P);
    (dtype == CT_F32 ? reference_f32 : reference_f64)(c, want);
    double rtol = dtype == CT_F64 ? 1e-12 : device.type == CT_CPU ? 2e-7 : 2e-6;
    char what[160];
    snprintf(what, sizeof what, "%s, %s on %s", c->what, ct_dtype_name(dtype), device.type == CT_CPU ? "cpu" : "opencl:0");
    assert_close_array(got, want, P, rtol, rtol, what);
    ct_optimizer_free(o);
    ct_release(p);
}

static config configs[] = {
    {"SGD", 0, {.lr = 0.1}, {.lr = 0}},
    {"SGD weight decay", 0, {.lr = 0.05, .weight_decay = 0.1}, {.lr = 0}},
    {"SGD momentum, dampening", 0, {.lr = 0.1, .momentum = 0.9, .dampening = 0.3}, {.lr = 0}},
    {"SGD momentum, weight decay", 0, {.lr = 0.1, .momentum = 0.8, .weight_decay = 0.01}, {.lr = 0}},
    {"SGD Nesterov, weight decay", 0, {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.02, .nesterov = true}, {.lr = 0}},
    {"Adam", 1, {.lr = 0}, {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}},
    {"Adam weight decay, other betas", 1, {.lr = 0}, {.lr = 0.02, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.1}},
    {"AdamW", 2, {.lr = 0}, {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01}},
    {"AdamW strong decay", 2, {.lr = 0}, {.lr = 0.05, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-3, .weight_decay = 0.5}},
};

static void updates_against_references_on_the_cpu(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        run(&configs[k], CT_F32, CT_DEVICE_CPU);
        run(&configs[k], CT_F64, CT_DEVICE_CPU);
    }
}

static void updates_against_references_on_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        run(&configs[k], CT_F32, OPENCL0);
        run(&configs[k], CT_F64, OPENCL0);
    }
}

static void defaults_are_pytorchs(void **state)
{
    (void)state;
    ct_sgd_options s = ct_sgd_options_default(0.1);
    assert_true(s.lr == 0.1 && s.momentum == 0 && s.dampening == 0 && s.weight_decay == 0 && !s.nesterov);
    ct_adam_options a = ct_adam_options_default(1e-3), w = ct_adamw_options_default(1e-3);
    assert_true(a.beta1 == 0.9 && a.beta2 == 0.999 && a.eps == 1e-8 && a.weight_decay == 0);
    assert_true(w.weight_decay == 0.01);
}

static void parameters_without_gradients_are_skipped(void **state)
{
    (void)state;
    ct_tensor *a = ct_ones((int64_t[]){3}, 1, CT_F32, CT_DEVICE_CPU), *b = ct_ones((int64_t[]){3}, 1, CT_F32, CT_DEVICE_CPU);
    ct_sgd_options options = ct_sgd_options_default(0.5);
    ct_optimizer *o = ct_optim_sgd_params((ct_tensor *[]){a, b}, 2, &options);
    assert_true(ct_requires_grad(b));
    ct_tensor *total = ct_sum(a, NULL, 0, false);
    assert_int_equal(ct_backward(total), CT_OK);
    assert_int_equal(ct_optimizer_step(o), CT_OK);
    double va[3], vb[3];
    values_of(a, va, 3);
    values_of(b, vb, 3);
    assert_true(va[0] == 0.5 && vb[0] == 1.0);
    ct_optimizer_zero_grad(o);
    assert_null(ct_grad(a));
    assert_int_equal(ct_optimizer_param_count(o), 2);
    assert_string_equal(ct_optimizer_kind(o), "SGD");
    assert_int_equal(ct_optimizer_set_lr(o, 0.25), CT_OK);
    assert_true(ct_optimizer_lr(o) == 0.25);
    ct_release(total);
    ct_optimizer_free(o);
    ct_release(a);
    ct_release(b);
}

/* A module's optimizer keeps working after ct_module_to: its state moves with the parameters. */
static void state_follows_module_to(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    double results[2][12];
    for (int moved = 0; moved < 2; moved++) {
        ct_manual_seed(4);
        ct_module *fc = ct_linear(3, 3, true);
        ct_adam_options options = ct_adamw_options_default(0.05);
        ct_optimizer *o = ct_optim_adamw(fc, &options);
        assert_int_equal(ct_optimizer_param_count(o), 2);
        for (int step = 0; step < 4; step++) {
            if (moved && step == 2) {
                assert_int_equal(ct_module_to(fc, OPENCL0), CT_OK);
                ct_tensor *m = ct_optimizer_state(o, 0, "exp_avg");
                assert_true(ct_device_equal(ct_tensor_device(m), OPENCL0));
                ct_release(m);
            }
            ct_device device = ct_module_device(fc);
            ct_optimizer_zero_grad(o);
            ct_named_tensors *params = ct_module_named_parameters(fc);
            for (int64_t i = 0; i < params->count; i++) {
                /* loss = sum(p * p * (step + 1)): gradient 2 p (step + 1) */
                ct_tensor *sq = ct_mul(params->tensors[i], params->tensors[i]);
                ct_tensor *k = ct_full((int64_t[]){1}, 1, step + 1.0, CT_F32, device);
                ct_tensor *scaled = ct_mul(sq, k);
                ct_tensor *total = ct_sum(scaled, NULL, 0, false);
                assert_int_equal(ct_backward(total), CT_OK);
                ct_release(sq);
                ct_release(k);
                ct_release(scaled);
                ct_release(total);
            }
            assert_int_equal(ct_optimizer_step(o), CT_OK);
            ct_named_tensors_free(params);
        }
        ct_tensor *v = ct_optimizer_state(o, 1, "exp_avg_sq");
        assert_true(ct_device_equal(ct_tensor_device(v), moved ? OPENCL0 : CT_DEVICE_CPU));
        ct_release(v);
        ct_tensor *w = ct_module_parameter(fc, "weight"), *b = ct_module_parameter(fc, "bias");
        values_of(w, results[moved], 9);
        values_of(b, results[moved] + 9, 3);
        ct_release(w);
        ct_release(b);
        ct_optimizer_free(o);
        ct_module_release(fc);
    }
    assert_close_array(results[1], results[0], 12, 1e-5, 1e-6, "moved half way");
}

static void bad_options_and_parameters(void **state)
{
    (void)state;
    ct_tensor *p = ct_ones((int64_t[]){3}, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *ints = ct_ones((int64_t[]){3}, 1, CT_I64, CT_DEVICE_CPU);
    ct_sgd_options s = ct_sgd_options_default(-1);
    assert_null(ct_optim_sgd_params(&p, 1, &s));
    assert_error(CT_ERR_INVALID_ARGUMENT, "Invalid learning rate: -1");
    s = ct_sgd_options_default(0.1);
    s.nesterov = true;
    assert_null(ct_optim_sgd_params(&p, 1, &s));
    assert_error(CT_ERR_INVALID_ARGUMENT, "Nesterov momentum requires a momentum and zero dampening");
    s.momentum = -0.5;
    s.nesterov = false;
    assert_null(ct_optim_sgd_params(&p, 1, &s));
    assert_error(CT_ERR_INVALID_ARGUMENT, "Invalid momentum value: -0.5");
    ct_adam_options a = ct_adam_options_default(0.1);
    a.beta2 = 1.0;
    assert_null(ct_optim_adam_params(&p, 1, &a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "Invalid beta parameter at index 1: 1");
    a = ct_adam_options_default(0.1);
    a.eps = -1;
    assert_null(ct_optim_adamw_params(&p, 1, &a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "Invalid epsilon value: -1");
    a = ct_adam_options_default(0.1);
    a.weight_decay = -0.1;
    assert_null(ct_optim_adam_params(&p, 1, &a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "Invalid weight_decay value: -0.1");
    a = ct_adam_options_default(0.1);
    assert_null(ct_optim_adam_params(&ints, 1, &a));
    assert_error(CT_ERR_DTYPE, "params[0] is int64");
    assert_null(ct_optim_adam_params((ct_tensor *[]){p, p}, 2, &a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "params[0] and params[1] are the same tensor");
    assert_int_equal(ct_requires_grad_(p, true), CT_OK);
    ct_tensor *made = ct_mul(p, p);
    assert_null(ct_optim_adam_params(&made, 1, &a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "can only optimize leaf tensors");
    assert_null(ct_optim_adam(NULL, &a));
    assert_error(CT_ERR_NULL_ARGUMENT, "module");
    ct_optimizer *o = ct_optim_adam_params(&p, 1, NULL); /* NULL options: PyTorch's defaults */
    assert_non_null(o);
    assert_true(ct_optimizer_lr(o) == 1e-3);
    ct_optimizer_free(o);
    o = ct_optim_adam_params(&p, 1, &a);
    assert_null(ct_optimizer_state(o, 0, "exp_avg"));
    assert_error(CT_ERR_INDEX, "has not taken a step yet");
    assert_int_equal(ct_optimizer_set_lr(o, -2), CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
    assert_int_equal(ct_optimizer_step(NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_optimizer_free(o);
    ct_release(made);
    ct_release(p);
    ct_release(ints);
}

/* A parameter that is a strided view is updated through a contiguous copy written back. */
static void strided_parameters(void **state)
{
    (void)state;
    double init[6] = {1, 2, 3, 4, 5, 6};
    ct_tensor *base = tensor_of(init, (int64_t[]){2, 3}, 2, CT_F64, CT_DEVICE_CPU);
    ct_tensor *p = ct_transpose(base, 0, 1);
    ct_tensor *leaf = ct_detach(p);
    ct_sgd_options s = ct_sgd_options_default(0.5);
    ct_optimizer *o = ct_optim_sgd_params(&leaf, 1, &s);
    ct_tensor *total = ct_sum(leaf, NULL, 0, false);
    assert_int_equal(ct_backward(total), CT_OK);
    assert_int_equal(ct_optimizer_step(o), CT_OK);
    double got[6], want[6] = {0.5, 3.5, 1.5, 4.5, 2.5, 5.5};
    values_of(leaf, got, 6);
    assert_close_array(got, want, 6, 0, 0, "strided parameter");
    ct_release(total);
    ct_optimizer_free(o);
    ct_release(leaf);
    ct_release(p);
    ct_release(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(updates_against_references_on_the_cpu),
        cmocka_unit_test(updates_against_references_on_opencl),
        cmocka_unit_test(defaults_are_pytorchs),
        cmocka_unit_test(parameters_without_gradients_are_skipped),
        cmocka_unit_test(state_follows_module_to),
        cmocka_unit_test(bad_options_and_parameters),
        cmocka_unit_test(strided_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
