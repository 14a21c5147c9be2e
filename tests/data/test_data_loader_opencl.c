/* The loader on real OpenCL devices (PoCL in the tests): batches on the device equal the CPU
 * loader's, the transfer counters show each next batch sent before the current one is handed
 * out, and a warm training-like loop allocates nothing on the device. */
#include "backend/opencl_test.h"
#include "data_test.h"

static ct_dataset *digits(void)
{
    ct_csv_options options = ct_csv_options_default();
    options.feature_scale = 1.0 / 16;
    ct_dataset *ds = ct_csv_dataset_load(CTORCH_DIGITS_PATH, &options);
    assert_non_null(ds);
    return ds;
}

static ct_data_loader *loader_on(const ct_dataset *ds, ct_device device, int64_t batch_size)
{
    ct_data_loader_options options = ct_data_loader_options_default();
    options.batch_size = batch_size;
    options.shuffle = true;
    options.seed = 11;
    options.device = device;
    ct_data_loader *loader = ct_data_loader_create(ds, &options);
    assert_non_null(loader);
    return loader;
}

static void batches_on_an_opencl_device_equal_the_cpu_batches(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    ct_dataset *ds = digits();
    const ct_device devices[2] = {OPENCL0, OPENCL1};
    for (int d = 0; d < 2; d++) {
        ct_data_loader *on_cpu = loader_on(ds, CT_DEVICE_CPU, 128); /* 14 batches, the last of 5 */
        ct_data_loader *on_device = loader_on(ds, devices[d], 128);
        for (int64_t epoch = 0; epoch < 2; epoch++) {
            assert_int_equal(ct_data_loader_start_epoch(on_cpu, epoch), CT_OK);
            assert_int_equal(ct_data_loader_start_epoch(on_device, epoch), CT_OK);
            ct_tensor *cx, *cy, *dx, *dy;
            int batches = 0;
            while (ct_data_loader_next(on_cpu, &cx, &cy) == CT_OK) {
                assert_int_equal(ct_data_loader_next(on_device, &dx, &dy), CT_OK);
                assert_true(ct_device_equal(ct_tensor_device(dx), devices[d]));
                assert_true(ct_device_equal(ct_tensor_device(dy), devices[d]));
                assert_same_values(dx, cx, 0, 0, "features");
                assert_same_values(dy, cy, 0, 0, "labels");
                /* work queued on the device sees the whole batch */
                ct_tensor *sum = ct_sum(dx, NULL, 0, false), *cpu_sum = ct_sum(cx, NULL, 0, false);
                assert_same_values(sum, cpu_sum, 1e-5, 1e-5, "sum of the batch");
                ct_tensor *list[] = {sum, cpu_sum, cx, cy, dx, dy};
                for (int i = 0; i < 6; i++) ct_release(list[i]);
                batches++;
            }
            assert_int_equal(batches, 15);
            assert_int_equal(ct_data_loader_next(on_device, &dx, &dy), CT_END_OF_DATA);
        }
        ct_data_loader_destroy(on_device);
        ct_data_loader_destroy(on_cpu);
    }
    ct_dataset_free(ds);
}

static void the_next_batch_is_sent_before_the_current_one_is_handed_out(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_dataset *ds = numbered_dataset(100, 7); /* batches of 32: 32, 32, 32, 4 */
    ct_data_loader *loader = loader_on(ds, OPENCL0, 32);
    const uint64_t full = 32 * 3 * sizeof(float) + 32 * sizeof(int64_t);
    const uint64_t last = 4 * 3 * sizeof(float) + 4 * sizeof(int64_t);
    const uint64_t sent_after[4] = {2 * full, 3 * full, 3 * full + last, 3 * full + last};
    for (int64_t epoch = 0; epoch < 2; epoch++) {
        ct_synchronize(OPENCL0);
        ct_transfer_stats_reset(OPENCL0);
        assert_int_equal(ct_data_loader_start_epoch(loader, epoch), CT_OK);
        ct_transfer_stats stats;
        ct_transfer_stats_get(OPENCL0, &stats);
        assert_int_equal(stats.host_to_device_bytes, 0); /* nothing is sent before it is asked for */
        for (int b = 0; b < 4; b++) {
            ct_tensor *x, *y;
            assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
            ct_transfer_stats_get(OPENCL0, &stats);
            /* batch b and, already, batch b + 1 */
            assert_int_equal(stats.host_to_device_bytes, sent_after[b]);
            assert_int_equal(stats.device_to_host_bytes, 0);
            ct_release(x);
            ct_release(y);
        }
        ct_tensor *x, *y;
        assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_END_OF_DATA);
        ct_transfer_stats_get(OPENCL0, &stats);
        assert_int_equal(stats.host_to_device_bytes, sent_after[3]);
    }
    /* the CPU loader moves nothing */
    ct_data_loader *on_cpu = loader_on(ds, CT_DEVICE_CPU, 32);
    ct_transfer_stats_reset(OPENCL0);
    ct_tensor *x, *y;
    while (ct_data_loader_next(on_cpu, &x, &y) == CT_OK) {
        assert_true(ct_device_equal(ct_tensor_device(x), CT_DEVICE_CPU));
        assert_false(ct_is_pinned(x)); /* plain CPU tensors */
        ct_release(x);
        ct_release(y);
    }
    ct_transfer_stats stats;
    ct_transfer_stats_get(OPENCL0, &stats);
    assert_int_equal(stats.host_to_device_bytes, 0);
    ct_data_loader_destroy(on_cpu);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void a_warm_loop_on_the_device_allocates_nothing(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_dataset *ds = digits();
    ct_data_loader *loader = loader_on(ds, OPENCL0, 64); /* 29 batches, the last of 5 */
    int64_t wshape[2] = {64, 10};
    ct_tensor *w = ct_full(wshape, 2, 0.01, CT_F32, OPENCL0);
    ct_memory_stats device_before, device_after, cpu_before, cpu_after;
    for (int64_t epoch = 0; epoch < 4; epoch++) {
        if (epoch == 1) {
            ct_memory_stats_get(OPENCL0, &device_before);
            ct_memory_stats_get(CT_DEVICE_CPU, &cpu_before);
        }
        assert_int_equal(ct_data_loader_start_epoch(loader, epoch), CT_OK);
        ct_tensor *x, *y;
        while (ct_data_loader_next(loader, &x, &y) == CT_OK) {
            /* stands for a training step: logits, a loss-like reduction */
            ct_scope_push();
            ct_tensor *logits = ct_matmul(x, w);
            ct_tensor *loss = ct_mean(ct_log_softmax(logits, 1), NULL, 0, false);
            assert_non_null(loss);
            ct_release(x);
            ct_release(y);
            ct_scope_pop();
        }
    }
    ct_memory_stats_get(OPENCL0, &device_after);
    ct_memory_stats_get(CT_DEVICE_CPU, &cpu_after);
    assert_int_equal(device_after.device_allocations, device_before.device_allocations);
    assert_int_equal(cpu_after.device_allocations, cpu_before.device_allocations);
    assert_true(device_after.cache_hits > device_before.cache_hits);
    ct_release(w);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batches_on_an_opencl_device_equal_the_cpu_batches),
        cmocka_unit_test(the_next_batch_is_sent_before_the_current_one_is_handed_out),
        cmocka_unit_test(a_warm_loop_on_the_device_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
