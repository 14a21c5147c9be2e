/* The batch loader on the CPU: batch counts with and without drop_last, every sample exactly
 * once per epoch, per-epoch shuffles that repeat for the same seed and epoch, the last partial
 * batch, the end of an epoch, scopes, bad options, and a warm loop that allocates nothing. */
#include "data_test.h"

/* One epoch's batches: the sample numbers in the order handed out, and each batch's size. */
typedef struct epoch_record {
    int64_t samples[4096];
    int64_t batch_sizes[4096];
    int64_t count, batches;
} epoch_record;

/* Runs one epoch of loader (dataset from numbered_dataset(n, 7)), checking every batch. */
static void run_epoch(ct_data_loader *loader, int64_t epoch, epoch_record *out)
{
    memset(out, 0, sizeof *out);
    assert_int_equal(ct_data_loader_start_epoch(loader, epoch), CT_OK);
    ct_tensor *x, *y;
    ct_status status;
    while ((status = ct_data_loader_next(loader, &x, &y)) == CT_OK) {
        assert_int_equal(ct_tensor_ndim(x), 2);
        assert_int_equal(ct_tensor_size(x, 1), 3);
        assert_int_equal(ct_tensor_dtype(x), CT_F32);
        assert_int_equal(ct_tensor_dtype(y), CT_I64);
        int64_t b = ct_tensor_size(x, 0);
        assert_int_equal(ct_tensor_size(y, 0), b);
        float *features = floats_of(x);
        int64_t *labels = int64s_of(y);
        for (int64_t i = 0; i < b; i++) {
            int64_t number = (int64_t)features[3 * i];
            assert_true(features[3 * i + 1] == -features[3 * i]);
            assert_true(features[3 * i + 2] == 0.5f * features[3 * i]);
            assert_int_equal(labels[i], number % 7);
            out->samples[out->count++] = number;
        }
        out->batch_sizes[out->batches++] = b;
        free(features);
        free(labels);
        ct_release(x);
        ct_release(y);
    }
    assert_int_equal(status, CT_END_OF_DATA);
    assert_null(x);
    assert_null(y);
    assert_int_equal(out->batches, ct_data_loader_num_batches(loader));
}

static ct_data_loader *make_loader(const ct_dataset *ds, int64_t batch_size, bool shuffle,
                                   uint64_t seed, bool drop_last)
{
    ct_data_loader_options options = ct_data_loader_options_default();
    options.batch_size = batch_size;
    options.shuffle = shuffle;
    options.seed = seed;
    options.drop_last = drop_last;
    ct_data_loader *loader = ct_data_loader_create(ds, &options);
    assert_non_null(loader);
    return loader;
}

static void the_number_of_batches_rounds_up_or_drops_the_last(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(103, 7);
    const struct { int64_t batch; bool drop; int64_t expected; } cases[] = {
        {10, false, 11}, {10, true, 10}, {103, false, 1}, {103, true, 1}, {1, false, 103},
        {200, false, 1}, {200, true, 0}, {50, false, 3}, {50, true, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_data_loader *loader = make_loader(ds, cases[c].batch, false, 0, cases[c].drop);
        assert_int_equal(ct_data_loader_num_batches(loader), cases[c].expected);
        ct_data_loader_destroy(loader);
    }
    assert_int_equal(ct_data_loader_num_batches(NULL), -1);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_data_loader_num_batches");
    ct_dataset_free(ds);
}

static void every_sample_comes_once_per_epoch_with_a_partial_last_batch(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(103, 7);
    static epoch_record r;
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        ct_data_loader *loader = make_loader(ds, 10, shuffle, 9, false);
        run_epoch(loader, 0, &r);
        assert_int_equal(r.count, 103);
        for (int b = 0; b < 10; b++) assert_int_equal(r.batch_sizes[b], 10);
        assert_int_equal(r.batch_sizes[10], 3);
        char seen[103] = {0};
        for (int i = 0; i < 103; i++) seen[r.samples[i]]++;
        for (int i = 0; i < 103; i++) assert_int_equal(seen[i], 1);
        if (!shuffle)
            for (int i = 0; i < 103; i++) assert_int_equal(r.samples[i], i);
        ct_data_loader_destroy(loader);
    }
    ct_dataset_free(ds);
}

