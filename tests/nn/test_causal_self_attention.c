/* ct_causal_self_attention: nanoGPT's parameter names and shapes, and its forward equals the same
 * computation written out with the ops (c_attn, heads, causal attention, c_proj); dropout only
 * while training; bad arguments fail with errors naming them. */
#include <math.h>

#include "test_common.h"

static void parameters_have_nanogpt_names_and_shapes(void **state)
{
    (void)state;
    ct_module *m = ct_causal_self_attention(8, 2, 0.0, true);
    assert_non_null(m);
    static const char *names[4] = {"c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"};
    static const int64_t rows[4] = {24, 24, 8, 8};
    for (int i = 0; i < 4; i++) {
        ct_tensor *p = ct_module_parameter(m, names[i]);
        assert_non_null(p);
        assert_int_equal(ct_tensor_shape(p)[0], rows[i]);
        ct_release(p);
    }
    assert_int_equal(ct_module_parameter_count(m), 4);
    ct_module_release(m);
}

static void forward_equals_the_ops_written_out(void **state)
{
    (void)state;
    ct_scope_push();
    ct_manual_seed(4);
    ct_module *m = ct_causal_self_attention(8, 2, 0.0, true);
    int64_t xs[3] = {2, 5, 8};
    ct_tensor *x = ct_randn(xs, 3, CT_F64, CT_DEVICE_CPU);
    assert_int_equal(ct_module_to_dtype(m, CT_F64), CT_OK);
    ct_tensor *y = ct_module_forward(m, x);
    assert_non_null(y);
    /* written out, with the composed attention */
    ct_tensor *w = ct_module_parameter(m, "c_attn.weight"), *b = ct_module_parameter(m, "c_attn.bias");
    ct_tensor *pw = ct_module_parameter(m, "c_proj.weight"), *pb = ct_module_parameter(m, "c_proj.bias");
    ct_tensor *qkv = ct_add(ct_matmul(x, ct_transpose(w, 0, 1)), b);
    ct_tensor *parts[3];
    int count = 0;
    assert_int_equal(ct_split(qkv, 8, 2, parts, 3, &count), CT_OK);
    ct_tensor *heads[3];
    for (int i = 0; i < 3; i++)
        heads[i] = ct_transpose(ct_reshape(parts[i], (int64_t[]){2, 5, 2, 4}, 4), 1, 2);
    ct_tensor *scores = ct_mul_scalar(ct_matmul(heads[0], ct_transpose(heads[1], 2, 3)), 0.5);
    double *mask = calloc(25, sizeof *mask);
    for (int i = 0; i < 25; i++) mask[i] = i % 5 > i / 5 ? -INFINITY : 0.0;
    ct_tensor *additive = ct_tensor_from_data(mask, CT_F64, (int64_t[]){5, 5}, 2, CT_DEVICE_CPU);
    free(mask);
    ct_tensor *att = ct_matmul(ct_softmax(ct_add(scores, additive), -1), heads[2]);
    ct_tensor *joined = ct_reshape(ct_transpose(att, 1, 2), xs, 3);
    ct_tensor *expected = ct_add(ct_matmul(joined, ct_transpose(pw, 0, 1)), pb);
    double got[80], want[80];
    assert_int_equal(ct_tensor_to_array(y, got, sizeof got), CT_OK);
    assert_int_equal(ct_tensor_to_array(expected, want, sizeof want), CT_OK);
    for (int i = 0; i < 80; i++) assert_true(fabs(got[i] - want[i]) < 1e-12);
    ct_release(w);
    ct_release(b);
    ct_release(pw);
    ct_release(pb);
    ct_module_release(m);
    ct_scope_pop();
}

static void dropout_applies_only_while_training(void **state)
{
    (void)state;
    ct_scope_push();
    ct_module *m = ct_causal_self_attention(8, 2, 0.5, true);
    int64_t xs[3] = {1, 6, 8};
    ct_tensor *x = ct_randn(xs, 3, CT_F32, CT_DEVICE_CPU);
    ct_module_train(m, false);
    ct_tensor *a = ct_module_forward(m, x), *b = ct_module_forward(m, x);
    float fa[48], fb[48];
    assert_int_equal(ct_tensor_to_array(a, fa, sizeof fa), CT_OK);
    assert_int_equal(ct_tensor_to_array(b, fb, sizeof fb), CT_OK);
    assert_memory_equal(fa, fb, sizeof fa);
    ct_module_train(m, true);
    ct_tensor *c = ct_module_forward(m, x);
    assert_int_equal(ct_tensor_to_array(c, fb, sizeof fb), CT_OK);
    int differing = 0;
    for (int i = 0; i < 48; i++) differing += fa[i] != fb[i];
    assert_true(differing > 0);
    ct_module_release(m);
    ct_scope_pop();
}

static void bad_arguments_fail(void **state)
{
    (void)state;
    assert_null(ct_causal_self_attention(10, 3, 0.0, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "n_head");
    assert_null(ct_causal_self_attention(8, 2, 1.0, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "dropout");
    ct_module *m = ct_causal_self_attention(8, 2, 0.0, true);
    ct_tensor *x = ct_randn((int64_t[]){2, 8}, 2, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_module_forward(m, x));
    assert_error(CT_ERR_SHAPE, "[B, T, 8]");
    ct_release(x);
    ct_module_release(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parameters_have_nanogpt_names_and_shapes),
        cmocka_unit_test(forward_equals_the_ops_written_out),
        cmocka_unit_test(dropout_applies_only_while_training),
        cmocka_unit_test(bad_arguments_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
