/* ct_set_float32_matmul_precision takes "highest", "high" and "medium" (as
 * torch.set_float32_matmul_precision) and ct_get_float32_matmul_precision returns the one set;
 * anything else is refused with a message that names the input and the valid values, and leaves
 * the precision as it was. The default is "highest" (no TF32), "high" with CTORCH_ALLOW_TF32=1
 * (the test's `environment` run). On the CPU a float32 product is the same in every precision:
 * OpenBLAS has no TF32. */
#include <string.h>

#include "test_common.h"

static const char *scenario = "";

static void test_the_default_comes_from_the_environment(void **state)
{
    (void)state;
    assert_string_equal(ct_get_float32_matmul_precision(),
                        strcmp(scenario, "environment") == 0 ? "high" : "highest");
}

static void test_the_three_precisions_are_kept(void **state)
{
    (void)state;
    static const char *const names[] = {"medium", "high", "highest"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ct_set_float32_matmul_precision(names[i]), CT_OK);
        assert_string_equal(ct_get_float32_matmul_precision(), names[i]);
    }
}

static void test_a_bad_precision_names_the_input_and_the_choices(void **state)
{
    (void)state;
    assert_int_equal(ct_set_float32_matmul_precision("high"), CT_OK);
    static const char *const bad[] = {"tf32", "", "High", "highest "};
    for (int i = 0; i < 4; i++) {
        ct_clear_error();
        assert_int_equal(ct_set_float32_matmul_precision(bad[i]), CT_ERR_INVALID_ARGUMENT);
        assert_int_equal(ct_last_error(), CT_ERR_INVALID_ARGUMENT);
        char quoted[32];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        const char *message = ct_last_error_message();
        assert_non_null(strstr(message, quoted));
        assert_non_null(strstr(message, "\"highest\""));
        assert_non_null(strstr(message, "\"high\""));
        assert_non_null(strstr(message, "\"medium\""));
        assert_string_equal(ct_get_float32_matmul_precision(), "high");
    }
    ct_clear_error();
    assert_int_equal(ct_set_float32_matmul_precision(NULL), CT_ERR_NULL_ARGUMENT);
    assert_int_equal(ct_last_error(), CT_ERR_NULL_ARGUMENT);
    assert_string_equal(ct_get_float32_matmul_precision(), "high");
}

/* The CPU's float32 products give the same bits whatever the precision. */
static void test_cpu_products_do_not_change(void **state)
{
    (void)state;
    ct_manual_seed(7);
    ct_tensor *a = ct_randn((int64_t[]){31, 19}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *b = ct_randn((int64_t[]){19, 23}, 2, CT_F32, CT_DEVICE_CPU);
    float exact[31 * 23], allowed[31 * 23];
    assert_int_equal(ct_set_float32_matmul_precision("highest"), CT_OK);
    ct_tensor *c = ct_matmul(a, b);
    assert_int_equal(ct_tensor_to_array(c, exact, sizeof exact), CT_OK);
    ct_release(c);
    assert_int_equal(ct_set_float32_matmul_precision("medium"), CT_OK);
    c = ct_matmul(a, b);
    assert_int_equal(ct_tensor_to_array(c, allowed, sizeof allowed), CT_OK);
    assert_memory_equal(exact, allowed, sizeof exact);
    ct_release(c), ct_release(a), ct_release(b);
    assert_int_equal(ct_set_float32_matmul_precision("highest"), CT_OK);
}

int main(int argc, char **argv)
{
    scenario = argc > 1 ? argv[1] : "";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_default_comes_from_the_environment),
        cmocka_unit_test(test_the_three_precisions_are_kept),
        cmocka_unit_test(test_a_bad_precision_names_the_input_and_the_choices),
        cmocka_unit_test(test_cpu_products_do_not_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
