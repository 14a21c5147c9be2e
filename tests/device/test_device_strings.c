/* Device strings parse and print like torch.device, and every bad one gets a precise error. */
#include "support/fake_device.h"
#include "test_common.h"

static void good_strings_parse_and_print_back(void **state)
{
    (void)state;
    ct_device d;
    char buf[CT_DEVICE_STRING_MAX];
    assert_int_equal(ct_device_parse("cpu", &d), CT_OK);
    assert_true(ct_device_equal(d, CT_DEVICE_CPU));
    assert_string_equal(ct_device_format(d, buf, sizeof buf), "cpu");
    assert_int_equal(ct_device_parse("cpu:0", &d), CT_OK);
    assert_true(ct_device_equal(d, CT_DEVICE_CPU));
    assert_int_equal(ct_device_parse("opencl:1", &d), CT_OK);
    assert_int_equal(d.type, CT_OPENCL);
    assert_int_equal(d.index, 1);
    assert_string_equal(ct_device_format(d, buf, sizeof buf), "opencl:1");
    assert_int_equal(ct_device_parse("opencl", &d), CT_OK);
    assert_int_equal(d.index, -1); /* the current OpenCL device, resolved when used */
    assert_string_equal(ct_device_format(d, buf, sizeof buf), "opencl");
    ct_device resolved;
    assert_int_equal(ct_device_resolve(d, &resolved), CT_OK);
    assert_int_equal(resolved.index, 0);
}

static void syntax_only_parsing_accepts_devices_of_other_machines(void **state)
{
    (void)state;
    ct_device d;
    assert_int_equal(ct_device_parse_syntax("cuda:3", &d), CT_OK);
    assert_int_equal(d.type, CT_CUDA);
    assert_int_equal(d.index, 3);
}

static void bad_strings_name_the_input_and_what_is_right(void **state)
{
    (void)state;
    ct_device d;
    ct_clear_error();
    assert_int_equal(ct_device_parse("cuda:-1", &d), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'cuda:-1' has index '-1'");
    assert_int_equal(ct_device_parse("cuda:x", &d), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "must be a number from 0");
    assert_int_equal(ct_device_parse("gpu:0", &d), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'gpu:0' is not a device; expected 'cpu', 'cuda'");
    assert_int_equal(ct_device_parse("", &d), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "device string '' is not a device");
    assert_int_equal(ct_device_parse("cpu:1", &d), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "there is one cpu device; use 'cpu'");
    assert_int_equal(ct_device_parse("opencl:", &d), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "index ''");
    assert_int_equal(ct_device_parse("opencl:1x", &d), CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
    assert_int_equal(ct_device_parse(NULL, &d), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
}

static void an_index_past_the_count_gives_the_valid_range(void **state)
{
    (void)state;
    ct_device d;
    assert_int_equal(ct_device_parse("opencl:7", &d), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "device 'opencl:7' does not exist: there are 2 opencl devices; use index 0 to 1");
}

static void a_backend_not_compiled_in_says_so(void **state)
{
    (void)state;
    ct_device d;
    if (ct_backend_is_compiled(CT_CUDA)) {
        /* built with CUDA: on a machine without a driver or a GPU, unavailable with the reason
         * (the reasons themselves: tests/backend/test_cuda_unavailable.c) */
        if (ct_is_available(CT_CUDA)) skip();
        assert_int_equal(ct_device_parse("cuda:0", &d), CT_ERR_UNAVAILABLE);
        assert_error(CT_ERR_UNAVAILABLE, "device 'cuda:0': the cuda backend has no usable device: ");
        assert_int_equal(ct_device_count(CT_CUDA), 0);
        assert_true(strlen(ct_backend_unavailable_reason(CT_CUDA)) > 0);
        int64_t shape[1] = {4};
        assert_null(ct_zeros(shape, 1, CT_F32, (ct_device){CT_CUDA, 0}));
        assert_error(CT_ERR_UNAVAILABLE, "cuda");
        return;
    }
    assert_int_equal(ct_device_parse("cuda:0", &d), CT_ERR_NOT_COMPILED);
    assert_error(CT_ERR_NOT_COMPILED, "ctorch was built without cuda support");
    assert_false(ct_backend_is_compiled(CT_CUDA));
    assert_false(ct_is_available(CT_CUDA));
    assert_int_equal(ct_device_count(CT_CUDA), 0);
    assert_string_equal(ct_backend_unavailable_reason(CT_CUDA), "not compiled in");
    /* Creating a tensor there fails the same way, and nothing is allocated. */
    int64_t shape[1] = {4};
    assert_null(ct_zeros(shape, 1, CT_F32, (ct_device){CT_CUDA, 0}));
    assert_error(CT_ERR_NOT_COMPILED, "cuda");
}

static void device_properties_and_memory_are_reported(void **state)
{
    (void)state;
    ct_device_props props;
    assert_int_equal(ct_get_device_properties(CT_DEVICE_CPU, &props), CT_OK);
    assert_true(strlen(props.name) > 0);
    assert_true(props.compute_units >= 1);
    assert_true(props.total_memory > 0);
    assert_false(props.is_gpu);
    size_t free_bytes = 0, total_bytes = 0;
    assert_int_equal(ct_mem_get_info(CT_DEVICE_CPU, &free_bytes, &total_bytes), CT_OK);
    assert_true(total_bytes > 0);
    assert_true(free_bytes <= total_bytes);
    assert_int_equal(ct_mem_get_info((ct_device){CT_OPENCL, 5}, &free_bytes, &total_bytes), CT_ERR_DEVICE);
    ct_clear_error();
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_strings_parse_and_print_back),
        cmocka_unit_test(syntax_only_parsing_accepts_devices_of_other_machines),
        cmocka_unit_test(bad_strings_name_the_input_and_what_is_right),
        cmocka_unit_test(an_index_past_the_count_gives_the_valid_range),
        cmocka_unit_test(a_backend_not_compiled_in_says_so),
        cmocka_unit_test(device_properties_and_memory_are_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
