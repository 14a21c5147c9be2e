/* Datasets of any tensors (TensorDataset) and of callbacks (Dataset), batched by the loader as
 * PyTorch's default collate does: images [N, C, H, W] with float regression targets, int64 token
 * sequences, a callback dataset and its subsets, DistributedSampler shares, and the prefetch of
 * three tensors per sample onto a PoCL device. */
#include "backend/opencl_test.h"
#include "data_test.h"

#define N_IMAGES 10

/* images[i] = 100 i + position, targets[i] = [0.5 i], masks[i] = i % 3 (uint8) */
static ct_tensor *images, *targets, *masks;

static int setup(void **state)
{
    (void)state;
    static float pixels[N_IMAGES * 3 * 4 * 4], values[N_IMAGES];
    static uint8_t mask[N_IMAGES];
    for (int i = 0; i < N_IMAGES * 48; i++) pixels[i] = (float)(100 * (i / 48) + i % 48);
    for (int i = 0; i < N_IMAGES; i++) {
        values[i] = 0.5f * (float)i;
        mask[i] = (uint8_t)(i % 3);
    }
    images = ct_tensor_from_data(pixels, CT_F32, (int64_t[]){N_IMAGES, 3, 4, 4}, 4, CT_DEVICE_CPU);
    targets = ct_tensor_from_data(values, CT_F32, (int64_t[]){N_IMAGES, 1}, 2, CT_DEVICE_CPU);
    masks = ct_tensor_from_data(mask, CT_U8, (int64_t[]){N_IMAGES}, 1, CT_DEVICE_CPU);
    return images && targets && masks ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ct_release(images);
    ct_release(targets);
    ct_release(masks);
    return 0;
}

static ct_data_loader *loader_of(const ct_dataset *ds, int64_t batch_size, bool shuffle, bool drop_last,
                                 ct_device device)
{
    ct_data_loader_options options = ct_data_loader_options_default();
    options.batch_size = batch_size;
    options.shuffle = shuffle;
    options.seed = 3;
    options.drop_last = drop_last;
    options.device = device;
    ct_data_loader *loader = ct_data_loader_create(ds, &options);
    assert_non_null(loader);
    return loader;
}

static void assert_shape(const ct_tensor *t, int ndim, const int64_t *shape)
{
    assert_int_equal(ct_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(ct_tensor_shape(t)[d], shape[d]);
}

static void images_with_regression_targets_batch_as_stacked_samples(void **state)
{
    (void)state;
    ct_dataset *ds = ct_tensor_dataset((ct_tensor *[]){images, targets}, 2);
    assert_non_null(ds);
    assert_int_equal(ct_dataset_num_tensors(ds), 2);
    assert_int_equal(ct_dataset_num_features(ds), 48);
    assert_int_equal(ct_dataset_num_classes(ds), 0); /* the targets are not class indices */
    ct_sample_spec spec;
    assert_int_equal(ct_dataset_sample_spec(ds, 0, &spec), CT_OK);
    assert_int_equal(spec.ndim, 3);
    assert_int_equal(spec.shape[0], 3);
    assert_int_equal(spec.dtype, CT_F32);
    ct_data_loader *loader = loader_of(ds, 4, true, false, CT_DEVICE_CPU);
    ct_dataset_free(ds); /* the loader keeps what it needs */
    assert_int_equal(ct_data_loader_num_batches(loader), 3);
    for (int64_t epoch = 0; epoch < 2; epoch++) {
        int64_t order[N_IMAGES];
        ct_data_permutation(N_IMAGES, 3 + (uint64_t)epoch, order);
        assert_int_equal(ct_data_loader_start_epoch(loader, epoch), CT_OK);
        ct_tensor *x, *y;
        for (int64_t b = 0; b < 3; b++) {
            assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
            int64_t rows = b < 2 ? 4 : 2;
            assert_shape(x, 4, (int64_t[]){rows, 3, 4, 4});
            assert_shape(y, 2, (int64_t[]){rows, 1});
            assert_int_equal(ct_tensor_dtype(y), CT_F32);
            float *xs = floats_of(x), *ys = floats_of(y);
            for (int64_t r = 0; r < rows; r++) {
                int64_t sample = order[4 * b + r];
                for (int p = 0; p < 48; p++) assert_true(xs[r * 48 + p] == (float)(100 * sample + p));
                assert_true(ys[r] == 0.5f * (float)sample);
            }
            free(xs);
            free(ys);
            ct_release(x);
            ct_release(y);
        }
        assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_END_OF_DATA);
        assert_null(x);
    }
    ct_data_loader_destroy(loader);
}

