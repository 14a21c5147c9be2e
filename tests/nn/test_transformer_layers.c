/* LayerNorm, Embedding and GELU(approximate) modules and their functional forms: parameter
 * names and initial values as PyTorch's, layer_norm's values against a hand computation, the
 * embedding's padding row, the embedding gradient's bits (the same twice and on every device,
 * with many repeated indices), and the errors. */
#include <math.h>
#include <string.h>

#include "test_common.h"

static void layer_norm_module_has_weight_and_bias(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t shape[1] = {4};
    ct_module *m = ct_layer_norm_module(shape, 1, 1e-5, true);
    assert_non_null(m);
    ct_named_tensors *p = ct_module_named_parameters(m);
    assert_int_equal(p->count, 2);
    assert_string_equal(p->names[0], "weight");
    assert_string_equal(p->names[1], "bias");
    float w[4], b[4];
    assert_int_equal(ct_tensor_to_array(p->tensors[0], w, sizeof w), CT_OK);
    assert_int_equal(ct_tensor_to_array(p->tensors[1], b, sizeof b), CT_OK);
    for (int i = 0; i < 4; i++) assert_true(w[i] == 1.0f && b[i] == 0.0f);
    ct_named_tensors_free(p);
    /* y = (x - mean) / sqrt(var + eps): [1, 2, 3, 4] has mean 2.5 and variance 1.25 */
    const float x[4] = {1, 2, 3, 4};
    ct_tensor *t = ct_tensor_from_data(x, CT_F32, shape, 1, CT_DEVICE_CPU);
    float y[4];
    assert_int_equal(ct_tensor_to_array(ct_module_forward(m, t), y, sizeof y), CT_OK);
    for (int i = 0; i < 4; i++) assert_true(fabs(y[i] - (x[i] - 2.5) / sqrt(1.25 + 1e-5)) < 1e-6);
    ct_module_release(m);
    ct_module *plain = ct_layer_norm_module(shape, 1, 1e-5, false);
    assert_int_equal(ct_module_parameter_count(plain), 0);
    ct_module_release(plain);
    assert_null(ct_layer_norm_module(shape, 0, 1e-5, true));
    assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
    ct_scope_pop();
}

static void embedding_module_zeroes_its_padding_row(void **state)
{
    (void)state;
    ct_scope_push();
    ct_manual_seed(3);
    ct_module *m = ct_embedding_module(5, 3, 2);
    assert_non_null(m);
    ct_named_tensors *p = ct_module_named_parameters(m);
    assert_int_equal(p->count, 1);
    assert_string_equal(p->names[0], "weight");
    float w[15];
    assert_int_equal(ct_tensor_to_array(p->tensors[0], w, sizeof w), CT_OK);
    ct_named_tensors_free(p);
    int nonzero = 0;
    for (int i = 0; i < 15; i++) {
        if (i / 3 == 2) assert_true(w[i] == 0.0f);
        else nonzero += w[i] != 0.0f;
    }
    assert_int_equal(nonzero, 12);
    /* the indices [[2, 0], [4, 2]] pick rows; the padding row's gradient stays zero */
    const int64_t picks[4] = {2, 0, 4, 2}, shape[2] = {2, 2};
    ct_tensor *indices = ct_tensor_from_data(picks, CT_I64, shape, 2, CT_DEVICE_CPU);
    ct_tensor *out = ct_module_forward(m, indices);
    assert_int_equal(ct_tensor_ndim(out), 3);
    assert_int_equal(ct_tensor_shape(out)[2], 3);
    float o[12];
    assert_int_equal(ct_tensor_to_array(out, o, sizeof o), CT_OK);
    for (int k = 0; k < 4; k++)
        for (int c = 0; c < 3; c++) assert_true(o[k * 3 + c] == w[picks[k] * 3 + c]);
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    float g[15];
    assert_int_equal(ct_tensor_to_array(ct_grad(ct_module_parameter(m, "weight")), g, sizeof g), CT_OK);
    for (int c = 0; c < 3; c++) {
        assert_true(g[0 * 3 + c] == 1.0f && g[1 * 3 + c] == 0.0f && g[2 * 3 + c] == 0.0f);
        assert_true(g[3 * 3 + c] == 0.0f && g[4 * 3 + c] == 1.0f);
    }
    ct_module_release(m);
    ct_scope_pop();
}

/* The weight's gradient from 4096 indices into 7 rows, on device: its bits. */
static ct_status embedding_gradient_bits(ct_device device, float *bits, size_t bytes)
{
    ct_manual_seed(9);
    int64_t wshape[2] = {7, 33}, ishape[2] = {64, 64}, gshape[3] = {64, 64, 33};
    ct_tensor *w = ct_to(ct_randn(wshape, 2, CT_F32, CT_DEVICE_CPU), device);
    ct_tensor *picks = ct_to(ct_randint(0, 7, ishape, 2, CT_I64, CT_DEVICE_CPU), device);
    ct_tensor *upstream = ct_to(ct_randn(gshape, 3, CT_F32, CT_DEVICE_CPU), device);
    ct_requires_grad_(w, true);
    ct_status status = ct_backward_with(ct_embedding(w, picks, -1), upstream, false);
    return status == CT_OK ? ct_tensor_to_array(ct_grad(w), bits, bytes) : status;
}

static void embedding_gradient_is_the_same_bits_everywhere(void **state)
{
    (void)state;
    ct_scope_push();
    static float first[7 * 33], again[7 * 33];
    assert_int_equal(embedding_gradient_bits(CT_DEVICE_CPU, first, sizeof first), CT_OK);
    assert_int_equal(embedding_gradient_bits(CT_DEVICE_CPU, again, sizeof again), CT_OK);
    assert_memory_equal(first, again, sizeof first);
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) {
        assert_int_equal(embedding_gradient_bits((ct_device){CT_OPENCL, i}, again, sizeof again), CT_OK);
        assert_memory_equal(first, again, sizeof first);
    }
    ct_scope_pop();
}

