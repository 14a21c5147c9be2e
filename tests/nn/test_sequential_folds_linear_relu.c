/* nn.Sequential runs a Linear followed by a ReLU as one op (ops/linear_relu.c): its forward and
 * gradients equal the two modules run one after the other (the same bits in float32 and float64,
 * where the products are the same calls; the bias's gradient, summed in another order, and
 * float16 and bfloat16, rounded once more, within tolerance), on the cpu and on every OpenCL
 * device; its gradients match finite differences in float64; its bias gradient has the same
 * bits on every device; and a Sequential(Linear, ReLU, Linear) step makes exactly the launches of
 * the fused op, fewer than the modules one by one. */
#include "nn/nn_test.h"
#include "backend/backend.h"
#include "ops/nn_internal.h"
#include "support/gradcheck.h"

#define IN 6
#define OUT 9

static ct_device devices[3];
static int device_count;

static int setup(void **state)
{
    (void)state;
    devices[0] = CT_DEVICE_CPU;
    device_count = 1;
    for (int i = 0; i < ct_device_count(CT_OPENCL) && device_count < 3; i++)
        devices[device_count++] = (ct_device){CT_OPENCL, i};
    return 0;
}

/* Sequential(Linear(IN, OUT), ReLU) in dtype on device, its weight and bias set from values
 * (a third of the pre-activations negative). */
static ct_module *linear_relu_on(ct_device device, ct_dtype dtype)
{
    ct_manual_seed(7);
    ct_module *m = ct_sequential((ct_module *[]){ct_linear(IN, OUT, true), ct_relu_module()}, 2);
    assert_non_null(m);
    assert_int_equal(ct_module_to(m, device), CT_OK);
    assert_int_equal(ct_module_to_dtype(m, dtype), CT_OK);
    double w[OUT * IN], b[OUT];
    for (int i = 0; i < OUT * IN; i++) w[i] = 0.5 * cos(1.3 * i + 0.2);
    for (int i = 0; i < OUT; i++) b[i] = 0.15 * i - 0.4;
    ct_tensor *weight = ct_module_parameter(m, "0.weight"), *bias = ct_module_parameter(m, "0.bias");
    ct_tensor *wv = tensor_of(w, (int64_t[]){OUT, IN}, 2, dtype, device);
    ct_tensor *bv = tensor_of(b, (int64_t[]){OUT}, 1, dtype, device);
    ct_no_grad_push();
    assert_int_equal(ct_copy_(weight, wv), CT_OK);
    assert_int_equal(ct_copy_(bias, bv), CT_OK);
    ct_no_grad_pop();
    ct_release(weight);
    ct_release(bias);
    ct_release(wv);
    ct_release(bv);
    return m;
}

typedef struct results {
    double y[4 * OUT], x_grad[4 * IN], w_grad[OUT * IN], b_grad[OUT];
    const char *node;
} results;

/* x [2, 2, IN] (through a transpose when strided) into m, folded (the Sequential) or not (its
 * children one by one), backward from an upstream expanded along the rows when expanded. */
static void run(ct_module *m, bool folded, ct_device device, ct_dtype dtype, bool strided,
                bool expanded, bool autocast, results *r)
{
    ct_scope_push();
    double xs[4 * IN], up[4 * OUT];
    for (int i = 0; i < 4 * IN; i++) xs[i] = sin(0.7 * i) + 0.1;
    for (int i = 0; i < 4 * OUT; i++) up[i] = cos(0.3 * i) - 0.25;
    ct_tensor *x = strided ? ct_detach(ct_transpose(tensor_of(xs, (int64_t[]){2, IN, 2}, 3, dtype, device), 1, 2))
                           : tensor_of(xs, (int64_t[]){2, 2, IN}, 3, dtype, device);
    ct_requires_grad_(x, true);
    ct_tensor *upstream = expanded ? ct_expand(tensor_of(up, (int64_t[]){1, 1, OUT}, 3, dtype, device),
                                               (int64_t[]){2, 2, OUT}, 3)
                                   : tensor_of(up, (int64_t[]){2, 2, OUT}, 3, dtype, device);
    ct_module_zero_grad(m);
    if (autocast) assert_int_equal(ct_autocast_push(device.type, CT_BF16), CT_OK);
    ct_tensor *y = folded ? ct_module_forward(m, x)
                          : ct_module_forward(ct_module_child_at(m, 1),
                                              ct_module_forward(ct_module_child_at(m, 0), x));
    if (autocast) assert_int_equal(ct_autocast_pop(), CT_OK); /* the backward runs without */
    assert_non_null(y);
    r->node = ct_grad_fn_name(y);
    upstream = ct_to_dtype(upstream, ct_tensor_dtype(y)); /* autocast's output is 16-bit */
    if (ct_backward_with(y, upstream, false) != CT_OK) fail_msg("backward: %s", ct_last_error_message());
    values_of(y, r->y, 4 * OUT);
    values_of(ct_grad(x), r->x_grad, 4 * IN);
    ct_tensor *wg = ct_grad(ct_module_parameter(m, "0.weight"));
    ct_tensor *bg = ct_grad(ct_module_parameter(m, "0.bias"));
    values_of(wg, r->w_grad, OUT * IN);
    values_of(bg, r->b_grad, OUT);
    ct_scope_pop();
}

