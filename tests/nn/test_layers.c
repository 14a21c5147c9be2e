/* The layers' forward against plain C: Linear (and its initialisation), the activations,
 * Flatten, Dropout (train and eval, the same masks on every device), Sequential; on the cpu and
 * on opencl:0. */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_test.h"

static ct_device devices[2];
static int device_count;

static int setup(void **state)
{
    (void)state;
    devices[0] = CT_DEVICE_CPU;
    device_count = 1;
    if (have_opencl()) devices[device_count++] = OPENCL0;
    return 0;
}

static void linear_against_a_hand_computation(void **state)
{
    (void)state;
    for (int d = 0; d < device_count; d++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            ct_manual_seed(11);
            ct_module *fc = ct_linear(3, 2, with_bias);
            assert_int_equal(ct_module_to(fc, devices[d]), CT_OK);
            double w[6], b[2] = {0, 0};
            ct_tensor *weight = ct_module_parameter(fc, "weight");
            values_of(weight, w, 6);
            if (with_bias) {
                ct_tensor *bias = ct_module_parameter(fc, "bias");
                values_of(bias, b, 2);
                ct_release(bias);
            } else {
                assert_null(ct_module_parameter(fc, "bias"));
                ct_clear_error();
            }
            /* a [2, 2, 3] input: Linear acts on the last dim */
            double x[12] = {1, -2, 0.5, 3, 0.25, -1, -0.5, 2, 1.5, 0, 1, -3};
            ct_tensor *input = tensor_of(x, (int64_t[]){2, 2, 3}, 3, CT_F32, devices[d]);
            ct_tensor *y = ct_module_forward(fc, input);
            assert_non_null(y);
            assert_int_equal(ct_tensor_ndim(y), 3);
            assert_int_equal(ct_tensor_size(y, 2), 2);
            double got[8], want[8];
            values_of(y, got, 8);
            for (int r = 0; r < 4; r++)
                for (int o = 0; o < 2; o++)
                    want[r * 2 + o] = b[o] + w[o * 3] * x[r * 3] + w[o * 3 + 1] * x[r * 3 + 1] +
                                      w[o * 3 + 2] * x[r * 3 + 2];
            assert_close_array(got, want, 8, 1e-5, 1e-6, "Linear");

            ct_tensor *wrong = ct_ones((int64_t[]){2, 4}, 2, CT_F32, devices[d]);
            assert_null(ct_module_forward(fc, wrong));
            assert_error(CT_ERR_SHAPE, "Linear(in_features=3, out_features=2): the input has shape [2, 4]; its last dim must be 3");
            ct_release(wrong);
            ct_release(weight);
            ct_release(input);
            ct_release(y);
            ct_module_release(fc);
        }
}

static void linear_initialisation_bounds_and_seed(void **state)
{
    (void)state;
    ct_manual_seed(5);
    ct_module *a = ct_linear(16, 8, true);
    ct_manual_seed(5);
    ct_module *b = ct_linear(16, 8, true);
    double wa[128], wb[128], ba[8];
    ct_tensor *t = ct_module_parameter(a, "weight");
    assert_int_equal(ct_tensor_dtype(t), CT_F32);
    values_of(t, wa, 128);
    ct_release(t);
    t = ct_module_parameter(b, "weight");
    values_of(t, wb, 128);
    ct_release(t);
    t = ct_module_parameter(a, "bias");
    values_of(t, ba, 8);
    ct_release(t);
    double lo = 1, hi = -1;
    for (int i = 0; i < 128; i++) {
        assert_true(wa[i] == wb[i]); /* one seed, one initialisation */
        assert_true(fabs(wa[i]) <= 0.25); /* 1 / sqrt(16) */
        lo = fmin(lo, wa[i]);
        hi = fmax(hi, wa[i]);
    }
    assert_true(lo < -0.2 && hi > 0.2); /* spread over the whole range */
    for (int i = 0; i < 8; i++) assert_true(fabs(ba[i]) <= 0.25);
    ct_module_release(a);
    ct_module_release(b);
}

