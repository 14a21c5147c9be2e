/* Tensors on real OpenCL devices: created on opencl:0 and opencl:1 and read back; round trips
 * cpu -> opencl:0 -> opencl:1 -> cpu keep every byte of every dtype, contiguous and strided;
 * copies into views, between devices of one context (directly) and of two (through the host);
 * operands on two devices are an error naming both; one seed gives the same random numbers as
 * on the CPU. */
#include "opencl_test.h"
#include "tensor/tensor_internal.h"

/* 60 elements of each dtype whose bytes all differ (NaN payloads and -0.0 included). */
static void fill_pattern(ct_dtype dtype, void *data, int count)
{
    for (int i = 0; i < count; i++) {
        switch (dtype) {
        case CT_F32: ((float *)data)[i] = (float)i * 1.25f - 7.0f; break;
        case CT_F64: ((double *)data)[i] = (double)i * -3.5 + 0.1; break;
        case CT_I32: ((int32_t *)data)[i] = i * 100003 - 5; break;
        case CT_I64: ((int64_t *)data)[i] = (int64_t)i * 10000000019LL - 3; break;
        case CT_U8: ((uint8_t *)data)[i] = (uint8_t)(i * 37 + 1); break;
        default: ((uint8_t *)data)[i] = (uint8_t)(i % 3 == 0); break;
        }
    }
    if (dtype == CT_F32) {
        uint32_t nan_bits = 0x7fc12345u, negative_zero = 0x80000000u;
        memcpy((float *)data + 1, &nan_bits, 4);
        memcpy((float *)data + 2, &negative_zero, 4);
    }
    if (dtype == CT_F64) {
        uint64_t nan_bits = 0x7ff8000000abcdefull;
        memcpy((double *)data + 3, &nan_bits, 8);
    }
}

static void tensors_are_created_on_each_device_and_read_back(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    for (int d = 0; d < 2; d++) {
        ct_device device = {CT_OPENCL, d};
        int64_t shape[2] = {3, 5};
        ct_tensor *full = ct_full(shape, 2, -2.25, CT_F64, device);
        ct_tensor *range = ct_arange(0, 15, 1, CT_I32, device);
        ct_tensor *space = ct_linspace(-1, 1, 9, CT_F32, device);
        float data[4] = {1.5f, -2.5f, 3.5f, 1e30f};
        int64_t four[1] = {4};
        ct_tensor *from_data = ct_tensor_from_data(data, CT_F32, four, 1, device);
        assert_true(ct_device_equal(ct_tensor_device(full), device));
        assert_true(ct_device_equal(ct_tensor_device(from_data), device));

        double doubles[15];
        assert_int_equal(ct_tensor_to_array(full, doubles, sizeof doubles), CT_OK);
        for (int i = 0; i < 15; i++) assert_true(doubles[i] == -2.25);
        int32_t ints[15];
        assert_int_equal(ct_tensor_to_array(range, ints, sizeof ints), CT_OK);
        for (int i = 0; i < 15; i++) assert_int_equal(ints[i], i);
        float floats[9];
        assert_int_equal(ct_tensor_to_array(space, floats, sizeof floats), CT_OK);
        assert_true(floats[0] == -1.0f && floats[4] == 0.0f && floats[8] == 1.0f);
        float back[4];
        assert_int_equal(ct_tensor_to_array(from_data, back, sizeof back), CT_OK);
        assert_memory_equal(back, data, sizeof data);
        ct_release(full), ct_release(range), ct_release(space), ct_release(from_data);
    }
}