static void token_sequences_batch_as_int64_rows(void **state)
{
    (void)state;
    enum { N = 7, T = 5 };
    int64_t tokens[N * (T + 1)];
    for (int i = 0; i < N * (T + 1); i++) tokens[i] = 1000 + i;
    ct_tensor *all = ct_tensor_from_data(tokens, CT_I64, (int64_t[]){N, T + 1}, 2, CT_DEVICE_CPU);
    /* inputs and targets as views (the dataset copies them contiguous) */
    ct_tensor *idx = ct_narrow(all, 1, 0, T), *next = ct_narrow(all, 1, 1, T);
    ct_dataset *ds = ct_tensor_dataset((ct_tensor *[]){idx, next}, 2);
    assert_non_null(ds);
    ct_data_loader *loader = loader_of(ds, 3, false, true, CT_DEVICE_CPU);
    assert_int_equal(ct_data_loader_num_batches(loader), 2); /* drop_last leaves the 7th out */
    ct_tensor *out[2];
    for (int64_t b = 0; b < 2; b++) {
        assert_int_equal(ct_data_loader_next_batch(loader, out, 2), CT_OK);
        assert_shape(out[0], 2, (int64_t[]){3, T});
        assert_int_equal(ct_tensor_dtype(out[0]), CT_I64);
        int64_t *xs = int64s_of(out[0]), *ys = int64s_of(out[1]);
        for (int64_t r = 0; r < 3; r++)
            for (int t = 0; t < T; t++) {
                assert_int_equal(xs[r * T + t], 1000 + (3 * b + r) * (T + 1) + t);
                assert_int_equal(ys[r * T + t], xs[r * T + t] + 1);
            }
        free(xs);
        free(ys);
        ct_release(out[0]);
        ct_release(out[1]);
    }
    assert_int_equal(ct_data_loader_next_batch(loader, out, 2), CT_END_OF_DATA);
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
    ct_release(idx);
    ct_release(next);
    ct_release(all);
}

static void tensor_datasets_refuse_what_cannot_be_batched(void **state)
{
    (void)state;
    ct_tensor *short_targets = ct_narrow(targets, 0, 0, 4);
    assert_null(ct_tensor_dataset((ct_tensor *[]){images, short_targets}, 2));
    assert_error(CT_ERR_SHAPE, "tensors[1] has shape [4, 1]");
    assert_null(ct_tensor_dataset((ct_tensor *[]){images}, 0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "count is 0");
    ct_release(short_targets);
    ct_dataset *three = ct_tensor_dataset((ct_tensor *[]){images, targets, masks}, 3);
    ct_data_loader *loader = loader_of(three, 4, false, false, CT_DEVICE_CPU);
    ct_tensor *x = images, *y = images, *out[2];
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_ERR_INVALID_ARGUMENT);
    assert_null(x);
    assert_error(CT_ERR_INVALID_ARGUMENT, "use ct_data_loader_next_batch");
    assert_int_equal(ct_data_loader_next_batch(loader, out, 2), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "have 3 tensors");
    ct_data_loader_destroy(loader);
    ct_dataset_free(three);
}

/* ---- a dataset of callbacks ---- */

typedef struct counting_source {
    int64_t size, calls, fail_at;
    int *freed;
} counting_source;

static int64_t source_len(void *user) { return ((counting_source *)user)->size; }

/* sample i: a float [2, 2] of i + 0.25 j and an int32 label 2 i */
static ct_status source_get_item(void *user, int64_t index, void *const *buffers)
{
    counting_source *source = user;
    source->calls++;
    if (index == source->fail_at) return CT_ERR_IO;
    float *x = buffers[0];
    for (int j = 0; j < 4; j++) x[j] = (float)index + 0.25f * (float)j;
    *(int32_t *)buffers[1] = (int32_t)(2 * index);
    return CT_OK;
}

static void source_free(void *user)
{
    counting_source *source = user;
    (*source->freed)++;
    free(source);
}

static ct_dataset *callback_dataset(int64_t size, int64_t fail_at, int *freed)
{
    counting_source *source = calloc(1, sizeof *source);
    *source = (counting_source){.size = size, .fail_at = fail_at, .freed = freed};
    ct_dataset_callbacks callbacks = {.len = source_len, .get_item = source_get_item, .free_user = source_free};
    ct_sample_spec samples[2] = {{.dtype = CT_F32, .ndim = 2, .shape = {2, 2}}, {.dtype = CT_I32, .ndim = 0}};
    ct_dataset *ds = ct_dataset_from_callbacks(&callbacks, source, samples, 2);
    assert_non_null(ds);
    return ds;
}

static int64_t label_of(const ct_tensor *t)
{
    int64_t value = -1;
    assert_int_equal(ct_item_int64(t, &value), CT_OK);
    return value;
}

