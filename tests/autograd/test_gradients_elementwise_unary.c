/* Gradients of the one-tensor elementwise ops: finite-difference checks (contiguous and view
 * inputs, away from the kinks of abs, relu and clamp) on the CPU and every OpenCL device, the
 * conventions at the kinks, and float32 inputs. */
#include <math.h>
#include <stdio.h>

#include "support/gradcheck.h"
#include "test_common.h"

typedef ct_tensor *(*unary_fn)(const ct_tensor *);

static ct_tensor *f_unary(ct_tensor *const *x, void *c) { return (*(unary_fn *)c)(x[0]); }
static ct_tensor *f_clamp(ct_tensor *const *x, void *c) { (void)c; return ct_clamp(x[0], -0.5, 0.6); }
static ct_tensor *f_clamp_min(ct_tensor *const *x, void *c) { (void)c; return ct_clamp_min(x[0], 0.25); }
static ct_tensor *f_clamp_max(ct_tensor *const *x, void *c) { (void)c; return ct_clamp_max(x[0], -0.25); }
/* a chain: tanh's backward gets a gradient from exp's output (the intermediate stays in the
 * gradcheck's scope) */
static ct_tensor *f_tanh_of_exp(ct_tensor *const *x, void *c) { (void)c; return ct_tanh(ct_exp(x[0])); }

/* A float64 tensor on device with values uniform in [low, high). */
static ct_tensor *uniform(ct_device device, const int64_t *shape, int ndim, double low, double high)
{
    ct_tensor *r = ct_rand(shape, ndim, CT_F64, CT_DEVICE_CPU);
    return ct_to(ct_add_scalar(ct_mul_scalar(r, high - low), low), device);
}

static ct_tensor *leaky_relu_01(const ct_tensor *a) { return ct_leaky_relu(a, 0.1); }
/* beta 2, threshold 3: linear past x = 1.5, inside the range */
static ct_tensor *softplus_2_3(const ct_tensor *a) { return ct_softplus(a, 2.0, 3.0); }
static ct_tensor *elu_15(const ct_tensor *a) { return ct_elu(a, 1.5); }

typedef struct unary_case {
    const char *name;
    unary_fn fn;
    double low, high; /* the input range */
} unary_case;

static const unary_case cases[] = {
    {"neg", ct_neg, -2.0, 2.0},
    {"abs", ct_abs, -2.0, 2.0},
    {"exp", ct_exp, -2.0, 2.0},
    {"log", ct_log, 0.2, 3.0},
    {"sqrt", ct_sqrt, 0.2, 3.0},
    {"relu", ct_relu, -2.0, 2.0},
    {"sigmoid", ct_sigmoid, -4.0, 4.0},
    {"tanh", ct_tanh, -2.0, 2.0},
    {"gelu", ct_gelu, -3.0, 3.0},
    {"leaky_relu", leaky_relu_01, -2.0, 2.0},
    {"silu", ct_silu, -4.0, 4.0},
    {"softplus", softplus_2_3, -2.0, 3.0},
    {"elu", elu_15, -2.0, 2.0},
    {"log1p", ct_log1p, -0.5, 3.0},
    {"sin", ct_sin, -3.0, 3.0},
    {"cos", ct_cos, -3.0, 3.0},
    {"rsqrt", ct_rsqrt, 0.3, 3.0},
    {"reciprocal", ct_reciprocal, 0.3, 3.0},
    {"erf", ct_erf, -2.0, 2.0},
    /* zero gradients (the finite differences are zero away from the steps) */
    {"sign", ct_sign, 0.1, 2.0},
    {"floor", ct_floor, 0.1, 0.9},
    {"round", ct_round, 0.1, 0.4},
};

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(21);
    int64_t s23[2] = {2, 3}, s342[3] = {3, 4, 2};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const unary_case *c = &cases[k];
        ct_tensor *x = uniform(device, s23, 2, c->low, c->high);
        /* a [4, 3] view with strides of [3, 4, 2] sliced and transposed */
        ct_tensor *view = ct_transpose(ct_select(uniform(device, s342, 3, c->low, c->high), 2, 1), 0, 1);
        char what[64];
        snprintf(what, sizeof what, "%s", c->name);
        ct_gradcheck(what, f_unary, &x, NULL, 1, (void *)&c->fn);
        snprintf(what, sizeof what, "%s of a view", c->name);
        ct_gradcheck(what, f_unary, &view, NULL, 1, (void *)&c->fn);
    }
    ct_tensor *x = uniform(device, s23, 2, -1.0, 1.0);
    ct_tensor *view = ct_transpose(ct_select(uniform(device, s342, 3, -1.0, 1.0), 2, 0), 0, 1);
    ct_gradcheck("clamp [-0.5, 0.6]", f_clamp, &x, NULL, 1, NULL);
    ct_gradcheck("clamp [-0.5, 0.6] of a view", f_clamp, &view, NULL, 1, NULL);
    ct_gradcheck("clamp_min 0.25", f_clamp_min, &view, NULL, 1, NULL);
    ct_gradcheck("clamp_max -0.25", f_clamp_max, &x, NULL, 1, NULL);
    ct_gradcheck("tanh of exp", f_tanh_of_exp, &x, NULL, 1, NULL);
    ct_scope_pop();
}

static void gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

/* ---- exact checks ---- */

static ct_tensor *leaf(const double *values, int64_t n, ct_dtype dtype)
{
    ct_tensor *t = ct_to_dtype(ct_tensor_from_data(values, CT_F64, &n, 1, CT_DEVICE_CPU), dtype);
    ct_requires_grad_(t, true);
    return t;
}

