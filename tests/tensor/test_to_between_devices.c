/* ct_to moves tensors between devices and dtypes, keeping every byte; it returns the tensor
 * itself when nothing changes; creation happens on the target device, with no host copy. */
#include "support/fake_device.h"
#include "tensor/tensor_internal.h"
#include "test_common.h"

static const ct_device OPENCL0 = {CT_OPENCL, 0}, OPENCL1 = {CT_OPENCL, 1};

/* 24 elements of each dtype with distinct bytes. */
static void fill_pattern(ct_dtype dtype, void *data, int count)
{
    for (int i = 0; i < count; i++) {
        switch (dtype) {
        case CT_F32: ((float *)data)[i] = (float)i * 1.25f - 7.0f; break;
        case CT_F64: ((double *)data)[i] = (double)i * -3.5 + 0.1; break;
        case CT_I32: ((int32_t *)data)[i] = i * 100003 - 5; break;
        case CT_I64: ((int64_t *)data)[i] = (int64_t)i * 10000000019LL - 3; break;
        case CT_U8: ((uint8_t *)data)[i] = (uint8_t)(i * 37 + 1); break;
        case CT_F16: ((uint16_t *)data)[i] = ct_float_to_f16((float)i * 0.75f - 9.0f); break;
        case CT_BF16: ((uint16_t *)data)[i] = ct_float_to_bf16((float)i * -2.5f + 0.3f); break;
        default: ((uint8_t *)data)[i] = (uint8_t)(i % 3 == 0); break;
        }
    }
}

static void round_trips_through_two_devices_keep_every_byte(void **state)
{
    (void)state;
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        ct_dtype dtype = (ct_dtype)dt;
        uint8_t data[24 * 8], back[24 * 8];
        fill_pattern(dtype, data, 24);
        int64_t shape[3] = {2, 3, 4};
        ct_tensor *cpu = ct_tensor_from_data(data, dtype, shape, 3, CT_DEVICE_CPU);
        ct_tensor *on0 = ct_to(cpu, OPENCL0);
        ct_tensor *on1 = ct_to(on0, OPENCL1);
        ct_tensor *home = ct_to(on1, CT_DEVICE_CPU);
        assert_non_null(home);
        assert_true(ct_device_equal(ct_tensor_device(on0), OPENCL0));
        assert_true(ct_device_equal(ct_tensor_device(on1), OPENCL1));
        assert_true(ct_device_equal(ct_tensor_device(home), CT_DEVICE_CPU));
        memset(back, 0, sizeof back);
        assert_int_equal(ct_tensor_to_array(home, back, sizeof back), CT_OK);
        assert_memory_equal(back, data, 24 * ct_dtype_size(dtype));

        /* a strided view (a transpose of the last two dims) moves as its logical values */
        int64_t tshape[3] = {2, 4, 3}, tstrides[3] = {12, 1, 4};
        ct_tensor *view = ct_tensor_view_of(on0, 3, tshape, tstrides, 0);
        ct_tensor *moved = ct_to(view, OPENCL1);
        ct_tensor *view_home = ct_to(moved, CT_DEVICE_CPU);
        assert_int_equal(ct_tensor_to_array(view_home, back, sizeof back), CT_OK);
        size_t size = ct_dtype_size(dtype);
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 3; j++)
                    assert_memory_equal(back + ((b * 4 + i) * 3 + j) * size,
                                        data + (b * 12 + j * 4 + i) * size, size);
        ct_release(view_home);
        ct_release(moved);
        ct_release(view);
        ct_release(home);
        ct_release(on1);
        ct_release(on0);
        ct_release(cpu);
    }
}

static void to_the_same_place_returns_the_tensor_itself(void **state)
{
    (void)state;
    int64_t shape[1] = {5};
    ct_tensor *t = ct_ones(shape, 1, CT_F32, OPENCL0);
    ct_tensor *same = ct_to(t, OPENCL0);
    assert_ptr_equal(same, t);
    assert_int_equal(ct_refcount(t), 2);
    ct_to_options options = ct_to_options_default(OPENCL0);
    options.copy = true;
    ct_tensor *copy = ct_to_with(t, &options);
    assert_ptr_not_equal(copy, t);
    assert_false(ct_tensor_shares_storage(copy, t));
    options.copy = false;
    options.dtype = CT_I32;
    options.device = CT_DEVICE_CPU;
    ct_tensor *ints = ct_to_with(t, &options);
    assert_int_equal(ct_tensor_dtype(ints), CT_I32);
    int32_t back[5];
    assert_int_equal(ct_tensor_to_array(ints, back, sizeof back), CT_OK);
    for (int i = 0; i < 5; i++) assert_int_equal(back[i], 1);
    ct_release(ints);
    ct_release(copy);
    ct_release(same);
    ct_release(t);
}

