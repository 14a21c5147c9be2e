/* The distributed sampler, every rank instantiated in one process: across the ranks each sample
 * comes exactly once per epoch (padding and drop_last aside), every rank gets the same count,
 * the order changes with the epoch and repeats for the same seed; the indices equal a literal
 * transcription of PyTorch's DistributedSampler.__iter__; and the loader walks a rank's share. */
#include <math.h>

#include "data_test.h"

#define MAX_SAMPLES 512

/* PyTorch's __iter__, step by step as written in torch/utils/data/distributed.py, over the order
 * `order` (randperm or range): the reference. Returns the count written into out. */
static int64_t pytorch_indices(const int64_t *order, int64_t n, int replicas, int rank, bool drop_last,
                               int64_t *out)
{
    int64_t num_samples;
    if (drop_last && n % replicas != 0) {
        /* math.ceil((len(dataset) - num_replicas) / num_replicas) */
        double q = (double)(n - replicas) / replicas;
        num_samples = (int64_t)ceil(q);
        if (num_samples < 0) num_samples = 0;
    } else {
        num_samples = (int64_t)ceil((double)n / replicas);
    }
    int64_t total_size = num_samples * replicas;
    int64_t indices[4 * MAX_SAMPLES], length = n;
    memcpy(indices, order, sizeof(int64_t) * (size_t)n);
    if (!drop_last) {
        int64_t padding_size = total_size - length;
        if (padding_size <= length) {
            for (int64_t i = 0; i < padding_size; i++) indices[length + i] = indices[i]; /* += indices[:pad] */
        } else {
            /* indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size] */
            int64_t times = (padding_size + length - 1) / length, repeated[4 * MAX_SAMPLES];
            for (int64_t t = 0; t < times; t++) memcpy(repeated + t * length, indices, sizeof(int64_t) * (size_t)length);
            memcpy(indices + length, repeated, sizeof(int64_t) * (size_t)padding_size);
        }
        length += padding_size;
    } else {
        length = total_size; /* indices[:total_size] */
    }
    assert_int_equal(length, total_size);
    int64_t count = 0;
    for (int64_t k = rank; k < total_size; k += replicas) out[count++] = indices[k]; /* [rank:total:R] */
    assert_int_equal(count, num_samples);
    return count;
}

static ct_distributed_sampler *make_sampler(int64_t n, int replicas, int rank, bool shuffle, uint64_t seed,
                                            bool drop_last)
{
    ct_distributed_sampler_options options = ct_distributed_sampler_options_default();
    options.shuffle = shuffle;
    options.seed = seed;
    options.drop_last = drop_last;
    ct_distributed_sampler *sampler = ct_distributed_sampler_create(n, replicas, rank, &options);
    assert_non_null(sampler);
    return sampler;
}

/* Rank `rank`'s indices at epoch `epoch` into out; returns their count. */
static int64_t share(int64_t n, int replicas, int rank, bool shuffle, uint64_t seed, bool drop_last,
                     int64_t epoch, int64_t *out)
{
    ct_distributed_sampler *sampler = make_sampler(n, replicas, rank, shuffle, seed, drop_last);
    assert_int_equal(ct_distributed_sampler_set_epoch(sampler, epoch), CT_OK);
    int64_t count = ct_distributed_sampler_num_samples(sampler);
    assert_int_equal(ct_distributed_sampler_indices(sampler, out, MAX_SAMPLES), CT_OK);
    ct_distributed_sampler_free(sampler);
    return count;
}

static void the_indices_are_pytorchs_for_every_size_replica_count_and_mode(void **state)
{
    (void)state;
    const int64_t sizes[] = {0, 1, 3, 10, 12, 13, 100};
    const int replica_counts[] = {1, 2, 3, 4, 8};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t r = 0; r < sizeof replica_counts / sizeof replica_counts[0]; r++)
            for (int mode = 0; mode < 4; mode++) {
                bool shuffle = mode & 1, drop_last = mode & 2;
                int64_t n = sizes[s], order[MAX_SAMPLES];
                int replicas = replica_counts[r];
                for (int64_t epoch = 0; epoch < 3; epoch++) {
                    if (shuffle) assert_int_equal(ct_data_permutation(n, 42 + (uint64_t)epoch, order), CT_OK);
                    else for (int64_t i = 0; i < n; i++) order[i] = i;
                    for (int rank = 0; rank < replicas; rank++) {
                        int64_t got[MAX_SAMPLES], want[MAX_SAMPLES];
                        int64_t count = share(n, replicas, rank, shuffle, 42, drop_last, epoch, got);
                        assert_int_equal(count, pytorch_indices(order, n, replicas, rank, drop_last, want));
                        for (int64_t i = 0; i < count; i++) assert_int_equal(got[i], want[i]);
                    }
                }
            }
}