static void assert_same(const double *got, const double *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
            fail_msg("%s[%d]: folded %.17g, one by one %.17g", what, i, got[i], want[i]);
}

static void folded_equals_linear_then_relu(ct_device device, ct_dtype dtype, bool strided, bool expanded)
{
    ct_module *m = linear_relu_on(device, dtype);
    results folded, apart;
    run(m, true, device, dtype, strided, expanded, false, &folded);
    run(m, false, device, dtype, strided, expanded, false, &apart);
    assert_string_equal(folded.node, "LinearReluBackward");
    assert_string_equal(apart.node, "ReluBackward");
    int negative = 0;
    for (int i = 0; i < 4 * OUT; i++) negative += apart.y[i] == 0.0;
    assert_true(negative > 4 && negative < 4 * OUT - 4); /* both sides of the kink are tested */
    if (dtype == CT_F32 || dtype == CT_F64) {
        assert_same(folded.y, apart.y, 4 * OUT, "y");
        assert_same(folded.x_grad, apart.x_grad, 4 * IN, "x.grad");
        assert_same(folded.w_grad, apart.w_grad, OUT * IN, "weight.grad");
        assert_close_to_scale(folded.b_grad, apart.b_grad, OUT, dtype == CT_F32 ? 1e-6 : 1e-14, "bias.grad");
    } else { /* the product rounded to 16 bits before the bias is added: a rounding more */
        double tol = dtype == CT_F16 ? 4e-3 : 3e-2;
        assert_close_to_scale(folded.y, apart.y, 4 * OUT, tol, "y");
        assert_close_to_scale(folded.x_grad, apart.x_grad, 4 * IN, tol, "x.grad");
        assert_close_to_scale(folded.w_grad, apart.w_grad, OUT * IN, tol, "weight.grad");
        assert_close_to_scale(folded.b_grad, apart.b_grad, OUT, tol, "bias.grad");
    }
    ct_module_release(m);
}

static void folded_forward_and_backward_equal_the_modules_one_by_one(void **state)
{
    (void)state;
    const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int d = 0; d < device_count; d++)
        for (int k = 0; k < 4; k++) {
            folded_equals_linear_then_relu(devices[d], dtypes[k], false, false);
            folded_equals_linear_then_relu(devices[d], dtypes[k], true, true);
        }
}

/* Under autocast the fused op runs on the cast operands, as the Linear would. */
static void folded_under_autocast_equals_the_modules_one_by_one(void **state)
{
    (void)state;
    for (int d = 0; d < device_count; d++) {
        ct_module *m = linear_relu_on(devices[d], CT_F32);
        results folded, apart;
        run(m, true, devices[d], CT_F32, false, false, true, &folded);
        run(m, false, devices[d], CT_F32, false, false, true, &apart);
        assert_string_equal(folded.node, "LinearReluBackward");
        assert_close_to_scale(folded.y, apart.y, 4 * OUT, 3e-2, "y");
        assert_close_to_scale(folded.x_grad, apart.x_grad, 4 * IN, 3e-2, "x.grad");
        assert_close_to_scale(folded.w_grad, apart.w_grad, OUT * IN, 3e-2, "weight.grad");
        assert_close_to_scale(folded.b_grad, apart.b_grad, OUT, 3e-2, "bias.grad");
        ct_module_release(m);
    }
}

