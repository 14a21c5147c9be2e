/* Tensors are created on their device and read back with the values they were given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ctorch.h"

static void from_data_reads_back_the_same_values(void **state)
{
    (void)state;
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    ct_tensor *t = ct_tensor_from_data(data, CT_F32, shape, 2, CT_DEVICE_CPU);
    assert_non_null(t);
    assert_int_equal(ct_numel(t), 6);
    float back[6] = {0};
    assert_int_equal(ct_tensor_to_array(t, back, sizeof back), CT_OK);
    assert_memory_equal(back, data, sizeof data);
    ct_release(t);
}

static void full_fills_every_element_in_its_dtype(void **state)
{
    (void)state;
    int64_t shape[1] = {100000};
    ct_tensor *t = ct_full(shape, 1, 2.5, CT_I32, CT_DEVICE_CPU);
    assert_non_null(t);
    int32_t *back = calloc(100000, sizeof *back);
    assert_int_equal(ct_tensor_to_array(t, back, 100000 * sizeof *back), CT_OK);
    for (int i = 0; i < 100000; i++) assert_int_equal(back[i], 2);
    free(back);
    ct_release(t);
}

static void to_dtype_converts_and_to_same_device_returns_self(void **state)
{
    (void)state;
    double data[3] = {-1.5, 0.0, 2.0};
    int64_t shape[1] = {3};
    ct_tensor *t = ct_tensor_from_data(data, CT_F64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *same = ct_to(t, CT_DEVICE_CPU);
    assert_ptr_equal(same, t);
    assert_int_equal(ct_refcount(t), 2);
    ct_tensor *b = ct_to_dtype(t, CT_BOOL);
    uint8_t flags[3];
    assert_int_equal(ct_tensor_to_array(b, flags, sizeof flags), CT_OK);
    assert_int_equal(flags[0], 1);
    assert_int_equal(flags[1], 0);
    assert_int_equal(flags[2], 1);
    ct_release(b);
    ct_release(same);
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_data_reads_back_the_same_values),
        cmocka_unit_test(full_fills_every_element_in_its_dtype),
        cmocka_unit_test(to_dtype_converts_and_to_same_device_returns_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