/* The gradient of sum(fn(x)) for x = values, as doubles, after checking its dtype. */
static void grad_of_sum(unary_fn fn, const double *values, int64_t n, ct_dtype dtype, double *grad_values)
{
    ct_tensor *x = leaf(values, n, dtype);
    ct_tensor *out = fn(x);
    assert_non_null(out);
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    ct_tensor *grad = ct_grad(x);
    assert_non_null(grad);
    assert_int_equal(ct_tensor_dtype(grad), dtype);
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(grad, CT_F64), grad_values, sizeof(double) * (size_t)n), CT_OK);
    ct_release(grad);
}

static ct_tensor *clamp_bounds(const ct_tensor *x) { return ct_clamp(x, -1.0, 1.0); }
static ct_tensor *clamp_min_bound(const ct_tensor *x) { return ct_clamp_min(x, 1.0); }
static ct_tensor *clamp_max_bound(const ct_tensor *x) { return ct_clamp_max(x, -1.0); }

/* PyTorch's choices at the kinks: relu'(0) = 0, abs'(0) = 0, clamp passes at its bounds. */
static void kinks_follow_pytorch(void **state)
{
    (void)state;
    ct_scope_push();
    const double x[5] = {-2, -1, 0, 1, 2};
    double g[5];
    grad_of_sum(ct_relu, x, 5, CT_F64, g);
    assert_memory_equal(g, ((double[]){0, 0, 0, 1, 1}), sizeof g);
    grad_of_sum(ct_abs, x, 5, CT_F64, g);
    assert_memory_equal(g, ((double[]){-1, -1, 0, 1, 1}), sizeof g);
    grad_of_sum(clamp_bounds, x, 5, CT_F64, g);
    assert_memory_equal(g, ((double[]){0, 1, 1, 1, 0}), sizeof g);
    grad_of_sum(clamp_min_bound, x, 5, CT_F64, g);
    assert_memory_equal(g, ((double[]){0, 0, 0, 1, 1}), sizeof g);
    grad_of_sum(clamp_max_bound, x, 5, CT_F64, g);
    assert_memory_equal(g, ((double[]){1, 1, 0, 0, 0}), sizeof g);
    ct_scope_pop();
}

/* float32 inputs get float32 gradients, matching the derivatives computed in double. */
static void float32_gradients_match_the_derivatives(void **state)
{
    (void)state;
    ct_scope_push();
    const double x[4] = {-1.5, -0.25, 0.75, 2.0}, positive[4] = {0.25, 0.5, 1.5, 3.0};
    double g[4];
    grad_of_sum(ct_gelu, x, 4, CT_F32, g);
    for (int i = 0; i < 4; i++) {
        double phi = exp(-x[i] * x[i] / 2) / sqrt(2 * 3.14159265358979323846), cdf = 0.5 * (1 + erf(x[i] / sqrt(2.0)));
        assert_true(fabs(g[i] - (cdf + x[i] * phi)) < 1e-6);
    }
    grad_of_sum(ct_sigmoid, x, 4, CT_F32, g);
    for (int i = 0; i < 4; i++) {
        double s = 1 / (1 + exp(-x[i]));
        assert_true(fabs(g[i] - s * (1 - s)) < 1e-6);
    }
    grad_of_sum(ct_tanh, x, 4, CT_F32, g);
    for (int i = 0; i < 4; i++) assert_true(fabs(g[i] - (1 - tanh(x[i]) * tanh(x[i]))) < 1e-6);
    grad_of_sum(ct_exp, x, 4, CT_F32, g);
    for (int i = 0; i < 4; i++) assert_true(fabs(g[i] - exp(x[i])) < 1e-5 * exp(x[i]));
    grad_of_sum(ct_sqrt, positive, 4, CT_F32, g);
    for (int i = 0; i < 4; i++) assert_true(fabs(g[i] - 0.5 / sqrt(positive[i])) < 1e-6);
    grad_of_sum(ct_log, positive, 4, CT_F32, g);
    for (int i = 0; i < 4; i++) assert_true(fabs(g[i] - 1 / positive[i]) < 1e-6);
    ct_scope_pop();
}

static void nodes_are_named(void **state)
{
    (void)state;
    ct_scope_push();
    const double v[2] = {0.5, 1.0};
    ct_tensor *x = leaf(v, 2, CT_F64);
    static const char *const names[] = {"NegBackward", "AbsBackward", "ExpBackward", "LogBackward",
                                        "SqrtBackward", "ReluBackward", "SigmoidBackward",
                                        "TanhBackward", "GeluBackward", "LeakyReluBackward",
                                        "SiluBackward", "SoftplusBackward", "EluBackward",
                                        "Log1pBackward", "SinBackward", "CosBackward",
                                        "RsqrtBackward", "ReciprocalBackward", "ErfBackward",
                                        "SignBackward", "FloorBackward", "RoundBackward"};
    assert_int_equal(sizeof names / sizeof names[0], sizeof cases / sizeof cases[0]);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        assert_string_equal(ct_grad_fn_name(cases[k].fn(x)), names[k]);
    assert_string_equal(ct_grad_fn_name(ct_clamp(x, 0, 1)), "ClampBackward");
    assert_string_equal(ct_grad_fn_name(ct_clamp_min(x, 0)), "ClampBackward");
    assert_string_equal(ct_grad_fn_name(ct_clamp_max(x, 1)), "ClampBackward");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_the_cpu),
        cmocka_unit_test(gradients_on_opencl),
        cmocka_unit_test(kinks_follow_pytorch),
        cmocka_unit_test(float32_gradients_match_the_derivatives),
        cmocka_unit_test(nodes_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