static void activations_against_plain_c(void **state)
{
    (void)state;
    double x[6] = {-2.5, -0.75, -0.1, 0.2, 1.0, 3.0};
    for (int d = 0; d < device_count; d++) {
        ct_tensor *input = tensor_of(x, (int64_t[]){2, 3}, 2, CT_F64, devices[d]);
        enum { KINDS = 8 };
        /* Softplus(2, 3): linear past x = 1.5 */
        ct_module *modules[KINDS] = {ct_relu_module(), ct_gelu_module(), ct_sigmoid_module(),
                                     ct_tanh_module(), ct_silu_module(), ct_leaky_relu_module(0.2),
                                     ct_softplus_module(2.0, 3.0), ct_elu_module(1.5)};
        for (int k = 0; k < KINDS; k++) {
            ct_tensor *y = ct_module_forward(modules[k], input);
            double got[6], want[6];
            values_of(y, got, 6);
            for (int i = 0; i < 6; i++) {
                double v = x[i];
                want[i] = k == 0 ? fmax(v, 0.0)
                          : k == 1 ? v * 0.5 * (1.0 + erf(v / sqrt(2.0)))
                          : k == 2 ? 1.0 / (1.0 + exp(-v))
                          : k == 3 ? tanh(v)
                          : k == 4 ? v / (1.0 + exp(-v))
                          : k == 5 ? (v > 0 ? v : 0.2 * v)
                          : k == 6 ? (2 * v > 3 ? v : log1p(exp(2 * v)) / 2)
                                   : (v > 0 ? v : 1.5 * expm1(v));
            }
            assert_close_array(got, want, 6, 1e-12, 1e-14, ct_module_kind(modules[k]));
            ct_release(y);
            ct_module_release(modules[k]);
        }
        ct_release(input);
    }
    ct_module *leaky = ct_leaky_relu_module(0.01);
    char *text = ct_module_to_string(leaky);
    assert_non_null(strstr(text, "LeakyReLU(negative_slope=0.01)"));
    free(text);
    ct_module_release(leaky);
    assert_null(ct_softplus_module(0.0, 20.0));
    assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
}

