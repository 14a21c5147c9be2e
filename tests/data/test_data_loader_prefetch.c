/* The loader's prefetch on a stand-in accelerator whose queued copies really wait until someone
 * needs them: the next batch's copy is queued (from pinned staging memory: a copy from pageable
 * memory would have been done at once) before the current batch is handed out, a staging buffer
 * is not refilled while a copy out of it is pending, and reading a batch waits for its copy. */
#include "support/fake_device.h"
#include "data_test.h"

static const ct_device OPENCL0 = {CT_OPENCL, 0};

/* Sample number i of numbered_dataset sits in feature 0 of its row. */
static void assert_batch_holds(const ct_tensor *x, const ct_tensor *y, int64_t first, int64_t count)
{
    assert_true(ct_device_equal(ct_tensor_device(x), OPENCL0));
    assert_true(ct_device_equal(ct_tensor_device(y), OPENCL0));
    assert_int_equal(ct_tensor_size(x, 0), count);
    float *features = floats_of(x);
    int64_t *labels = int64s_of(y);
    for (int64_t i = 0; i < count; i++) {
        assert_true(features[3 * i] == (float)(first + i));
        assert_true(features[3 * i + 2] == 0.5f * (float)(first + i));
        assert_int_equal(labels[i], (first + i) % 7);
    }
    free(features);
    free(labels);
}

static void the_next_batchs_copy_is_queued_when_the_current_batch_is_handed_out(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(10, 7);
    ct_data_loader_options options = ct_data_loader_options_default();
    options.batch_size = 4;
    options.device = OPENCL0;
    ct_data_loader *loader = ct_data_loader_create(ds, &options);
    assert_non_null(loader);
    ct_synchronize(OPENCL0);
    assert_int_equal(ct_test_fake_copies_pending(), 0);
    ct_tensor *x, *y;
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    /* batch 0's copy and batch 1's (features and labels each) are queued, none done */
    assert_int_equal(ct_test_fake_copies_pending(), 4);
    assert_batch_holds(x, y, 0, 4); /* reading waits for the copies */
    assert_int_equal(ct_test_fake_copies_pending(), 0);
    ct_release(x);
    ct_release(y);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    /* batch 1 is in hand, batch 2's copy (the partial last batch) is queued */
    assert_int_equal(ct_test_fake_copies_pending(), 2);
    assert_batch_holds(x, y, 4, 4);
    ct_release(x);
    ct_release(y);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    assert_int_equal(ct_test_fake_copies_pending(), 0); /* nothing after the last batch */
    assert_batch_holds(x, y, 8, 2);
    ct_release(x);
    ct_release(y);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_END_OF_DATA);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void a_staging_buffer_is_refilled_only_after_its_copy_has_run(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(12, 7);
    ct_data_loader_options options = ct_data_loader_options_default();
    options.batch_size = 3;
    options.device = OPENCL0;
    ct_data_loader *loader = ct_data_loader_create(ds, &options);
    /* hold three batches without reading them: batch 2 reuses batch 0's staging buffer, and
     * batch 3 (staged while batch 2 is handed out) batch 1's */
    ct_tensor *x[3], *y[3];
    for (int b = 0; b < 3; b++) assert_int_equal(ct_data_loader_next(loader, &x[b], &y[b]), CT_OK);
    for (int b = 0; b < 3; b++) {
        assert_batch_holds(x[b], y[b], 3 * b, 3);
        ct_release(x[b]);
        ct_release(y[b]);
    }
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void restarting_or_destroying_with_a_copy_in_flight_is_safe(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(12, 7);
    ct_data_loader_options options = ct_data_loader_options_default();
    options.batch_size = 5;
    options.device = OPENCL0;
    ct_data_loader *loader = ct_data_loader_create(ds, &options);
    ct_tensor *x, *y;
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    ct_release(x);
    ct_release(y);
    assert_true(ct_test_fake_copies_pending() > 0); /* batch 1 is on its way */
    assert_int_equal(ct_data_loader_start_epoch(loader, 0), CT_OK);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    assert_batch_holds(x, y, 0, 5);
    ct_release(x);
    ct_release(y);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    assert_true(ct_test_fake_copies_pending() > 0);
    ct_data_loader_destroy(loader); /* batch 2's copy is in flight */
    assert_int_equal(ct_test_fake_copies_pending(), 0);
    assert_batch_holds(x, y, 5, 5); /* a handed-out batch outlives its loader */
    ct_release(x);
    ct_release(y);
    ct_dataset_free(ds);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_next_batchs_copy_is_queued_when_the_current_batch_is_handed_out),
        cmocka_unit_test(a_staging_buffer_is_refilled_only_after_its_copy_has_run),
        cmocka_unit_test(restarting_or_destroying_with_a_copy_in_flight_is_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