static ct_tensor *f_linear_relu(ct_tensor *const *x, void *c)
{
    (void)c;
    ct_api_enter();
    return ct_api_return(ct_linear_relu_apply("test", x[0], x[1], x[2]));
}

static void folded_gradients_match_finite_differences(void **state)
{
    (void)state;
    double xs[3 * IN], ws[OUT * IN], bs[OUT];
    for (int i = 0; i < 3 * IN; i++) xs[i] = sin(0.7 * i) + 0.1;
    for (int i = 0; i < OUT * IN; i++) ws[i] = 0.5 * cos(1.3 * i + 0.2);
    for (int i = 0; i < OUT; i++) bs[i] = 0.15 * i - 0.4;
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        ct_tensor *x = tensor_of(xs, (int64_t[]){3, IN}, 2, CT_F64, devices[d]);
        ct_tensor *w = tensor_of(ws, (int64_t[]){OUT, IN}, 2, CT_F64, devices[d]);
        ct_tensor *b = tensor_of(bs, (int64_t[]){OUT}, 1, CT_F64, devices[d]);
        ct_gradcheck("linear + relu", f_linear_relu, (ct_tensor *[]){x, w, b}, NULL, 3, NULL);
        /* without a bias: the composed ops, Linear's node then ReLU's */
        assert_string_equal(ct_grad_fn_name(f_linear_relu((ct_tensor *[]){x, w, NULL}, NULL)), "ReluBackward");
        ct_scope_pop();
    }
}

/* The bias's gradient of [300, IN] -> OUT in dtype on device (operands whose products are exact
 * in every dtype, so that every device masks the same elements), as doubles into out. */
static void bias_gradient_on(ct_device device, ct_dtype dtype, double *out)
{
    enum { ROWS = 300 };
    static double xs[ROWS * IN], up[ROWS * OUT];
    double ws[OUT * IN], bs[OUT];
    for (int i = 0; i < ROWS * IN; i++) xs[i] = ((i * 7) % 9 - 4) / 4.0;
    for (int i = 0; i < OUT * IN; i++) ws[i] = ((i * 5) % 7 - 3) / 8.0;
    for (int i = 0; i < OUT; i++) bs[i] = (i % 5 - 2) / 16.0 + 1.0 / 32;
    for (int i = 0; i < ROWS * OUT; i++) up[i] = sin(0.37 * i);
    ct_scope_push();
    ct_tensor *x = tensor_of(xs, (int64_t[]){ROWS, IN}, 2, dtype, device);
    ct_tensor *w = tensor_of(ws, (int64_t[]){OUT, IN}, 2, dtype, device);
    ct_tensor *b = tensor_of(bs, (int64_t[]){OUT}, 1, dtype, device);
    ct_tensor *upstream = tensor_of(up, (int64_t[]){ROWS, OUT}, 2, dtype, device);
    ct_requires_grad_(b, true);
    ct_tensor *y = f_linear_relu((ct_tensor *[]){x, w, b}, NULL);
    assert_string_equal(ct_grad_fn_name(y), "LinearReluBackward");
    if (ct_backward_with(y, upstream, false) != CT_OK) fail_msg("backward: %s", ct_last_error_message());
    values_of(ct_grad(b), out, OUT);
    ct_scope_pop();
}

/* The columns are summed in one order everywhere: chunks of rows, then the chunks' sums. */
static void the_bias_gradient_has_the_same_bits_on_every_device(void **state)
{
    (void)state;
    const ct_dtype dtypes[] = {CT_F32, CT_BF16};
    for (int k = 0; k < 2; k++) {
        double on_cpu[OUT], here[OUT];
        bias_gradient_on(CT_DEVICE_CPU, dtypes[k], on_cpu);
        for (int d = 1; d < device_count; d++) {
            bias_gradient_on(devices[d], dtypes[k], here);
            assert_same(here, on_cpu, OUT, "bias.grad");
        }
    }
}

/* Launches of a forward and backward of Sequential(Linear(IN, OUT), ReLU, Linear(OUT, 3)) on
 * device, folded (the Sequential) or its children one by one. */
