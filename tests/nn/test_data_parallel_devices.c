/* Choosing DataParallel's devices on PoCL's two devices: lists parsed from text, and the devices
 * ordered by free memory (seed 003's get_gpu_memory). */
#include "nn/data_parallel_test.h"

static void device_lists_parse_from_text(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_device devices[4];
    int count = -1;
    assert_int_equal(ct_device_list_parse("opencl:1, opencl:0", devices, 4, &count), CT_OK);
    assert_int_equal(count, 2);
    assert_true(ct_device_equal(devices[0], DEVICE1));
    assert_true(ct_device_equal(devices[1], DEVICE0));
    assert_int_equal(ct_device_list_parse("opencl:0,opencl:7", devices, 4, &count), CT_ERR_DEVICE);
    assert_int_equal(count, 0);
    assert_error(CT_ERR_DEVICE, "entry 2 of 'opencl:0,opencl:7'");
    assert_int_equal(ct_device_list_parse("", devices, 4, &count), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "empty entry");
    assert_int_equal(ct_device_list_parse("opencl:0,,opencl:1", devices, 4, &count), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "empty entry");
    assert_int_equal(ct_device_list_parse("gpu:0", devices, 4, &count), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "entry 1 of 'gpu:0'");
    assert_int_equal(ct_device_list_parse("opencl:0,opencl:1", devices, 1, &count), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "more than 1 devices");
}

/* Free memory is PoCL's total minus what ctorch holds: holding memory on opencl:0 makes
 * opencl:1 the main device; letting it go restores the index order. */
static void devices_are_ordered_by_free_memory(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_device order[8];
    int count = 0;
    ct_empty_cache(DEVICE0);
    ct_empty_cache(DEVICE1);
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, order, 8, &count), CT_OK);
    assert_int_equal(count, ct_device_count(CT_OPENCL));
    size_t free0, free1, total;
    assert_int_equal(ct_mem_get_info(order[0], &free0, &total), CT_OK);
    assert_int_equal(ct_mem_get_info(order[1], &free1, &total), CT_OK);
    assert_true(free0 >= free1);
    ct_tensor *big = ct_empty((int64_t[]){64 << 20}, 1, CT_U8, order[0]);
    assert_non_null(big);
    ct_device held = order[0];
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, order, 1, &count), CT_OK);
    assert_int_equal(count, 1);
    assert_false(ct_device_equal(order[0], held));
    ct_release(big);
    ct_empty_cache(held);
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, NULL, 0, &count), CT_OK);
    assert_int_equal(count, 0);
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, order, -1, &count), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "max is -1");
    if (ct_device_count(CT_CUDA) == 0) {
        assert_int_equal(ct_devices_by_free_memory(CT_CUDA, order, 8, &count), CT_ERR_UNAVAILABLE);
        assert_error(CT_ERR_UNAVAILABLE, "no cuda device");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_lists_parse_from_text),
        cmocka_unit_test(devices_are_ordered_by_free_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
