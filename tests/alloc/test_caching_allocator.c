/* The caching allocator reuses blocks without the system allocator, keeps statistics with
 * peaks, empties its cache on request, and turns an impossible request into a clear error. */
#include "alloc/caching_allocator.h"
#include "test_common.h"

static ct_memory_stats stats(void)
{
    ct_memory_stats s;
    assert_int_equal(ct_memory_stats_get(CT_DEVICE_CPU, &s), CT_OK);
    return s;
}

static void a_warm_loop_makes_no_system_allocations(void **state)
{
    (void)state;
    int64_t shape[2] = {256, 256};
    ct_release(ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU)); /* warm the cache */
    ct_memory_stats before = stats();
    for (int step = 0; step < 100; step++) {
        ct_tensor *t = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);
        assert_non_null(t);
        ct_release(t);
    }
    ct_memory_stats after = stats();
    assert_int_equal(after.device_allocations, before.device_allocations);
    assert_int_equal(after.cache_hits - before.cache_hits, 100);
}

static void allocated_and_reserved_follow_live_tensors(void **state)
{
    (void)state;
    ct_empty_cache(CT_DEVICE_CPU);
    size_t base_allocated = ct_memory_allocated(CT_DEVICE_CPU);
    int64_t shape[1] = {1000}; /* 4000 bytes: the 4096-byte class */
    ct_tensor *t = ct_empty(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_memory_allocated(CT_DEVICE_CPU) - base_allocated, 4096);
    assert_true(ct_memory_reserved(CT_DEVICE_CPU) >= ct_memory_allocated(CT_DEVICE_CPU));
    ct_reset_peak_memory_stats(CT_DEVICE_CPU);
    ct_release(t);
    assert_int_equal(ct_memory_allocated(CT_DEVICE_CPU), base_allocated);
    assert_int_equal(ct_max_memory_allocated(CT_DEVICE_CPU), base_allocated + 4096);
    /* the block stays cached until empty_cache */
    assert_true(ct_memory_reserved(CT_DEVICE_CPU) >= base_allocated + 4096);
    ct_empty_cache(CT_DEVICE_CPU);
    assert_int_equal(ct_memory_reserved(CT_DEVICE_CPU), ct_memory_allocated(CT_DEVICE_CPU));
    ct_reset_peak_memory_stats(CT_DEVICE_CPU);
    assert_int_equal(ct_max_memory_allocated(CT_DEVICE_CPU), ct_memory_allocated(CT_DEVICE_CPU));
}

static void sizes_round_up_to_a_class_within_a_quarter(void **state)
{
    (void)state;
    static const size_t requests[] = {1, 512, 513, 1000, 4096, 4097, 1 << 20, (1 << 20) + 1, 123456789};
    for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++) {
        ct_block *block = ct_caching_allocator_malloc(CT_DEVICE_CPU, requests[i]);
        assert_non_null(block);
        assert_true(block->size >= requests[i]);
        assert_true(block->size <= 512 || block->size <= requests[i] + requests[i] / 4 + 1);
        memset(block->handle, 0xab, requests[i]); /* the whole request is writable */
        ct_caching_allocator_free(block);
    }
    ct_empty_cache(CT_DEVICE_CPU);
}

static void a_petabyte_is_an_out_of_memory_error_with_the_sizes(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t shape[1] = {(int64_t)1 << 48}; /* 2^48 float32 = 1 PiB */
    ct_tensor *t = ct_empty(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_null(t);
    assert_int_equal(ct_last_error(), CT_ERR_OUT_OF_MEMORY);
    const char *message = ct_last_error_message();
    assert_non_null(strstr(message, "out of memory on cpu: tried to allocate 1.00 PiB"));
    assert_non_null(strstr(message, "in total"));
    assert_non_null(strstr(message, "free"));
    assert_non_null(strstr(message, "reserved"));
    ct_clear_error();
    /* a shape whose byte count overflows is refused before any allocation */
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    assert_null(ct_empty(huge, 2, CT_F64, CT_DEVICE_CPU));
    assert_error(CT_ERR_OUT_OF_MEMORY, "more bytes than memory can address");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_warm_loop_makes_no_system_allocations),
        cmocka_unit_test(allocated_and_reserved_follow_live_tensors),
        cmocka_unit_test(sizes_round_up_to_a_class_within_a_quarter),
        cmocka_unit_test(a_petabyte_is_an_out_of_memory_error_with_the_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
