/* The per-thread last error, status names, and the dtype table with PyTorch's promotion. */
#include <pthread.h>

#include "core/core_internal.h"
#include "test_common.h"

static void an_error_keeps_its_status_and_message_until_cleared(void **state)
{
    (void)state;
    ct_clear_error();
    assert_int_equal(ct_last_error(), CT_OK);
    assert_string_equal(ct_last_error_message(), "");
    assert_int_equal(ct_error(CT_ERR_SHAPE, "shape %d", 7), CT_ERR_SHAPE);
    assert_int_equal(ct_last_error(), CT_ERR_SHAPE);
    assert_string_equal(ct_last_error_message(), "shape 7");
    ct_clear_error();
    assert_int_equal(ct_last_error(), CT_OK);
}

static void a_null_argument_keeps_the_first_error_of_a_chain(void **state)
{
    (void)state;
    ct_clear_error();
    ct_null_argument("ct_relu", "a");
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_relu: argument 'a' is NULL");
    ct_error(CT_ERR_DTYPE, "the first failure");
    ct_null_argument("ct_relu", "a");
    assert_error(CT_ERR_DTYPE, "the first failure");
}

static void *fail_in_thread(void *arg)
{
    (void)arg;
    ct_error(CT_ERR_IO, "thread error");
    return NULL;
}

static void errors_are_kept_per_thread(void **state)
{
    (void)state;
    ct_clear_error();
    pthread_t thread;
    pthread_create(&thread, NULL, fail_in_thread, NULL);
    pthread_join(thread, NULL);
    assert_int_equal(ct_last_error(), CT_OK);
}

static void status_names_are_the_constants(void **state)
{
    (void)state;
    assert_string_equal(ct_status_name(CT_OK), "CT_OK");
    assert_string_equal(ct_status_name(CT_ERR_OUT_OF_MEMORY), "CT_ERR_OUT_OF_MEMORY");
    assert_string_equal(ct_status_name((ct_status)999), "CT_ERR_UNKNOWN");
}

static void dtypes_have_sizes_names_and_categories(void **state)
{
    (void)state;
    assert_int_equal(ct_dtype_size(CT_F32), 4);
    assert_int_equal(ct_dtype_size(CT_F64), 8);
    assert_int_equal(ct_dtype_size(CT_I32), 4);
    assert_int_equal(ct_dtype_size(CT_I64), 8);
    assert_int_equal(ct_dtype_size(CT_U8), 1);
    assert_int_equal(ct_dtype_size(CT_BOOL), 1);
    assert_string_equal(ct_dtype_name(CT_BOOL), "bool");
    assert_string_equal(ct_dtype_name((ct_dtype)42), "invalid");
    assert_true(ct_dtype_is_floating(CT_F64));
    assert_false(ct_dtype_is_floating(CT_I64));
    assert_true(ct_dtype_is_integral(CT_U8));
    assert_false(ct_dtype_is_integral(CT_BOOL));
}

static void promotion_follows_pytorch(void **state)
{
    (void)state;
    assert_int_equal(ct_promote_types(CT_I32, CT_F32), CT_F32);
    assert_int_equal(ct_promote_types(CT_I64, CT_F32), CT_F32);
    assert_int_equal(ct_promote_types(CT_F32, CT_F64), CT_F64);
    assert_int_equal(ct_promote_types(CT_U8, CT_I32), CT_I32);
    assert_int_equal(ct_promote_types(CT_BOOL, CT_U8), CT_U8);
    assert_int_equal(ct_promote_types(CT_BOOL, CT_BOOL), CT_BOOL);
    assert_int_equal(ct_promote_types(CT_I64, CT_I32), CT_I64);
}

static void byte_sizes_print_in_binary_units(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(ct_format_bytes(512, buf, sizeof buf), "512 B");
    assert_string_equal(ct_format_bytes(1536, buf, sizeof buf), "1.50 KiB");
    assert_string_equal(ct_format_bytes(1125899906842624.0, buf, sizeof buf), "1.00 PiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_error_keeps_its_status_and_message_until_cleared),
        cmocka_unit_test(a_null_argument_keeps_the_first_error_of_a_chain),
        cmocka_unit_test(errors_are_kept_per_thread),
        cmocka_unit_test(status_names_are_the_constants),
        cmocka_unit_test(dtypes_have_sizes_names_and_categories),
        cmocka_unit_test(promotion_follows_pytorch),
        cmocka_unit_test(byte_sizes_print_in_binary_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
