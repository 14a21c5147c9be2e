/* What ct_backend_gemm refuses before any BLAS library sees it, on every device type alike: sizes
 * above int (which OpenBLAS's cblas, CLBlast and cuBLAS take; a cast would wrap them) and negative
 * offsets; and an empty output is no call at all. Nothing is allocated: the refusals come first. */
#include <limits.h>

#include "backend/backend.h"
#include "test_common.h"

static ct_gemm_args small_product(void)
{
    return (ct_gemm_args){.dtype = CT_F32, .m = 2, .n = 2, .k = 2, .batch = 1, .alpha = 1.0,
                          .lda = 2, .ldb = 2, .ldc = 2};
}

static void sizes_above_int_are_refused_not_wrapped(void **state)
{
    (void)state;
    ct_gemm_args g = small_product();
    g.m = (long)INT_MAX + 1;
    assert_int_equal(ct_backend_gemm(CT_DEVICE_CPU, &g), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "gemm on cpu: 2147483648 x 2 x 2");
    g = small_product();
    g.ldc = (long)INT_MAX + 2;
    assert_int_equal(ct_backend_gemm(CT_DEVICE_CPU, &g), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "exceeds the BLAS libraries' int sizes");
}

static void negative_offsets_are_refused(void **state)
{
    (void)state;
    ct_gemm_args g = small_product();
    g.b_offset = -1;
    assert_int_equal(ct_backend_gemm(CT_DEVICE_CPU, &g), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "gemm on cpu: negative offsets or batch strides");
}

static void an_empty_output_calls_nothing(void **state)
{
    (void)state;
    ct_gemm_args g = small_product(); /* a, b and c are NULL: a call would crash */
    g.m = 0;
    assert_int_equal(ct_backend_gemm(CT_DEVICE_CPU, &g), CT_OK);
    g = small_product();
    g.batch = 0;
    assert_int_equal(ct_backend_gemm(CT_DEVICE_CPU, &g), CT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_above_int_are_refused_not_wrapped),
        cmocka_unit_test(negative_offsets_are_refused),
        cmocka_unit_test(an_empty_output_calls_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
