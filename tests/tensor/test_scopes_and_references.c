/* References: new returns one, retain adds, release drops (NULL-safe); scopes release what was
 * returned inside them, keep hands a tensor to the enclosing scope. */
#include <stdio.h>

#include "test_common.h"

static size_t allocated(void) { return ct_memory_allocated(CT_DEVICE_CPU); }

static void release_frees_at_the_last_reference(void **state)
{
    (void)state;
    size_t base = allocated();
    int64_t shape[1] = {10};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_refcount(t), 1);
    assert_ptr_equal(ct_retain(t), t);
    assert_int_equal(ct_refcount(t), 2);
    ct_release(t);
    assert_true(allocated() > base);
    ct_release(t);
    assert_int_equal(allocated(), base);
    ct_release(NULL);
}

static void a_scope_releases_everything_returned_inside_it(void **state)
{
    (void)state;
    size_t base = allocated();
    int64_t shape[1] = {10};
    ct_scope_push();
    for (int i = 0; i < 50; i++) {
        ct_tensor *t = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
        ct_tensor *same = ct_to(t, CT_DEVICE_CPU); /* a new reference to t, recorded too */
        assert_ptr_equal(same, t);
        assert_non_null(ct_to_dtype(t, CT_F64));
    }
    assert_true(allocated() > base);
    assert_int_equal(ct_scope_pop(), CT_OK);
    assert_int_equal(allocated(), base);
}

static void keep_moves_a_tensor_out_of_the_scope(void **state)
{
    (void)state;
    size_t base = allocated();
    int64_t shape[1] = {10};
    ct_scope_push();
    ct_tensor *outer = NULL;
    ct_scope_push();
    ct_tensor *kept = ct_scope_keep(ct_full(shape, 1, 3.0, CT_F32, CT_DEVICE_CPU));
    ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_scope_pop();
    double value = 0;
    outer = kept; /* still alive: it belongs to the enclosing scope now */
    assert_int_equal(ct_item(ct_select(outer, 0, 0), &value), CT_OK);
    assert_true(value == 3.0);
    ct_scope_pop();
    assert_int_equal(allocated(), base);

    /* at top level, keep makes the caller the owner */
    ct_scope_push();
    ct_tensor *mine = ct_scope_keep(ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU));
    ct_scope_pop();
    assert_int_equal(ct_refcount(mine), 1);
    ct_release(mine);
    assert_int_equal(allocated(), base);
}

static void an_explicit_release_inside_a_scope_is_not_released_twice(void **state)
{
    (void)state;
    size_t base = allocated();
    int64_t shape[1] = {10};
    ct_scope_push();
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_release(t);
    assert_int_equal(allocated(), base);
    assert_int_equal(ct_scope_pop(), CT_OK);
    assert_int_equal(allocated(), base);
}

static void popping_without_a_scope_is_an_error(void **state)
{
    (void)state;
    assert_int_equal(ct_scope_pop(), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "there is no open scope");
}

/* A released tensor is marked: using it is an error, never plausible values. */
static void a_released_tensor_used_again_is_an_error(void **state)
{
    (void)state;
    int64_t shape[1] = {3};
    ct_tensor *a = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU), *b = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_release(a);
    assert_null(ct_add(a, b));
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_add: a is a tensor used after release");
    assert_null(ct_add(b, a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "used after release");
    assert_null(ct_relu(a));
    assert_error(CT_ERR_INVALID_ARGUMENT, "used after release");
    assert_null(ct_sum(a, NULL, 0, false));
    assert_error(CT_ERR_INVALID_ARGUMENT, "used after release");
    assert_null(ct_reshape(a, shape, 1));
    assert_error(CT_ERR_INVALID_ARGUMENT, "used after release");
    assert_null(ct_to(a, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "used after release");
    float values[3];
    assert_int_equal(ct_tensor_to_array(a, values, sizeof values), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_to_array: t is a tensor used after release");
    assert_int_equal(ct_numel(a), 0);
    assert_error(CT_ERR_INVALID_ARGUMENT, "used after release");
    /* released twice: noticed, and nothing else is freed */
    ct_release(a);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_release: the tensor was released already");
    assert_int_equal(ct_refcount(b), 1);
    ct_release(b);
}

static void a_result_a_scope_released_is_not_read(void **state)
{
    (void)state;
    int64_t shape[1] = {1};
    ct_scope_push();
    ct_tensor *x = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_mul_scalar(x, 2.0); /* forgot ct_scope_keep */
    assert_int_equal(ct_scope_pop(), CT_OK);
    double value = -1;
    assert_int_equal(ct_item(y, &value), CT_ERR_INVALID_ARGUMENT);
    assert_true(value == -1);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_item: t is a tensor used after release");
}

static void printing_null_or_a_released_tensor_says_so(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ct_fprint(f, NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_tensor *t = ct_zeros((int64_t[]){2}, 1, CT_F32, CT_DEVICE_CPU);
    ct_release(t);
    assert_int_equal(ct_fprint(f, t), CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
    char text[128] = {0};
    rewind(f);
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    assert_string_equal(text, "(null)\n(a tensor used after release)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(release_frees_at_the_last_reference),
        cmocka_unit_test(a_scope_releases_everything_returned_inside_it),
        cmocka_unit_test(keep_moves_a_tensor_out_of_the_scope),
        cmocka_unit_test(an_explicit_release_inside_a_scope_is_not_released_twice),
        cmocka_unit_test(popping_without_a_scope_is_an_error),
        cmocka_unit_test(a_released_tensor_used_again_is_an_error),
        cmocka_unit_test(a_result_a_scope_released_is_not_read),
        cmocka_unit_test(printing_null_or_a_released_tensor_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