static void flatten_keeps_the_batch_dim(void **state)
{
    (void)state;
    ct_module *flat = ct_flatten_module(1, -1);
    ct_tensor *x = ct_ones((int64_t[]){2, 3, 4}, 3, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_module_forward(flat, x);
    assert_int_equal(ct_tensor_ndim(y), 2);
    assert_int_equal(ct_tensor_size(y, 0), 2);
    assert_int_equal(ct_tensor_size(y, 1), 12);
    ct_release(y);
    ct_module *bad = ct_flatten_module(5, -1);
    assert_null(ct_module_forward(bad, x));
    assert_int_equal(ct_last_error(), CT_ERR_INDEX);
    ct_clear_error();
    ct_release(x);
    ct_module_release(bad);
    ct_module_release(flat);
}

static void dropout_masks_scales_and_passes_through_in_eval(void **state)
{
    (void)state;
    const int64_t n = 4000;
    double *first = malloc(sizeof(double) * (size_t)n), *got = malloc(sizeof(double) * (size_t)n);
    ct_module *drop = ct_dropout(0.3);
    for (int d = 0; d < device_count; d++) {
        ct_manual_seed(21);
        ct_tensor *x = ct_ones((int64_t[]){n}, 1, CT_F32, devices[d]);
        assert_int_equal(ct_requires_grad_(x, true), CT_OK);
        ct_tensor *y = ct_module_forward(drop, x);
        assert_non_null(y);
        values_of(y, got, n);
        int64_t zeros = 0;
        for (int64_t i = 0; i < n; i++) {
            if (got[i] == 0.0)
                zeros++;
            else if (fabs(got[i] - 1.0 / 0.7) > 1e-6)
                fail_msg("a kept element is %g, not 1 / (1 - p)", got[i]);
        }
        assert_true(zeros > n * 0.25 && zeros < n * 0.35);
        if (d == 0)
            memcpy(first, got, sizeof(double) * (size_t)n);
        else
            assert_close_array(got, first, n, 0, 0, "the same mask on every device");
        /* The gradient is the mask: d sum(y) / dx = y / x. */
        ct_tensor *total = ct_sum(y, NULL, 0, false);
        assert_int_equal(ct_backward(total), CT_OK);
        ct_tensor *g = ct_grad(x);
        double grad[8];
        ct_tensor *head = ct_narrow(g, 0, 0, 8);
        values_of(head, grad, 8);
        assert_close_array(grad, got, 8, 1e-6, 0, "dropout gradient");
        ct_release(head);
        ct_release(g);
        ct_release(total);
        ct_release(y);

        ct_module_eval(drop);
        y = ct_module_forward(drop, x);
        assert_ptr_equal(y, x); /* the identity, as PyTorch returns its input */
        ct_release(y);
        ct_module_train(drop, true);
        ct_release(x);
    }
    ct_module *all = ct_dropout(1.0), *none = ct_dropout(0.0);
    ct_tensor *x = ct_ones((int64_t[]){5}, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_module_forward(all, x);
    ct_tensor *total = ct_sum(y, NULL, 0, false);
    assert_true(value_of(total) == 0.0);
    ct_release(total);
    ct_release(y);
    y = ct_module_forward(none, x);
    assert_ptr_equal(y, x);
    ct_release(y);
    ct_tensor *ints = ct_ones((int64_t[]){5}, 1, CT_I32, CT_DEVICE_CPU);
    assert_null(ct_module_forward(drop, ints));
    assert_error(CT_ERR_DTYPE, "Dropout: the input is int32");
    ct_release(ints);
    ct_release(x);
    ct_module_release(all);
    ct_module_release(none);
    ct_module_release(drop);
    free(first);
    free(got);
}

static void sequential_is_the_composition(void **state)
{
    (void)state;
    ct_manual_seed(8);
    ct_module *seq = ct_sequential((ct_module *[]){ct_linear(3, 4, true), ct_tanh_module(), ct_linear(4, 2, true)}, 3);
    ct_tensor *x = ct_rand((int64_t[]){5, 3}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *h = ct_module_forward(ct_module_child(seq, "0"), x);
    ct_tensor *a = ct_module_forward(ct_module_child(seq, "1"), h);
    ct_tensor *want = ct_module_forward(ct_module_child(seq, "2"), a);
    ct_tensor *got = ct_module_forward(seq, x);
    double g[10], w[10];
    values_of(got, g, 10);
    values_of(want, w, 10);
    assert_close_array(g, w, 10, 0, 0, "Sequential");
    ct_module *empty = ct_sequential(NULL, 0);
    ct_tensor *same = ct_module_forward(empty, x);
    assert_ptr_equal(same, x);
    ct_release(same);
    ct_module *list = ct_module_list((ct_module *[]){ct_relu_module()}, 1);
    assert_null(ct_module_forward(list, x));
    assert_error(CT_ERR_INVALID_ARGUMENT, "a ModuleList has no forward of its own");
    assert_int_equal(ct_sequential_append(list, ct_module_child(seq, "1")), CT_OK);
    assert_string_equal(ct_module_kind(ct_module_child(list, "1")), "Tanh");
    ct_release(x);
    ct_release(h);
    ct_release(a);
    ct_release(want);
    ct_release(got);
    ct_module_release(empty);
    ct_module_release(list);
    ct_module_release(seq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_against_a_hand_computation),
        cmocka_unit_test(linear_initialisation_bounds_and_seed),
        cmocka_unit_test(activations_against_plain_c),
        cmocka_unit_test(flatten_keeps_the_batch_dim),
        cmocka_unit_test(dropout_masks_scales_and_passes_through_in_eval),
        cmocka_unit_test(sequential_is_the_composition),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