static void round_trips_through_two_devices_keep_every_byte(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        ct_dtype dtype = (ct_dtype)dt;
        uint8_t data[60 * 8], back[60 * 8];
        fill_pattern(dtype, data, 60);
        int64_t shape[3] = {3, 4, 5};
        ct_tensor *cpu = ct_tensor_from_data(data, dtype, shape, 3, CT_DEVICE_CPU);
        ct_tensor *on0 = ct_to(cpu, OPENCL0);
        ct_tensor *on1 = ct_to(on0, OPENCL1);
        ct_tensor *home = ct_to(on1, CT_DEVICE_CPU);
        assert_non_null(home);
        assert_true(ct_device_equal(ct_tensor_device(on1), OPENCL1));
        memset(back, 0, sizeof back);
        assert_int_equal(ct_tensor_to_array(home, back, sizeof back), CT_OK);
        assert_memory_equal(back, data, 60 * ct_dtype_size(dtype));

        /* strided: the last two dims transposed, then a slice with an offset, moved between
         * the devices as their logical values */
        ct_tensor *transposed = ct_transpose(on0, 1, 2);         /* [3, 5, 4] */
        ct_tensor *part = ct_slice(transposed, 0, 1, 3, 1);       /* [2, 5, 4], offset 20 */
        ct_tensor *moved = ct_to(part, OPENCL1);
        ct_tensor *moved_home = ct_to(moved, CT_DEVICE_CPU);
        assert_int_equal(ct_tensor_to_array(moved_home, back, sizeof back), CT_OK);
        size_t size = ct_dtype_size(dtype);
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 5; j++)
                for (int i = 0; i < 4; i++)
                    assert_memory_equal(back + ((b * 5 + j) * 4 + i) * size,
                                        data + ((b + 1) * 20 + i * 5 + j) * size, size);
        ct_release(moved_home), ct_release(moved), ct_release(part), ct_release(transposed);
        ct_release(home), ct_release(on1), ct_release(on0), ct_release(cpu);
    }
}

static void the_peer_copy_moves_bytes_between_devices_of_one_context(void **state)
{
    (void)state;
    int a = 0, b = 0;
    REQUIRE_OPENCL_DEVICES_IN_ONE_CONTEXT(a, b);
    const ct_backend *backend = ct_backend_of(OPENCL0);
    assert_non_null(backend->copy_peer);
    int64_t shape[1] = {1000};
    ct_tensor *src = ct_arange(0, 1000, 1, CT_I32, (ct_device){CT_OPENCL, a});
    ct_tensor *dst = ct_zeros(shape, 1, CT_I32, (ct_device){CT_OPENCL, b});
    /* 100 elements from element 10 of src into element 500 of dst */
    ct_status status = backend->copy_peer(b, ct_tensor_handle(dst), 500 * 4, a,
                                          ct_tensor_handle(src), 10 * 4, 100 * 4);
    assert_int_equal(status, CT_OK);
    int32_t back[1000];
    assert_int_equal(ct_tensor_to_array(dst, back, sizeof back), CT_OK);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(back[i], i >= 500 && i < 600 ? i - 490 : 0);
    /* on one device, overlapping ranges move as memmove does */
    status = backend->copy_peer(a, ct_tensor_handle(src), 4, a, ct_tensor_handle(src), 0, 10 * 4);
    assert_int_equal(status, CT_OK);
    assert_int_equal(ct_tensor_to_array(src, back, sizeof back), CT_OK);
    assert_int_equal(back[0], 0);
    for (int i = 1; i <= 10; i++) assert_int_equal(back[i], i - 1);
    assert_int_equal(back[11], 11);
    ct_release(src), ct_release(dst);
}

/* Devices of two platforms (a GPU's and PoCL's) share no context: the backend says it cannot
 * copy between them and writes nothing, and tensors move between them through the host. */
