/* ctorch's caching allocator over cuMemAlloc, on one stand-in device of 64 MiB: blocks are reused
 * without asking the driver again (the stand-in counts its calls), empty_cache gives them back,
 * an allocation the device cannot hold releases the cache and retries, and one above the
 * device's memory fails with PyTorch-style detail: what was asked, the total, the free memory
 * and what ctorch holds and reserves. A driver failure that is not out of memory is reported as
 * itself, without releasing the cache or retrying. */
#include "standin_test.h"

#define MiB ((int64_t)1 << 20)

static ct_tensor *floats(int64_t bytes)
{
    int64_t shape[1] = {bytes / 4};
    return ct_empty(shape, 1, CT_F32, CUDA0);
}

static void test_the_cache_serves_repeated_allocations_without_the_driver(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_empty_cache(CUDA0);
    ct_memory_stats stats_before, stats_after;
    assert_int_equal(ct_memory_stats_get(CUDA0, &stats_before), CT_OK);
    ctorch_standin_counts before = standin_counts();
    for (int i = 0; i < 10; i++) {
        ct_tensor *t = floats(1 * MiB);
        assert_non_null(t);
        ct_release(t);
    }
    ctorch_standin_counts after = standin_counts();
    assert_int_equal(after.mem_alloc - before.mem_alloc, 1);
    assert_int_equal(after.mem_free - before.mem_free, 0);
    assert_int_equal(ct_memory_stats_get(CUDA0, &stats_after), CT_OK);
    assert_int_equal(stats_after.cache_hits - stats_before.cache_hits, 9);
    assert_int_equal(stats_after.device_allocations - stats_before.device_allocations, 1);
    assert_int_equal(ct_memory_allocated(CUDA0), 0);
    assert_int_equal(ct_memory_reserved(CUDA0), 1 * MiB);
    /* empty_cache gives the block back to the driver. */
    ct_empty_cache(CUDA0);
    after = standin_counts();
    assert_int_equal(after.mem_free - before.mem_free, 1);
    assert_int_equal(ct_memory_reserved(CUDA0), 0);
    size_t free_bytes, total;
    assert_int_equal(ct_mem_get_info(CUDA0, &free_bytes, &total), CT_OK);
    assert_int_equal(free_bytes, total);
}

static void test_out_of_memory_releases_the_cache_and_retries(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_empty_cache(CUDA0);
    ct_release(floats(40 * MiB)); /* 40 MiB cached */
    assert_int_equal(ct_memory_reserved(CUDA0), 40 * MiB);
    ctorch_standin_counts before = standin_counts();
    ct_tensor *t = floats(48 * MiB); /* 40 + 48 > 64: the driver says no until the cache is freed */
    assert_non_null(t);
    ctorch_standin_counts after = standin_counts();
    assert_int_equal(after.mem_alloc - before.mem_alloc, 2);
    assert_int_equal(after.mem_free - before.mem_free, 1);
    assert_int_equal(ct_memory_reserved(CUDA0), 48 * MiB);
    ct_release(t);
    ct_empty_cache(CUDA0);
}

static void test_an_allocation_above_the_device_memory_fails_with_the_sizes(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_empty_cache(CUDA0);
    ct_tensor *held = floats(8 * MiB);
    assert_non_null(held);
    ct_release(floats(4 * MiB)); /* cached: reserved, not held */
    assert_null(floats(100 * MiB));
    assert_int_equal(ct_last_error(), CT_ERR_OUT_OF_MEMORY);
    const char *message = ct_last_error_message();
    /* The cache was released before giving up: 8 MiB held and reserved, 56 MiB free. */
    const char *parts[] = {"out of memory on cuda:0", "tried to allocate 100.00 MiB",
                           "the device has 64.00 MiB in total", "56.00 MiB free",
                           "ctorch holds 8.00 MiB in tensors and 8.00 MiB reserved"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!strstr(message, parts[i])) fail_msg("message '%s' lacks '%s'", message, parts[i]);
    ct_clear_error();
    /* The device is usable after. */
    ct_tensor *t = floats(16 * MiB);
    assert_non_null(t);
    ct_release(t);
    ct_release(held);
    ct_empty_cache(CUDA0);
}

static void test_a_driver_failure_other_than_out_of_memory_is_reported_as_itself(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_empty_cache(CUDA0);
    ct_release(floats(4 * MiB)); /* cached: a 1 MiB block is not served from it */
    ctorch_standin_fail_next_mem_alloc_fn fail_next =
        (ctorch_standin_fail_next_mem_alloc_fn)standin_function("ctorch_standin_fail_next_mem_alloc");
    fail_next(CUDA_ERROR_ILLEGAL_ADDRESS);
    ctorch_standin_counts before = standin_counts();
    assert_null(floats(1 * MiB));
    ctorch_standin_counts after = standin_counts();
    assert_int_equal(ct_last_error(), CT_ERR_BACKEND);
    const char *message = ct_last_error_message();
    const char *parts[] = {"cuda:0", "cuMemAlloc(1048576 bytes) failed", "CUDA_ERROR_ILLEGAL_ADDRESS"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!strstr(message, parts[i])) fail_msg("message '%s' lacks '%s'", message, parts[i]);
    if (strstr(message, "out of memory")) fail_msg("message '%s' speaks of memory", message);
    /* Asked once: no cache released, no retry. */
    assert_int_equal(after.mem_alloc - before.mem_alloc, 1);
    assert_int_equal(after.mem_free - before.mem_free, 0);
    assert_int_equal(ct_memory_reserved(CUDA0), 4 * MiB);
    ct_clear_error();
    ct_tensor *t = floats(1 * MiB); /* the next allocation succeeds */
    assert_non_null(t);
    ct_release(t);
    ct_empty_cache(CUDA0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_cache_serves_repeated_allocations_without_the_driver),
        cmocka_unit_test(test_out_of_memory_releases_the_cache_and_retries),
        cmocka_unit_test(test_an_allocation_above_the_device_memory_fails_with_the_sizes),
        cmocka_unit_test(test_a_driver_failure_other_than_out_of_memory_is_reported_as_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