static void drop_last_leaves_out_the_partial_batch_only(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(103, 7);
    static epoch_record r;
    ct_data_loader *loader = make_loader(ds, 10, true, 3, true);
    run_epoch(loader, 2, &r);
    assert_int_equal(r.batches, 10);
    assert_int_equal(r.count, 100);
    for (int b = 0; b < 10; b++) assert_int_equal(r.batch_sizes[b], 10);
    /* the samples left out are the last 3 of this epoch's order */
    int64_t order[103];
    ct_data_permutation(103, 3 + 2, order);
    assert_memory_equal(r.samples, order, 100 * sizeof(int64_t));
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void the_order_changes_between_epochs_and_repeats_for_the_same_seed_and_epoch(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(200, 7);
    static epoch_record e0, e1, e0_again, other_loader_e1, other_seed_e1;
    ct_data_loader *loader = make_loader(ds, 32, true, 77, false);
    run_epoch(loader, 0, &e0);
    run_epoch(loader, 1, &e1);
    run_epoch(loader, 0, &e0_again);
    assert_memory_not_equal(e0.samples, e1.samples, 200 * sizeof(int64_t));
    assert_memory_equal(e0.samples, e0_again.samples, 200 * sizeof(int64_t));
    /* the order is ct_data_permutation(N, seed + epoch), as DistributedSampler seeds seed + epoch */
    int64_t order[200];
    ct_data_permutation(200, 78, order);
    assert_memory_equal(e1.samples, order, sizeof order);
    /* another loader with the same seed gives the same epochs; another seed, others */
    ct_data_loader *twin = make_loader(ds, 32, true, 77, false);
    run_epoch(twin, 1, &other_loader_e1);
    assert_memory_equal(e1.samples, other_loader_e1.samples, 200 * sizeof(int64_t));
    ct_data_loader *other = make_loader(ds, 32, true, 1234, false);
    run_epoch(other, 1, &other_seed_e1);
    assert_memory_not_equal(e1.samples, other_seed_e1.samples, 200 * sizeof(int64_t));
    /* without shuffle every epoch is in order */
    ct_data_loader *ordered = make_loader(ds, 32, false, 77, false);
    run_epoch(ordered, 5, &e1);
    for (int i = 0; i < 200; i++) assert_int_equal(e1.samples[i], i);
    ct_data_loader_destroy(ordered);
    ct_data_loader_destroy(other);
    ct_data_loader_destroy(twin);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void an_epoch_ends_until_the_next_starts_and_the_first_starts_by_itself(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(5, 7);
    ct_data_loader *loader = make_loader(ds, 2, false, 0, false);
    ct_tensor *x, *y;
    /* no start_epoch: epoch 0 */
    int64_t sizes[3];
    for (int b = 0; b < 3; b++) {
        assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
        sizes[b] = ct_tensor_size(x, 0);
        ct_release(x);
        ct_release(y);
    }
    assert_int_equal(sizes[0], 2);
    assert_int_equal(sizes[2], 1);
    for (int again = 0; again < 3; again++) {
        x = y = (ct_tensor *)1;
        assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_END_OF_DATA);
        assert_null(x);
        assert_null(y);
    }
    assert_int_equal(ct_last_error(), CT_OK); /* the end of an epoch is not an error */
    assert_string_equal(ct_status_name(CT_END_OF_DATA), "CT_END_OF_DATA");
    /* starting an epoch in the middle of one starts it from its first batch */
    assert_int_equal(ct_data_loader_start_epoch(loader, 1), CT_OK);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    ct_release(x);
    ct_release(y);
    assert_int_equal(ct_data_loader_start_epoch(loader, 1), CT_OK);
    int count = 0;
    while (ct_data_loader_next(loader, &x, &y) == CT_OK) {
        count++;
        ct_release(x);
        ct_release(y);
    }
    assert_int_equal(count, 3);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void batches_belong_to_the_scope_and_the_loader_outlives_its_dataset(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(20, 7);
    ct_data_loader *loader = make_loader(ds, 8, true, 1, false);
    ct_dataset_free(ds); /* the loader holds its own references */
    ct_tensor *x, *y;
    ct_scope_push();
    int batches = 0;
    while (ct_data_loader_next(loader, &x, &y) == CT_OK) batches++;
    assert_int_equal(ct_scope_pop(), CT_OK); /* releases every batch: ASan sees no leak */
    assert_int_equal(batches, 3);
    /* kept batches move out of the scope */
    ct_scope_push();
    assert_int_equal(ct_data_loader_start_epoch(loader, 0), CT_OK);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    ct_scope_keep(x);
    assert_int_equal(ct_scope_pop(), CT_OK);
    assert_int_equal(ct_refcount(x), 1);
    ct_release(x);
    ct_data_loader_destroy(loader);
    ct_data_loader_destroy(NULL);
}

static void an_empty_dataset_has_no_batches(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(0, 7);
    assert_int_equal(ct_dataset_num_classes(ds), 0);
    ct_data_loader *loader = make_loader(ds, 4, true, 0, false);
    assert_int_equal(ct_data_loader_num_batches(loader), 0);
    ct_tensor *x, *y;
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_END_OF_DATA);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void bad_loader_arguments_are_refused(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(10, 7);
    ct_data_loader_options options = ct_data_loader_options_default();
    assert_int_equal(options.batch_size, 1);
    assert_false(options.shuffle);
    assert_false(options.drop_last);
    assert_true(ct_device_equal(options.device, CT_DEVICE_CPU));
    options.batch_size = 0;
    assert_null(ct_data_loader_create(ds, &options));
    assert_error(CT_ERR_INVALID_ARGUMENT, "batch_size is 0; it must be a positive integer");
    options.batch_size = 4;
    options.device = (ct_device){CT_OPENCL, 99};
    assert_null(ct_data_loader_create(ds, &options));
    assert_int_not_equal(ct_last_error(), CT_OK); /* no such device (or no OpenCL at all) */
    assert_non_null(strstr(ct_last_error_message(), "opencl"));
    ct_clear_error();
    assert_null(ct_data_loader_create(NULL, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "'ds'");
    ct_data_loader *loader = ct_data_loader_create(ds, NULL); /* the defaults: batches of one */
    assert_non_null(loader);
    assert_int_equal(ct_data_loader_num_batches(loader), 10);
    ct_tensor *x, *y;
    assert_int_equal(ct_data_loader_start_epoch(loader, -1), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "epoch is -1");
    assert_int_equal(ct_data_loader_start_epoch(NULL, 0), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'loader'");
    assert_int_equal(ct_data_loader_next(NULL, &x, &y), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'loader'");
    assert_int_equal(ct_data_loader_next(loader, NULL, &y), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'x'");
    assert_int_equal(ct_data_loader_next(loader, &x, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'y'");
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

static void a_warm_loop_on_the_cpu_allocates_nothing(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(1000, 7);
    ct_data_loader *loader = make_loader(ds, 64, true, 5, false); /* a partial last batch of 40 */
    ct_memory_stats before, after;
    for (int64_t epoch = 0; epoch < 4; epoch++) {
        if (epoch == 1) assert_int_equal(ct_memory_stats_get(CT_DEVICE_CPU, &before), CT_OK);
        assert_int_equal(ct_data_loader_start_epoch(loader, epoch), CT_OK);
        ct_tensor *x, *y;
        while (ct_data_loader_next(loader, &x, &y) == CT_OK) {
            ct_tensor *step = ct_mul_scalar(x, 2.0); /* stands for a training step */
            ct_release(step);
            ct_release(x);
            ct_release(y);
        }
    }
    assert_int_equal(ct_memory_stats_get(CT_DEVICE_CPU, &after), CT_OK);
    assert_int_equal(after.device_allocations, before.device_allocations);
    assert_true(after.cache_hits > before.cache_hits);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_number_of_batches_rounds_up_or_drops_the_last),
        cmocka_unit_test(every_sample_comes_once_per_epoch_with_a_partial_last_batch),
        cmocka_unit_test(drop_last_leaves_out_the_partial_batch_only),
        cmocka_unit_test(the_order_changes_between_epochs_and_repeats_for_the_same_seed_and_epoch),
        cmocka_unit_test(an_epoch_ends_until_the_next_starts_and_the_first_starts_by_itself),
        cmocka_unit_test(batches_belong_to_the_scope_and_the_loader_outlives_its_dataset),
        cmocka_unit_test(an_empty_dataset_has_no_batches),
        cmocka_unit_test(bad_loader_arguments_are_refused),
        cmocka_unit_test(a_warm_loop_on_the_cpu_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