static void devices_of_two_contexts_copy_through_the_host(void **state)
{
    (void)state;
    int a = 0, b = 0;
    REQUIRE_OPENCL_DEVICES_IN_TWO_CONTEXTS(a, b);
    const ct_device device_a = {CT_OPENCL, a}, device_b = {CT_OPENCL, b};
    const ct_backend *backend = ct_backend_of(OPENCL0);
    int64_t shape[1] = {1000};
    ct_tensor *src = ct_arange(0, 1000, 1, CT_I32, device_a);
    ct_tensor *dst = ct_zeros(shape, 1, CT_I32, device_b);
    assert_int_equal(backend->copy_peer(b, ct_tensor_handle(dst), 0, a, ct_tensor_handle(src), 0,
                                        1000 * 4),
                     CT_ERR_UNAVAILABLE);
    int32_t back[1000];
    assert_int_equal(ct_tensor_to_array(dst, back, sizeof back), CT_OK);
    for (int i = 0; i < 1000; i++) assert_int_equal(back[i], 0);
    /* both ways, and into a strided view */
    ct_tensor *there = ct_to(src, device_b), *home = ct_to(there, device_a);
    assert_non_null(home);
    assert_true(ct_device_equal(ct_tensor_device(there), device_b));
    assert_int_equal(ct_tensor_to_array(home, back, sizeof back), CT_OK);
    for (int i = 0; i < 1000; i++) assert_int_equal(back[i], i);
    ct_tensor *evens = ct_slice(dst, 0, 0, 1000, 2);
    ct_tensor *part = ct_slice(src, 0, 0, 500, 1);
    assert_int_equal(ct_copy_(evens, part), CT_OK);
    assert_int_equal(ct_tensor_to_array(dst, back, sizeof back), CT_OK);
    for (int i = 0; i < 1000; i++) assert_int_equal(back[i], i % 2 ? 0 : i / 2);
    ct_release(part), ct_release(evens), ct_release(home), ct_release(there);
    ct_release(src), ct_release(dst);
}

static void copies_into_views_and_across_devices(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    int64_t shape[2] = {4, 6};
    ct_tensor *dst = ct_zeros(shape, 2, CT_F32, OPENCL1);
    ct_tensor *column = ct_select(dst, 1, 2); /* a strided view of 4 elements */
    float data[4] = {1, 2, 3, 4};
    int64_t four[1] = {4};
    ct_tensor *src = ct_tensor_from_data(data, CT_F32, four, 1, OPENCL0);
    assert_int_equal(ct_copy_(column, src), CT_OK);
    float back[24];
    assert_int_equal(ct_tensor_to_array(dst, back, sizeof back), CT_OK);
    for (int i = 0; i < 24; i++) assert_true(back[i] == (i % 6 == 2 ? data[i / 6] : 0.0f));

    /* another size or dtype: errors, nothing written */
    int64_t five[1] = {5};
    ct_tensor *wrong_size = ct_zeros(five, 1, CT_F32, OPENCL0);
    assert_int_equal(ct_copy_(column, wrong_size), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "destination has shape [4] and source [5]");
    ct_tensor *wrong_dtype = ct_zeros(four, 1, CT_F64, OPENCL0);
    assert_int_equal(ct_copy_(column, wrong_dtype), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "destination is float32 and source float64");
    assert_int_equal(ct_tensor_to_array(dst, back, sizeof back), CT_OK);
    assert_true(back[2] == 1.0f && back[0] == 0.0f);
    ct_release(wrong_dtype), ct_release(wrong_size), ct_release(src), ct_release(column), ct_release(dst);
}

static void operands_on_two_devices_are_an_error_naming_both(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    int64_t shape[1] = {3};
    ct_tensor *a = ct_ones(shape, 1, CT_F32, OPENCL0);
    ct_tensor *b = ct_ones(shape, 1, CT_F32, OPENCL1);
    assert_null(ct_add(a, b));
    assert_int_equal(ct_last_error(), CT_ERR_DEVICE);
    const char *message = ct_last_error_message();
    if (!strstr(message, "opencl:0") || !strstr(message, "opencl:1"))
        fail_msg("the message does not name both devices: %s", message);
    ct_clear_error();
    ct_tensor *on_cpu = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_mul(on_cpu, b));
    assert_error(CT_ERR_DEVICE, "opencl:1");
    ct_release(on_cpu), ct_release(b), ct_release(a);
}