static void a_callback_dataset_is_batched_and_split_like_a_torch_dataset(void **state)
{
    (void)state;
    int freed = 0;
    ct_dataset *ds = callback_dataset(6, -1, &freed);
    assert_int_equal(ct_dataset_size(ds), 6);
    assert_null(ct_dataset_features(ds));
    assert_error(CT_ERR_INVALID_ARGUMENT, "defined by callbacks");
    ct_data_loader *loader = loader_of(ds, 4, true, false, CT_DEVICE_CPU);
    int64_t order[6];
    ct_data_permutation(6, 3, order);
    ct_tensor *x, *y;
    for (int64_t b = 0; b < 2; b++) {
        assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
        int64_t rows = b == 0 ? 4 : 2;
        assert_shape(x, 3, (int64_t[]){rows, 2, 2});
        assert_shape(y, 1, (int64_t[]){rows});
        assert_int_equal(ct_tensor_dtype(y), CT_I32);
        float *xs = floats_of(x);
        int32_t labels[4];
        assert_int_equal(ct_tensor_to_array(y, labels, sizeof(int32_t) * (size_t)rows), CT_OK);
        for (int64_t r = 0; r < rows; r++) {
            int64_t sample = order[4 * b + r];
            for (int j = 0; j < 4; j++) assert_true(xs[4 * r + j] == (float)sample + 0.25f * (float)j);
            assert_int_equal(labels[r], 2 * sample);
        }
        free(xs);
        ct_release(x);
        ct_release(y);
    }
    /* a split of it calls its get_item with the original indices */
    ct_dataset *train = NULL, *test = NULL;
    assert_int_equal(ct_dataset_split(ds, 0.5, 9, &train, &test), CT_OK);
    ct_data_permutation(6, 9, order);
    ct_dataset *quarter = NULL, *rest = NULL; /* a subset of a subset */
    assert_int_equal(ct_dataset_split(train, 0.34, 2, &rest, &quarter), CT_OK);
    int64_t inner[3];
    ct_data_permutation(3, 2, inner);
    ct_dataset_free(ds);
    assert_int_equal(freed, 0); /* the loader and the parts still use it */
    ct_tensor *sample[2];
    for (int64_t i = 0; i < 3; i++) {
        assert_int_equal(ct_dataset_get(test, i, sample, 2), CT_OK);
        assert_shape(sample[0], 2, (int64_t[]){2, 2});
        assert_int_equal(label_of(sample[1]), 2 * order[i]);
        ct_release(sample[0]);
        ct_release(sample[1]);
    }
    assert_int_equal(ct_dataset_get(quarter, 0, sample, 2), CT_OK);
    assert_int_equal(label_of(sample[1]), 2 * order[3 + inner[0]]);
    ct_release(sample[0]);
    ct_release(sample[1]);
    assert_int_equal(ct_dataset_get(test, 3, sample, 2), CT_ERR_INDEX);
    assert_error(CT_ERR_INDEX, "index 3 is out of range");
    ct_dataset_free(train);
    ct_dataset_free(test);
    ct_dataset_free(rest);
    ct_dataset_free(quarter);
    assert_int_equal(freed, 0);
    ct_data_loader_destroy(loader);
    assert_int_equal(freed, 1);
}

static void a_failing_get_item_stops_the_loader_with_the_index(void **state)
{
    (void)state;
    int freed = 0;
    ct_dataset *ds = callback_dataset(6, 4, &freed);
    ct_data_loader *loader = loader_of(ds, 3, false, false, CT_DEVICE_CPU);
    ct_tensor *x, *y;
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_OK);
    ct_release(x);
    ct_release(y);
    assert_int_equal(ct_data_loader_next(loader, &x, &y), CT_ERR_IO);
    assert_null(x);
    assert_null(y);
    assert_error(CT_ERR_IO, "get_item returned CT_ERR_IO for sample 4");
    ct_data_loader_destroy(loader);
    ct_dataset_free(ds);
    assert_int_equal(freed, 1);
    /* bad descriptions are refused, and the user data is freed all the same */
    counting_source *source = calloc(1, sizeof *source);
    *source = (counting_source){.size = 2, .freed = &freed};
    ct_dataset_callbacks callbacks = {.len = source_len, .get_item = source_get_item, .free_user = source_free};
    ct_sample_spec bad = {.dtype = CT_F32, .ndim = 1, .shape = {-2}};
    assert_null(ct_dataset_from_callbacks(&callbacks, source, &bad, 1));
    assert_error(CT_ERR_SHAPE, "samples[0].shape[0] is -2");
    assert_int_equal(freed, 2);
}