/* Over the ranks of one epoch: how often each sample comes. */
static void count_over_ranks(int64_t n, int replicas, bool drop_last, uint64_t seed, int64_t epoch, int *times,
                             int64_t *per_rank)
{
    memset(times, 0, sizeof(int) * (size_t)n);
    for (int rank = 0; rank < replicas; rank++) {
        int64_t got[MAX_SAMPLES];
        int64_t count = share(n, replicas, rank, true, seed, drop_last, epoch, got);
        if (rank == 0) *per_rank = count;
        assert_int_equal(count, *per_rank); /* every rank the same count */
        for (int64_t i = 0; i < count; i++) {
            assert_in_range(got[i], 0, n - 1);
            times[got[i]]++;
        }
    }
}

static void across_ranks_every_sample_comes_exactly_once_per_epoch(void **state)
{
    (void)state;
    int times[MAX_SAMPLES];
    int64_t per_rank;
    for (int64_t epoch = 0; epoch < 5; epoch++) {
        count_over_ranks(120, 4, false, 7, epoch, times, &per_rank);
        assert_int_equal(per_rank, 30);
        for (int i = 0; i < 120; i++) assert_int_equal(times[i], 1);
        /* drop_last changes nothing when the ranks divide the dataset */
        count_over_ranks(120, 4, true, 7, epoch, times, &per_rank);
        for (int i = 0; i < 120; i++) assert_int_equal(times[i], 1);
    }
}

static void padding_repeats_the_first_samples_of_the_epochs_order(void **state)
{
    (void)state;
    int times[MAX_SAMPLES];
    int64_t per_rank, order[MAX_SAMPLES];
    for (int64_t epoch = 0; epoch < 3; epoch++) {
        /* 10 samples over 4 ranks: 3 each, 12 in all, the order's first 2 twice */
        count_over_ranks(10, 4, false, 3, epoch, times, &per_rank);
        assert_int_equal(per_rank, 3);
        assert_int_equal(ct_data_permutation(10, 3 + (uint64_t)epoch, order), CT_OK);
        for (int i = 0; i < 10; i++) assert_int_equal(times[order[i]], i < 2 ? 2 : 1);
        /* 3 samples over 8 ranks: every rank gets one, the order repeated */
        count_over_ranks(3, 8, false, 3, epoch, times, &per_rank);
        assert_int_equal(per_rank, 1);
        assert_int_equal(ct_data_permutation(3, 3 + (uint64_t)epoch, order), CT_OK);
        assert_int_equal(times[order[0]], 3);
        assert_int_equal(times[order[1]], 3);
        assert_int_equal(times[order[2]], 2);
    }
}

static void drop_last_leaves_out_the_tail_of_the_epochs_order(void **state)
{
    (void)state;
    int times[MAX_SAMPLES];
    int64_t per_rank, order[MAX_SAMPLES];
    for (int64_t epoch = 0; epoch < 3; epoch++) {
        count_over_ranks(10, 4, true, 5, epoch, times, &per_rank);
        assert_int_equal(per_rank, 2);
        assert_int_equal(ct_data_permutation(10, 5 + (uint64_t)epoch, order), CT_OK);
        for (int i = 0; i < 10; i++) assert_int_equal(times[order[i]], i < 8 ? 1 : 0);
    }
    ct_distributed_sampler *none = make_sampler(3, 8, 7, true, 0, true);
    assert_int_equal(ct_distributed_sampler_num_samples(none), 0);
    assert_int_equal(ct_distributed_sampler_total_size(none), 0);
    assert_int_equal(ct_distributed_sampler_indices(none, NULL, 0), CT_OK);
    ct_distributed_sampler_free(none);
}

static bool same(const int64_t *a, const int64_t *b, int64_t n)
{
    return memcmp(a, b, sizeof(int64_t) * (size_t)n) == 0;
}

static void the_order_changes_with_the_epoch_and_repeats_for_the_same_seed(void **state)
{
    (void)state;
    int64_t a[MAX_SAMPLES], b[MAX_SAMPLES], c[MAX_SAMPLES];
    for (int rank = 0; rank < 2; rank++) {
        int64_t n = share(200, 2, rank, true, 9, false, 0, a);
        share(200, 2, rank, true, 9, false, 1, b);
        assert_false(same(a, b, n));            /* another epoch, another order */
        share(200, 2, rank, true, 9, false, 0, c);
        assert_true(same(a, c, n));             /* the same seed and epoch, the same order */
        share(200, 2, rank, true, 10, false, 0, c);
        assert_false(same(a, c, n));            /* another seed, another order */
    }
    /* unshuffled: rank r gets r, r + R, r + 2R, ... in every epoch */
    int64_t n = share(11, 3, 1, false, 9, false, 4, a);
    int64_t want[4] = {1, 4, 7, 10};
    assert_int_equal(n, 4);
    assert_true(same(a, want, 4));
    /* one replica shuffles as the loader does: ct_data_permutation(N, seed + epoch) */
    share(50, 1, 0, true, 21, false, 3, a);
    assert_int_equal(ct_data_permutation(50, 24, b), CT_OK);
    assert_true(same(a, b, 50));
}

