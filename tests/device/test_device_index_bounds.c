/* A device index is 0 or more, or -1 for "the current device of the type"; any other negative
 * index is refused, naming the device, wherever a device is taken. A device string's index that is
 * a number too large for a device is refused as too large, with the limit. */
#include "support/fake_device.h"
#include "test_common.h"

static void negative_indices_other_than_minus_one_are_refused(void **state)
{
    (void)state;
    int64_t shape[1] = {2};
    ct_clear_error();
    assert_null(ct_zeros(shape, 1, CT_F32, (ct_device){CT_OPENCL, -5}));
    assert_error(CT_ERR_DEVICE, "device 'opencl:-5' does not exist");
    assert_null(ct_zeros(shape, 1, CT_F32, (ct_device){CT_CPU, -7}));
    assert_error(CT_ERR_DEVICE, "device 'cpu:-7' does not exist");
    ct_device resolved;
    assert_int_equal(ct_device_resolve((ct_device){CT_OPENCL, -2}, &resolved), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "-1 for the current opencl device");
    assert_int_equal(ct_set_device((ct_device){CT_OPENCL, -3}), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "opencl:-3");
    assert_int_equal(ct_current_device(CT_OPENCL).index, 0);
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_to(t, (ct_device){CT_OPENCL, -9}));
    assert_error(CT_ERR_DEVICE, "opencl:-9");
    ct_release(t);
}

static void minus_one_is_the_current_device(void **state)
{
    (void)state;
    ct_device resolved;
    assert_int_equal(ct_device_resolve((ct_device){CT_CPU, -1}, &resolved), CT_OK);
    assert_int_equal(resolved.index, 0);
    assert_int_equal(ct_set_device((ct_device){CT_OPENCL, 1}), CT_OK);
    assert_int_equal(ct_device_resolve((ct_device){CT_OPENCL, -1}, &resolved), CT_OK);
    assert_int_equal(resolved.index, 1);
    assert_int_equal(ct_set_device((ct_device){CT_OPENCL, 0}), CT_OK);
    char name[CT_DEVICE_STRING_MAX];
    assert_string_equal(ct_device_format((ct_device){CT_OPENCL, -1}, name, sizeof name), "opencl");
    assert_string_equal(ct_device_format((ct_device){CT_OPENCL, -4}, name, sizeof name), "opencl:-4");
}

static void an_index_too_large_for_a_number_says_it_is_too_large(void **state)
{
    (void)state;
    ct_device device;
    assert_int_equal(ct_device_parse("opencl:99999999999999999999", &device), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "index 99999999999999999999, which is too large: a "
                 "device index is at most 1000000");
    assert_int_equal(ct_device_parse_syntax("cuda:1000001", &device), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "too large");
    assert_int_equal(ct_device_parse_syntax("cuda:1000000", &device), CT_OK);
    assert_int_equal(device.index, 1000000);
    assert_int_equal(ct_device_parse_syntax("cuda:x1", &device), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "must be a number");
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(negative_indices_other_than_minus_one_are_refused),
        cmocka_unit_test(minus_one_is_the_current_device),
        cmocka_unit_test(an_index_too_large_for_a_number_says_it_is_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
