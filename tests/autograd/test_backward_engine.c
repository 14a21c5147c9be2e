/* The backward engine: gradients flow back through the recorded graph, sum where paths meet,
 * accumulate across calls, and nothing is recorded without grad mode or requires_grad. */
#include <math.h>

#include "autograd_test.h"

static void gradients_of_a_small_expression(void **state)
{
    (void)state;
    ct_scope_push();
    /* y = (a * b + a) / b: dy/da = (b + 1) / b, dy/db = -a / b^2 */
    ct_tensor *a = scalar(3.0), *b = scalar(2.0);
    ct_tensor *y = ct_div(ct_add(ct_mul(a, b), a), b);
    assert_string_equal(ct_grad_fn_name(y), "DivBackward");
    assert_false(ct_is_leaf(y));
    assert_true(ct_is_leaf(a));
    assert_int_equal(ct_backward(y), CT_OK);
    assert_true(fabs(grad_of(a) - 1.5) < 1e-12);
    assert_true(fabs(grad_of(b) + 0.75) < 1e-12);
    ct_scope_pop();
}

static void gradients_accumulate_until_cleared(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *a = scalar(2.0);
    for (int i = 0; i < 3; i++) assert_int_equal(ct_backward(ct_mul(a, a)), CT_OK);
    assert_true(fabs(grad_of(a) - 12.0) < 1e-12);
    ct_zero_grad(a);
    ct_tensor *g = ct_grad(a);
    assert_null(g);
    ct_scope_pop();
}

static void a_freed_graph_refuses_a_second_backward(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *a = scalar(2.0);
    ct_tensor *y = ct_mul(a, a);
    assert_int_equal(ct_backward_with(y, NULL, true), CT_OK);
    assert_int_equal(ct_backward(y), CT_OK); /* the first kept the graph */
    assert_true(fabs(grad_of(a) - 8.0) < 1e-12);
    assert_int_equal(ct_backward(y), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "retain_graph");
    ct_scope_pop();
}

static void no_grad_and_detach_record_nothing(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *a = scalar(2.0);
    ct_no_grad_push();
    ct_no_grad_push();
    ct_tensor *y = ct_mul(a, a);
    ct_no_grad_pop();
    assert_false(ct_is_grad_enabled());
    ct_no_grad_pop();
    assert_true(ct_is_grad_enabled());
    assert_false(ct_requires_grad(y));
    assert_null(ct_grad_fn_name(y));
    assert_int_equal(ct_backward(y), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "does not require grad");
    ct_tensor *d = ct_detach(ct_mul(a, a));
    assert_false(ct_requires_grad(d));
    assert_true(ct_is_leaf(d));
    bool previous = ct_set_grad_enabled(false);
    assert_true(previous);
    assert_false(ct_requires_grad(ct_add(a, a)));
    ct_set_grad_enabled(true);
    ct_scope_pop();
}

static void bad_uses_are_errors(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t shape[1] = {3};
    ct_tensor *ints = ct_zeros(shape, 1, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_requires_grad_(ints, true), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "only floating tensors can require gradients");
    ct_tensor *v = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_requires_grad_(v, true);
    ct_tensor *y = ct_mul(v, v);
    assert_int_equal(ct_backward(y), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "implied only for one element");
    ct_tensor *wrong = ct_ones((int64_t[]){2}, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_backward_with(y, wrong, false), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "the gradient has shape [2] but the tensor [3]");
    assert_int_equal(ct_requires_grad_(y, false), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "only leaves");
    assert_int_equal(ct_backward(NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_scope_pop();
}

static void a_long_chain_is_walked_and_freed_without_recursion(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *a = scalar(1.0);
    ct_tensor *zero = ct_zeros(NULL, 0, CT_F64, CT_DEVICE_CPU);
    ct_tensor *y = ct_retain(a);
    for (int i = 0; i < 100000; i++) {
        ct_tensor *next = ct_add(y, zero);
        ct_release(y);
        y = next;
    }
    assert_int_equal(ct_backward(y), CT_OK);
    assert_true(fabs(grad_of(a) - 1.0) < 1e-12);
    ct_release(y); /* frees 100000 nodes in a loop, not 100000 frames deep */
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_of_a_small_expression),
        cmocka_unit_test(gradients_accumulate_until_cleared),
        cmocka_unit_test(a_freed_graph_refuses_a_second_backward),
        cmocka_unit_test(no_grad_and_detach_record_nothing),
        cmocka_unit_test(bad_uses_are_errors),
        cmocka_unit_test(a_long_chain_is_walked_and_freed_without_recursion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