/* The weight's and bias's gradients of layer_norm over 600 rows (several chunks): the same
 * bits twice. */
static void layer_norm_weight_gradient_is_the_same_bits_twice(void **state)
{
    (void)state;
    ct_scope_push();
    static float runs[2][2 * 37];
    for (int run = 0; run < 2; run++) {
        ct_manual_seed(4);
        int64_t xshape[2] = {600, 37}, n[1] = {37};
        ct_tensor *x = ct_randn(xshape, 2, CT_F32, CT_DEVICE_CPU);
        ct_tensor *w = ct_randn(n, 1, CT_F32, CT_DEVICE_CPU), *b = ct_randn(n, 1, CT_F32, CT_DEVICE_CPU);
        ct_requires_grad_(w, true);
        ct_requires_grad_(b, true);
        ct_tensor *up = ct_randn(xshape, 2, CT_F32, CT_DEVICE_CPU);
        assert_int_equal(ct_backward_with(ct_layer_norm(x, n, 1, w, b, 1e-5), up, false), CT_OK);
        assert_int_equal(ct_tensor_to_array(ct_grad(w), runs[run], 37 * sizeof(float)), CT_OK);
        assert_int_equal(ct_tensor_to_array(ct_grad(b), runs[run] + 37, 37 * sizeof(float)), CT_OK);
    }
    assert_memory_equal(runs[0], runs[1], sizeof runs[0]);
    ct_scope_pop();
}

static void gelu_module_takes_the_approximation(void **state)
{
    (void)state;
    ct_scope_push();
    ct_module *tanh_form = ct_gelu_module_approximate("tanh"), *exact = ct_gelu_module_approximate("none");
    assert_non_null(tanh_form);
    assert_non_null(exact);
    const double x = 1.5;
    ct_tensor *t = ct_tensor_from_data(&x, CT_F64, NULL, 0, CT_DEVICE_CPU);
    double a = 0, e = 0;
    assert_int_equal(ct_tensor_to_array(ct_module_forward(tanh_form, t), &a, sizeof a), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_module_forward(exact, t), &e, sizeof e), CT_OK);
    double want = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    assert_true(fabs(a - want) < 1e-14);
    assert_true(fabs(e - 0.5 * x * (1 + erf(x / sqrt(2)))) < 1e-14);
    ct_module_release(tanh_form);
    ct_module_release(exact);
    assert_null(ct_gelu_module_approximate("fast"));
    assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
    ct_scope_pop();
}

static void bad_arguments_are_errors(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t xshape[2] = {3, 4}, n4[1] = {4}, n5[1] = {5}, vshape[2] = {5, 2}, ishape[1] = {3};
    ct_tensor *x = ct_zeros(xshape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *w5 = ct_ones(n5, 1, CT_F32, CT_DEVICE_CPU), *w64 = ct_ones(n4, 1, CT_F64, CT_DEVICE_CPU);
    assert_null(ct_layer_norm(x, n5, 1, NULL, NULL, 1e-5));
    assert_int_equal(ct_last_error(), CT_ERR_SHAPE);
    assert_null(ct_layer_norm(x, n4, 1, w5, NULL, 1e-5));
    assert_int_equal(ct_last_error(), CT_ERR_SHAPE);
    assert_null(ct_layer_norm(x, n4, 1, w64, NULL, 1e-5));
    assert_int_equal(ct_last_error(), CT_ERR_DTYPE);
    assert_null(ct_layer_norm(x, n4, 1, NULL, NULL, -1.0));
    assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
    ct_tensor *ints = ct_zeros(xshape, 2, CT_I64, CT_DEVICE_CPU);
    assert_null(ct_layer_norm(ints, n4, 1, NULL, NULL, 1e-5));
    assert_int_equal(ct_last_error(), CT_ERR_DTYPE);

    ct_tensor *table = ct_zeros(vshape, 2, CT_F32, CT_DEVICE_CPU);
    const int64_t bad[3] = {0, 5, 1};
    ct_tensor *out_of_range = ct_tensor_from_data(bad, CT_I64, ishape, 1, CT_DEVICE_CPU);
    assert_null(ct_embedding(table, out_of_range, -1));
    assert_int_equal(ct_last_error(), CT_ERR_INDEX);
    assert_non_null(strstr(ct_last_error_message(), "5"));
    ct_tensor *float_indices = ct_zeros(ishape, 1, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_embedding(table, float_indices, -1));
    assert_int_equal(ct_last_error(), CT_ERR_DTYPE);
    const int64_t good[3] = {0, 4, 1};
    ct_tensor *indices = ct_tensor_from_data(good, CT_I64, ishape, 1, CT_DEVICE_CPU);
    assert_null(ct_embedding(table, indices, -2));
    assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
    assert_null(ct_embedding(table, indices, 5));
    assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
    assert_null(ct_embedding(w5, indices, -1)); /* a 1-D weight */
    assert_int_equal(ct_last_error(), CT_ERR_SHAPE);
    assert_null(ct_embedding_module(0, 3, -1));
    assert_null(ct_embedding_module(4, 3, 4));
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layer_norm_module_has_weight_and_bias),
        cmocka_unit_test(embedding_module_zeroes_its_padding_row),
        cmocka_unit_test(embedding_gradient_is_the_same_bits_everywhere),
        cmocka_unit_test(layer_norm_weight_gradient_is_the_same_bits_twice),
        cmocka_unit_test(gelu_module_takes_the_approximation),
        cmocka_unit_test(bad_arguments_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