/* Every rank's loader walks its DistributedSampler share; together they cover the dataset. */
static void distributed_sampler_shares_of_a_tensor_dataset(void **state)
{
    (void)state;
    ct_dataset *ds = ct_tensor_dataset((ct_tensor *[]){images, targets}, 2);
    int seen[N_IMAGES] = {0};
    for (int rank = 0; rank < 3; rank++) {
        ct_distributed_sampler_options sampler_options = ct_distributed_sampler_options_default();
        sampler_options.seed = 5;
        ct_distributed_sampler *sampler = ct_distributed_sampler_create(N_IMAGES, 3, rank, &sampler_options);
        ct_data_loader_options options = ct_data_loader_options_default();
        options.batch_size = 2;
        options.sampler = sampler;
        ct_data_loader *loader = ct_data_loader_create(ds, &options);
        assert_non_null(loader);
        assert_int_equal(ct_data_loader_start_epoch(loader, 1), CT_OK);
        assert_int_equal(ct_distributed_sampler_set_epoch(sampler, 1), CT_OK);
        int64_t share[4];
        assert_int_equal(ct_distributed_sampler_indices(sampler, share, 4), CT_OK);
        ct_tensor *x, *y;
        int64_t position = 0;
        while (ct_data_loader_next(loader, &x, &y) == CT_OK) {
            float *ys = floats_of(y);
            for (int64_t r = 0; r < ct_tensor_shape(y)[0]; r++, position++) {
                int64_t sample = (int64_t)(ys[r] * 2.0f);
                assert_int_equal(sample, share[position]);
                seen[sample]++;
            }
            free(ys);
            ct_release(x);
            ct_release(y);
        }
        assert_int_equal(position, 4); /* ceil(10 / 3) */
        ct_data_loader_destroy(loader);
        ct_distributed_sampler_free(sampler);
    }
    int total = 0;
    for (int i = 0; i < N_IMAGES; i++) {
        assert_true(seen[i] >= 1); /* every sample, two of them twice (padding to 12) */
        total += seen[i];
    }
    assert_int_equal(total, 12);
    ct_dataset_free(ds);
}

/* Three tensors per sample (float images, float targets, uint8 masks) prefetched onto PoCL equal
 * the CPU loader's batches, for a tensor dataset and a callback dataset. */
static void prefetch_of_any_tensors_onto_an_opencl_device(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int freed = 0;
    ct_dataset *sets[2] = {ct_tensor_dataset((ct_tensor *[]){images, targets, masks}, 3),
                           callback_dataset(7, -1, &freed)};
    for (int s = 0; s < 2; s++) {
        int count = ct_dataset_num_tensors(sets[s]);
        ct_data_loader *on_cpu = loader_of(sets[s], 3, true, false, CT_DEVICE_CPU);
        ct_data_loader *on_device = loader_of(sets[s], 3, true, false, OPENCL0);
        for (int64_t epoch = 0; epoch < 2; epoch++) {
            assert_int_equal(ct_data_loader_start_epoch(on_cpu, epoch), CT_OK);
            assert_int_equal(ct_data_loader_start_epoch(on_device, epoch), CT_OK);
            ct_tensor *host[3], *device[3];
            int batches = 0;
            while (ct_data_loader_next_batch(on_cpu, host, count) == CT_OK) {
                assert_int_equal(ct_data_loader_next_batch(on_device, device, count), CT_OK);
                for (int k = 0; k < count; k++) {
                    assert_true(ct_device_equal(ct_tensor_device(device[k]), OPENCL0));
                    assert_int_equal(ct_tensor_dtype(device[k]), ct_tensor_dtype(host[k]));
                    assert_same_values(device[k], host[k], 0, 0, "batch tensor");
                    ct_release(host[k]);
                    ct_release(device[k]);
                }
                batches++;
            }
            assert_int_equal(batches, s == 0 ? 4 : 3);
        }
        ct_data_loader_destroy(on_device);
        ct_data_loader_destroy(on_cpu);
        ct_dataset_free(sets[s]);
    }
    assert_int_equal(freed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(images_with_regression_targets_batch_as_stacked_samples),
        cmocka_unit_test(token_sequences_batch_as_int64_rows),
        cmocka_unit_test(tensor_datasets_refuse_what_cannot_be_batched),
        cmocka_unit_test(a_callback_dataset_is_batched_and_split_like_a_torch_dataset),
        cmocka_unit_test(a_failing_get_item_stops_the_loader_with_the_index),
        cmocka_unit_test(distributed_sampler_shares_of_a_tensor_dataset),
        cmocka_unit_test(prefetch_of_any_tensors_onto_an_opencl_device),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