static void bad_arguments_are_errors(void **state)
{
    (void)state;
    assert_null(ct_distributed_sampler_create(10, 0, 0, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "num_replicas is 0");
    assert_null(ct_distributed_sampler_create(10, 2, 2, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "rank is 2; it must be in [0, 1]");
    assert_null(ct_distributed_sampler_create(10, 2, -1, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "rank is -1");
    assert_null(ct_distributed_sampler_create(-1, 2, 0, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "dataset_size is -1");
    ct_distributed_sampler *sampler = ct_distributed_sampler_create(10, 3, 0, NULL);
    assert_non_null(sampler);
    int64_t out[4];
    assert_int_equal(ct_distributed_sampler_indices(sampler, out, 3), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "out has room for 3 indices; this rank's share has 4");
    assert_int_equal(ct_distributed_sampler_set_epoch(sampler, -1), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "epoch is -1");
    assert_int_equal(ct_distributed_sampler_set_epoch(NULL, 1), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'sampler'");
    assert_int_equal(ct_distributed_sampler_num_samples(NULL), -1);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_distributed_sampler_num_samples");
    ct_distributed_sampler_free(sampler);
    ct_distributed_sampler_free(NULL);
}

/* The samples a loader hands out in one epoch (dataset from numbered_dataset). */
static int64_t loader_epoch(ct_data_loader *loader, int64_t epoch, int64_t *samples)
{
    assert_int_equal(ct_data_loader_start_epoch(loader, epoch), CT_OK);
    ct_tensor *x, *y;
    int64_t count = 0;
    while (ct_data_loader_next(loader, &x, &y) == CT_OK) {
        int64_t *labels = int64s_of(y);
        for (int64_t i = 0; i < ct_tensor_size(y, 0); i++) samples[count++] = labels[i];
        free(labels);
        ct_release(x);
        ct_release(y);
    }
    return count;
}

static void the_loader_walks_its_ranks_share_epoch_by_epoch(void **state)
{
    (void)state;
    /* labels are the sample numbers (classes > n) */
    ct_dataset *ds = numbered_dataset(23, 1000);
    for (int rank = 0; rank < 3; rank++) {
        ct_distributed_sampler *sampler = make_sampler(23, 3, rank, true, 17, false);
        ct_data_loader_options options = ct_data_loader_options_default();
        options.batch_size = 3;
        options.sampler = sampler;
        ct_data_loader *loader = ct_data_loader_create(ds, &options);
        assert_non_null(loader);
        assert_int_equal(ct_data_loader_num_batches(loader), 3); /* 8 samples: 3 + 3 + 2 */
        for (int64_t epoch = 0; epoch < 3; epoch++) {
            int64_t got[MAX_SAMPLES], want[MAX_SAMPLES];
            assert_int_equal(loader_epoch(loader, epoch, got), 8);
            assert_int_equal(ct_distributed_sampler_set_epoch(sampler, epoch), CT_OK);
            assert_int_equal(ct_distributed_sampler_indices(sampler, want, MAX_SAMPLES), CT_OK);
            assert_true(same(got, want, 8));
        }
        ct_data_loader_destroy(loader);
        ct_distributed_sampler_free(sampler);
    }
    ct_dataset_free(ds);
}

static void the_loader_refuses_a_sampler_with_shuffle_or_for_another_size(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(23, 5);
    ct_distributed_sampler *sampler = make_sampler(23, 2, 0, true, 0, false);
    ct_data_loader_options options = ct_data_loader_options_default();
    options.sampler = sampler;
    options.shuffle = true;
    assert_null(ct_data_loader_create(ds, &options));
    assert_error(CT_ERR_INVALID_ARGUMENT, "shuffle and a sampler both set");
    ct_distributed_sampler *other = make_sampler(24, 2, 0, true, 0, false);
    options.shuffle = false;
    options.sampler = other;
    assert_null(ct_data_loader_create(ds, &options));
    assert_error(CT_ERR_INVALID_ARGUMENT, "the sampler is for 24 samples but the dataset has 23");
    ct_distributed_sampler_free(sampler);
    ct_distributed_sampler_free(other);
    ct_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_indices_are_pytorchs_for_every_size_replica_count_and_mode),
        cmocka_unit_test(across_ranks_every_sample_comes_exactly_once_per_epoch),
        cmocka_unit_test(padding_repeats_the_first_samples_of_the_epochs_order),
        cmocka_unit_test(drop_last_leaves_out_the_tail_of_the_epochs_order),
        cmocka_unit_test(the_order_changes_with_the_epoch_and_repeats_for_the_same_seed),
        cmocka_unit_test(bad_arguments_are_errors),
        cmocka_unit_test(the_loader_walks_its_ranks_share_epoch_by_epoch),
        cmocka_unit_test(the_loader_refuses_a_sampler_with_shuffle_or_for_another_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