static void the_current_device_guard_places_tensors(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    ct_device_guard guard;
    assert_int_equal(ct_device_guard_enter(&guard, OPENCL1), CT_OK);
    int64_t shape[1] = {2};
    ct_tensor *t = ct_full(shape, 1, 4.0, CT_F32, (ct_device){CT_OPENCL, -1});
    ct_device_guard_exit(&guard);
    assert_true(ct_device_equal(ct_tensor_device(t), OPENCL1));
    float back[2];
    assert_int_equal(ct_tensor_to_array(t, back, sizeof back), CT_OK);
    assert_true(back[0] == 4.0f && back[1] == 4.0f);
    ct_release(t);
}

/* The promise of a seed: the same bits on every device, normals too (their log and cos are
 * ctorch's own arithmetic, not the device's libm: float64 normals of PoCL differed from glibc's in
 * the last bit on about 6% of elements). Every OpenCL device (ctest gives PoCL two) against the
 * CPU, element by element. */
static void one_seed_gives_the_cpus_random_numbers(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    const int64_t shape[2] = {37, 29};
    for (int d = 0; d < ct_device_count(CT_OPENCL); d++) {
        ct_device device = {CT_OPENCL, d};
        for (int kind = 0; kind < 5; kind++) {
            ct_tensor *on[2];
            for (int k = 0; k < 2; k++) {
                ct_manual_seed(77);
                ct_device where = k == 0 ? CT_DEVICE_CPU : device;
                switch (kind) {
                case 0: on[k] = ct_rand(shape, 2, CT_F32, where); break;
                case 1: on[k] = ct_rand(shape, 2, CT_F64, where); break;
                case 2: on[k] = ct_randn(shape, 2, CT_F32, where); break;
                case 3: on[k] = ct_randn(shape, 2, CT_F64, where); break;
                default: on[k] = ct_randint(-1000, 1000, shape, 2, CT_I64, where); break;
                }
                assert_non_null(on[k]);
            }
            size_t bytes = (size_t)ct_numel(on[0]) * ct_dtype_size(ct_tensor_dtype(on[0]));
            unsigned char *cpu = malloc(bytes), *there = malloc(bytes);
            assert_int_equal(ct_tensor_to_array(on[0], cpu, bytes), CT_OK);
            assert_int_equal(ct_tensor_to_array(on[1], there, bytes), CT_OK);
            size_t size = ct_dtype_size(ct_tensor_dtype(on[0]));
            for (size_t i = 0; i < bytes / size; i++)
                if (memcmp(cpu + i * size, there + i * size, size) != 0) {
                    double a = kind == 4 ? (double)((int64_t *)cpu)[i]
                               : size == 8 ? ((double *)cpu)[i] : ((float *)cpu)[i];
                    double b = kind == 4 ? (double)((int64_t *)there)[i]
                               : size == 8 ? ((double *)there)[i] : ((float *)there)[i];
                    fail_msg("kind %d element %zu: cpu %.17g, opencl:%d %.17g", kind, i, a, d, b);
                }
            free(cpu), free(there);
            ct_release(on[0]), ct_release(on[1]);
        }
    }
}

int main(void)
{
    ct_scope_push();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensors_are_created_on_each_device_and_read_back),
        cmocka_unit_test(round_trips_through_two_devices_keep_every_byte),
        cmocka_unit_test(the_peer_copy_moves_bytes_between_devices_of_one_context),
        cmocka_unit_test(devices_of_two_contexts_copy_through_the_host),
        cmocka_unit_test(copies_into_views_and_across_devices),
        cmocka_unit_test(operands_on_two_devices_are_an_error_naming_both),
        cmocka_unit_test(the_current_device_guard_places_tensors),
        cmocka_unit_test(one_seed_gives_the_cpus_random_numbers),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_scope_pop();
    return failed;
}
