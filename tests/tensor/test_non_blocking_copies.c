/* Pinned host memory and queued copies: ct_to with non_blocking returns once the copy is queued,
 * and whoever reads the result waits for exactly that copy. The fake device really defers its
 * queued copies, so a missing wait shows as wrong values here. Transfer counters see it all. */
#include "support/fake_device.h"
#include "test_common.h"

static const ct_device OPENCL0 = {CT_OPENCL, 0}, OPENCL1 = {CT_OPENCL, 1};

static ct_to_options non_blocking_to(ct_device device)
{
    ct_to_options options = ct_to_options_default(device);
    options.non_blocking = true;
    return options;
}

static void pinned_tensors_are_cpu_tensors_in_pinned_memory(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4};
    ct_tensor *p = ct_empty_pinned(shape, 2, CT_F32);
    assert_non_null(p);
    assert_true(ct_is_pinned(p));
    assert_true(ct_device_equal(ct_tensor_device(p), CT_DEVICE_CPU));
    ct_tensor *plain = ct_full(shape, 2, 1.5, CT_F32, CT_DEVICE_CPU);
    assert_false(ct_is_pinned(plain));
    ct_tensor *pinned = ct_pin_memory(plain);
    assert_true(ct_is_pinned(pinned));
    float back[12];
    assert_int_equal(ct_tensor_to_array(pinned, back, sizeof back), CT_OK);
    for (int i = 0; i < 12; i++) assert_true(back[i] == 1.5f);
    ct_tensor *again = ct_pin_memory(pinned);
    assert_ptr_equal(again, pinned);
    ct_tensor *on_device = ct_to(plain, OPENCL0);
    assert_null(ct_pin_memory(on_device));
    assert_error(CT_ERR_DEVICE, "only CPU tensors can be pinned");
    assert_null(ct_empty_pinned(shape, -1, CT_F32));
    assert_error(CT_ERR_SHAPE, "0 to 8 dims");
    ct_release(on_device);
    ct_release(again);
    ct_release(pinned);
    ct_release(plain);
    ct_release(p);
}

static void a_non_blocking_upload_is_queued_and_keeps_its_source_alive(void **state)
{
    (void)state;
    int64_t shape[1] = {1000};
    ct_tensor *host = ct_empty_pinned(shape, 1, CT_F32);
    ct_tensor *values = ct_arange(0, 1000, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_copy_(host, values), CT_OK);
    ct_to_options options = non_blocking_to(OPENCL0);
    ct_tensor *device = ct_to_with(host, &options);
    assert_non_null(device);
    assert_int_equal(ct_test_fake_copies_pending(), 1); /* queued, not done */
    ct_release(host);                                   /* the queued copy still holds it */
    float back[1000];
    assert_int_equal(ct_tensor_to_array(device, back, sizeof back), CT_OK);
    assert_int_equal(ct_test_fake_copies_pending(), 0);
    for (int i = 0; i < 1000; i++) assert_true(back[i] == (float)i);
    ct_release(device);
    ct_release(values);
}

static void a_non_blocking_download_lands_in_pinned_memory_and_reading_waits(void **state)
{
    (void)state;
    int64_t shape[2] = {10, 10};
    ct_tensor *device = ct_full(shape, 2, 7.0, CT_I64, OPENCL1);
    ct_transfer_stats_reset(OPENCL1);
    ct_to_options options = non_blocking_to(CT_DEVICE_CPU);
    ct_tensor *host = ct_to_with(device, &options);
    assert_non_null(host);
    assert_true(ct_is_pinned(host));
    assert_int_equal(ct_test_fake_copies_pending(), 1);
    ct_release(device); /* the queued copy keeps the device buffer alive */
    ct_transfer_stats stats;
    ct_transfer_stats_get(OPENCL1, &stats);
    assert_int_equal(stats.device_to_host_bytes, 800);
    assert_int_equal(stats.host_syncs, 0);
    /* an op on the CPU result waits for the copy first */
    ct_tensor *doubled = ct_add(host, host);
    assert_int_equal(ct_test_fake_copies_pending(), 0);
    int64_t back[100];
    assert_int_equal(ct_tensor_to_array(doubled, back, sizeof back), CT_OK);
    for (int i = 0; i < 100; i++) assert_int_equal(back[i], 14);
    ct_transfer_stats_get(OPENCL1, &stats);
    assert_int_equal(stats.host_syncs, 1);
    ct_release(doubled);
    ct_release(host);
}

static void non_blocking_from_unpinned_memory_is_done_blocking(void **state)
{
    (void)state;
    int64_t shape[1] = {64};
    ct_tensor *plain = ct_full(shape, 1, 3.0, CT_F64, CT_DEVICE_CPU);
    ct_to_options options = non_blocking_to(OPENCL0);
    ct_tensor *device = ct_to_with(plain, &options);
    assert_non_null(device);
    assert_int_equal(ct_test_fake_copies_pending(), 0);
    double v = 0;
    ct_scope_push(); /* releases the selected view */
    assert_int_equal(ct_item(ct_select(device, 0, 63), &v), CT_OK);
    ct_scope_pop();
    assert_true(v == 3.0);
    ct_release(device);
    ct_release(plain);
}

static void transfer_counters_see_every_byte_and_every_wait(void **state)
{
    (void)state;
    ct_transfer_stats_reset(OPENCL0);
    ct_transfer_stats_reset(OPENCL1);
    int64_t shape[1] = {256};
    ct_tensor *host = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *on0 = ct_to(host, OPENCL0);                /* 1 KiB up */
    ct_tensor *sum = ct_add(on0, on0);                     /* stays on the device */
    ct_tensor *on1 = ct_to(sum, OPENCL1);                  /* device to device */
    ct_tensor *back = ct_to(on1, CT_DEVICE_CPU);           /* 1 KiB down, one wait */
    assert_non_null(back);
    ct_transfer_stats s0, s1, cpu;
    ct_transfer_stats_get(OPENCL0, &s0);
    ct_transfer_stats_get(OPENCL1, &s1);
    ct_transfer_stats_get(CT_DEVICE_CPU, &cpu);
    assert_int_equal(s0.host_to_device_bytes, 1024);
    assert_int_equal(s0.device_to_host_bytes + s1.device_to_device_bytes, 1024); /* via host or peer */
    assert_int_equal(s1.device_to_host_bytes, 1024);
    assert_true(s1.host_syncs >= 1);
    assert_int_equal(cpu.host_to_device_bytes + cpu.device_to_host_bytes, 0);
    ct_synchronize(OPENCL0);
    ct_transfer_stats after;
    ct_transfer_stats_get(OPENCL0, &after);
    assert_int_equal(after.host_syncs, s0.host_syncs + 1);
    ct_transfer_stats_reset(OPENCL0);
    ct_transfer_stats_get(OPENCL0, &after);
    assert_int_equal(after.host_to_device_bytes + after.device_to_host_bytes + after.host_syncs, 0);
    assert_int_equal(ct_transfer_stats_get(OPENCL0, NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_release(back);
    ct_release(on1);
    ct_release(sum);
    ct_release(on0);
    ct_release(host);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pinned_tensors_are_cpu_tensors_in_pinned_memory),
        cmocka_unit_test(a_non_blocking_upload_is_queued_and_keeps_its_source_alive),
        cmocka_unit_test(a_non_blocking_download_lands_in_pinned_memory_and_reading_waits),
        cmocka_unit_test(non_blocking_from_unpinned_memory_is_done_blocking),
        cmocka_unit_test(transfer_counters_see_every_byte_and_every_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
