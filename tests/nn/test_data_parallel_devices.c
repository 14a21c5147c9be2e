/* Choosing DataParallel's devices on the OpenCL devices here (PoCL's two at least): lists parsed
 * from text, and the devices ordered by free memory (seed 003's get_gpu_memory). */
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

/* The position of device d in order[0..count), or -1. */
static int position_of(ct_device d, const ct_device *order, int count)
{
    for (int i = 0; i < count; i++)
        if (ct_device_equal(order[i], d)) return i;
    return -1;
}

/* The devices come most free memory first, ties in index order. Where the free memory is an
 * estimate (the total minus what ctorch holds: PoCL's devices, NVIDIA's OpenCL GPU), holding
 * memory on a device moves it behind a device that had a little less free; letting it go
 * restores the order. Devices of very different sizes (a GPU beside PoCL's CPU devices) are
 * ordered all the same, but holding the difference between them is more than a test may take:
 * the test holds memory on the device just ahead of the one closest to it in free memory, and
 * skips that part, saying why, where no two neighbours are within 192 MiB. */
static void devices_are_ordered_by_free_memory(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    enum { MAX = 64 };
    int n = ct_device_count(CT_OPENCL);
    assert_true(n <= MAX);
    for (int i = 0; i < n; i++) ct_empty_cache((ct_device){CT_OPENCL, i});
    ct_device order[MAX], before[MAX];
    size_t free_bytes[MAX], total;
    int count = 0;
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, before, MAX, &count), CT_OK);
    assert_int_equal(count, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(ct_mem_get_info(before[i], &free_bytes[i], &total), CT_OK);
        if (i > 0) {
            assert_true(free_bytes[i - 1] >= free_bytes[i]);
            if (free_bytes[i - 1] == free_bytes[i]) assert_true(before[i - 1].index < before[i].index);
        }
    }

    /* the neighbours closest in free memory whose figure ctorch's own holdings decide */
    int k = -1;
    for (int i = 0; i + 1 < n; i++) {
        ct_device_props a, b;
        assert_int_equal(ct_get_device_properties(before[i], &a), CT_OK);
        assert_int_equal(ct_get_device_properties(before[i + 1], &b), CT_OK);
        if (a.free_memory_is_estimate && b.free_memory_is_estimate &&
            (k < 0 || free_bytes[i] - free_bytes[i + 1] < free_bytes[k] - free_bytes[k + 1]))
            k = i;
    }
    size_t hold = k < 0 ? 0 : free_bytes[k] - free_bytes[k + 1] + ((size_t)64 << 20);
    if (k < 0 || hold > (size_t)256 << 20) {
        print_message("no two OpenCL devices here are within 192 MiB of free memory as ctorch "
                      "estimates it: holding memory to reorder them skipped\n");
        skip();
    }
    ct_device held = before[k], next = before[k + 1];
    ct_tensor *big = ct_empty((int64_t[]){(int64_t)hold}, 1, CT_U8, held);
    assert_non_null(big);
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, order, MAX, &count), CT_OK);
    assert_int_equal(count, n);
    assert_true(position_of(held, order, n) > position_of(next, order, n));
    ct_device first;
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, &first, 1, &count), CT_OK);
    assert_int_equal(count, 1);
    assert_true(ct_device_equal(first, order[0]));
    ct_release(big);
    ct_empty_cache(held);
    assert_int_equal(ct_devices_by_free_memory(CT_OPENCL, order, MAX, &count), CT_OK);
    assert_memory_equal(order, before, (size_t)n * sizeof *order);
}

/* The arguments: no room, a negative room, and a type without devices. */
static void the_arguments_are_checked(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_device order[8];
    int count = -1;
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
        cmocka_unit_test(the_arguments_are_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