static uint64_t step_launches(ct_module *m, bool folded, ct_device device)
{
    ct_scope_push();
    ct_tensor *x = ct_rand((int64_t[]){5, IN}, 2, CT_F32, device);
    ct_tensor *upstream = ct_rand((int64_t[]){5, 3}, 2, CT_F32, device);
    ct_module_zero_grad(m); /* gradients dropped: the backward stores new ones, no adds */
    uint64_t before = 0, after = 0;
    assert_int_equal(ct_device_kernel_launches(device, &before), CT_OK);
    ct_tensor *y = x;
    if (folded)
        y = ct_module_forward(m, x);
    else
        for (int i = 0; i < 3; i++) y = ct_module_forward(ct_module_child_at(m, i), y);
    assert_non_null(y);
    if (ct_backward_with(y, upstream, false) != CT_OK) fail_msg("backward: %s", ct_last_error_message());
    assert_int_equal(ct_device_kernel_launches(device, &after), CT_OK);
    ct_scope_pop();
    return after - before;
}

static void a_training_step_makes_the_fused_launches(void **state)
{
    (void)state;
    for (int d = 0; d < device_count; d++) {
        ct_device device = devices[d];
        ct_manual_seed(1);
        ct_module *m = ct_sequential((ct_module *[]){ct_linear(IN, OUT, true), ct_relu_module(),
                                                     ct_linear(OUT, 3, true)}, 3);
        assert_int_equal(ct_module_to(m, device), CT_OK);
        step_launches(m, true, device); /* warm: kernels built, caches filled */
        step_launches(m, false, device);
        uint64_t apart = step_launches(m, false, device);
        /* what the bias gradient's reduction costs on this device, over [5, OUT] */
        ct_scope_push();
        ct_tensor *g = ct_rand((int64_t[]){5, OUT}, 2, CT_F32, device);
        uint64_t before = 0, after = 0;
        assert_int_equal(ct_device_kernel_launches(device, &before), CT_OK);
        assert_non_null(ct_sum(g, (const int[]){0}, 1, false));
        assert_int_equal(ct_device_kernel_launches(device, &after), CT_OK);
        ct_scope_pop();
        uint64_t reduction = after - before;
        uint64_t fused_forward = ct_backend_launch_count(device, CT_K_linear_bias_relu_f32);
        uint64_t fused_backward = ct_backend_launch_count(device, CT_K_linear_relu_backward_f32);
        uint64_t relu = ct_backend_launch_count(device, CT_K_relu_f32);
        uint64_t folded = step_launches(m, true, device);
        char name[CT_DEVICE_STRING_MAX];
        ct_device_format(device, name, sizeof name);
        printf("%s: %llu launches folded, %llu one by one (the reduction: %llu)\n", name,
               (unsigned long long)folded, (unsigned long long)apart, (unsigned long long)reduction);
        /* forward: the bias copy and the relu become one kernel; backward: the relu's backward
         * and the bias's reduction become one kernel */
        if (folded != apart - 1 - reduction)
            fail_msg("device %d: %llu launches folded, %llu one by one, %llu for the reduction", d,
                     (unsigned long long)folded, (unsigned long long)apart, (unsigned long long)reduction);
        assert_int_equal(ct_backend_launch_count(device, CT_K_linear_bias_relu_f32), fused_forward + 1);
        assert_int_equal(ct_backend_launch_count(device, CT_K_linear_relu_backward_f32), fused_backward + 1);
        assert_int_equal(ct_backend_launch_count(device, CT_K_relu_f32), relu);
        ct_module_release(m);
        /* nothing left in flight at exit: this test reads nothing back, and a PoCL driver thread
         * still working while the process exits crashed once in CI after every test had passed */
        assert_int_equal(ct_synchronize(device), CT_OK);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(folded_forward_and_backward_equal_the_modules_one_by_one),
        cmocka_unit_test(folded_under_autocast_equals_the_modules_one_by_one),
        cmocka_unit_test(folded_gradients_match_finite_differences),
        cmocka_unit_test(the_bias_gradient_has_the_same_bits_on_every_device),
        cmocka_unit_test(a_training_step_makes_the_fused_launches),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