static void creation_on_a_device_copies_nothing_from_the_host(void **state)
{
    (void)state;
    size_t before = ct_test_fake_bytes_copied();
    int64_t shape[2] = {64, 64};
    ct_tensor *z = ct_zeros(shape, 2, CT_F32, OPENCL1);
    ct_tensor *f = ct_full(shape, 2, 2.5, CT_F64, OPENCL1);
    assert_non_null(z);
    assert_non_null(f);
    assert_int_equal(ct_test_fake_bytes_copied(), before);
    float data[3] = {1, 2, 3};
    int64_t three[1] = {3};
    ct_tensor *d = ct_tensor_from_data(data, CT_F32, three, 1, OPENCL1);
    assert_int_equal(ct_test_fake_bytes_copied() - before, sizeof data);
    ct_release(d);
    ct_release(f);
    ct_release(z);
}

static void moving_to_a_missing_device_is_an_error(void **state)
{
    (void)state;
    int64_t shape[1] = {3};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_clear_error();
    assert_null(ct_to(t, (ct_device){CT_OPENCL, 2}));
    assert_error(CT_ERR_DEVICE, "device 'opencl:2' does not exist");
    if (!ct_backend_is_compiled(CT_CUDA)) {
        assert_null(ct_to(t, (ct_device){CT_CUDA, 0}));
        assert_error(CT_ERR_NOT_COMPILED, "built without cuda support");
    } else if (!ct_is_available(CT_CUDA)) {
        assert_null(ct_to(t, (ct_device){CT_CUDA, 0}));
        assert_error(CT_ERR_UNAVAILABLE, "the cuda backend has no usable device");
    }
    assert_null(ct_to(NULL, CT_DEVICE_CPU));
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_to");
    ct_release(t);
}

static void copy_into_checks_shape_and_dtype_and_crosses_devices(void **state)
{
    (void)state;
    int64_t shape[1] = {4}, other[1] = {5};
    float data[4] = {1, 2, 3, 4};
    ct_tensor *src = ct_tensor_from_data(data, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *dst = ct_zeros(shape, 1, CT_F32, OPENCL1);
    assert_int_equal(ct_copy_(dst, src), CT_OK);
    float back[4];
    assert_int_equal(ct_tensor_to_array(dst, back, sizeof back), CT_OK);
    assert_memory_equal(back, data, sizeof data);
    ct_tensor *wrong_size = ct_zeros(other, 1, CT_F32, OPENCL1);
    assert_int_equal(ct_copy_(wrong_size, src), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "destination has shape [5] and source [4]");
    ct_tensor *wrong_dtype = ct_zeros(shape, 1, CT_I64, OPENCL1);
    assert_int_equal(ct_copy_(wrong_dtype, src), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "destination is int64 and source float32");
    assert_int_equal(ct_tensor_to_array(dst, back, 3), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "dst has room for 3");
    ct_release(wrong_dtype);
    ct_release(wrong_size);
    ct_release(dst);
    ct_release(src);
}

static void item_reads_one_element_and_refuses_more(void **state)
{
    (void)state;
    int64_t one[1] = {1}, two[1] = {2};
    ct_tensor *t = ct_full(one, 1, 42.0, CT_I64, OPENCL0);
    int64_t v = 0;
    double d = 0;
    assert_int_equal(ct_item_int64(t, &v), CT_OK);
    assert_int_equal(v, 42);
    assert_int_equal(ct_item(t, &d), CT_OK);
    assert_true(d == 42.0);
    ct_tensor *pair = ct_zeros(two, 1, CT_F32, OPENCL0);
    assert_int_equal(ct_item(pair, &d), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "only a one-element tensor converts to a number");
    ct_release(pair);
    ct_release(t);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips_through_two_devices_keep_every_byte),
        cmocka_unit_test(to_the_same_place_returns_the_tensor_itself),
        cmocka_unit_test(creation_on_a_device_copies_nothing_from_the_host),
        cmocka_unit_test(moving_to_a_missing_device_is_an_error),
        cmocka_unit_test(copy_into_checks_shape_and_dtype_and_crosses_devices),
        cmocka_unit_test(item_reads_one_element_and_refuses_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
