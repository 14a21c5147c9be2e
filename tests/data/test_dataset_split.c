/* The seeded generator, permutations and the train/test split: the same seed gives the same
 * result on every machine (pinned here to values computed by an independent implementation of
 * splitmix64 and the documented Fisher-Yates), different seeds differ, and no sample is lost or
 * duplicated. */
#include "data/data_internal.h"
#include "data_test.h"

static void splitmix64_gives_the_reference_sequence(void **state)
{
    (void)state;
    /* the published outputs of splitmix64 from state 0 */
    uint64_t s = 0;
    assert_true(ct_splitmix64_next(&s) == UINT64_C(0xe220a8397b1dcdaf));
    assert_true(ct_splitmix64_next(&s) == UINT64_C(0x6e789e6aa1b965f4));
    assert_true(ct_splitmix64_next(&s) == UINT64_C(0x06c45d188009454f));
    /* bounded draws stay in range */
    for (uint64_t bound = 1; bound < 100; bound++)
        for (int k = 0; k < 20; k++) assert_true(ct_splitmix64_below(&s, bound) < bound);
}

static void permutations_are_pinned_to_their_seed(void **state)
{
    (void)state;
    int64_t p[12];
    const int64_t seed42[10] = {0, 9, 5, 8, 6, 4, 7, 2, 1, 3};
    const int64_t seed43[10] = {4, 2, 5, 6, 1, 3, 9, 8, 7, 0};
    const int64_t seed0[12] = {4, 1, 6, 8, 0, 5, 2, 3, 11, 9, 10, 7};
    assert_int_equal(ct_data_permutation(10, 42, p), CT_OK);
    assert_memory_equal(p, seed42, sizeof seed42);
    assert_int_equal(ct_data_permutation(10, 43, p), CT_OK);
    assert_memory_equal(p, seed43, sizeof seed43);
    assert_int_equal(ct_data_permutation(12, 0, p), CT_OK);
    assert_memory_equal(p, seed0, sizeof seed0);
    assert_int_equal(ct_data_permutation(0, 1, NULL), CT_OK);
    assert_int_equal(ct_data_permutation(1, 1, p), CT_OK);
    assert_int_equal(p[0], 0);
    assert_int_equal(ct_data_permutation(-1, 1, p), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "n is -1");
    assert_int_equal(ct_data_permutation(3, 1, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'out'");
}

static void a_large_permutation_holds_every_index_once(void **state)
{
    (void)state;
    enum { N = 10007 };
    int64_t *p = malloc(N * sizeof *p);
    char *seen = calloc(N, 1);
    assert_int_equal(ct_data_permutation(N, 7, p), CT_OK);
    int64_t fixed = 0;
    for (int64_t i = 0; i < N; i++) {
        assert_true(p[i] >= 0 && p[i] < N);
        assert_false(seen[p[i]]);
        seen[p[i]] = 1;
        fixed += p[i] == i;
    }
    assert_true(fixed < 10); /* a shuffle, not the identity (about 1 fixed point expected) */
    free(p);
    free(seen);
}

/* The sample numbers (feature 0, see numbered_dataset) of a dataset, in its order. */
static int64_t *sample_numbers(const ct_dataset *ds)
{
    ct_tensor *x = ct_dataset_features(ds), *y = ct_dataset_labels(ds);
    float *features = floats_of(x);
    int64_t *labels = int64s_of(y);
    int64_t n = ct_dataset_size(ds);
    int64_t *numbers = malloc((size_t)(n ? n : 1) * sizeof *numbers);
    for (int64_t i = 0; i < n; i++) {
        numbers[i] = (int64_t)features[3 * i];
        /* the rest of the row and the label travelled with it */
        assert_true(features[3 * i + 1] == -features[3 * i]);
        assert_true(features[3 * i + 2] == 0.5f * features[3 * i]);
        assert_int_equal(labels[i], numbers[i] % 7);
    }
    free(features);
    free(labels);
    ct_release(x);
    ct_release(y);
    return numbers;
}

static void a_split_has_ceil_of_the_fraction_in_test_and_loses_nothing(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(1000, 7);
    ct_dataset *train = NULL, *test = NULL;
    assert_int_equal(ct_dataset_split(ds, 0.2, 1, &train, &test), CT_OK);
    assert_int_equal(ct_dataset_size(test), 200);
    assert_int_equal(ct_dataset_size(train), 800);
    assert_int_equal(ct_dataset_num_features(train), 3);
    assert_int_equal(ct_dataset_num_classes(train), 7);
    int64_t *a = sample_numbers(train), *b = sample_numbers(test);
    char seen[1000] = {0};
    for (int i = 0; i < 800; i++) seen[a[i]]++;
    for (int i = 0; i < 200; i++) seen[b[i]]++;
    for (int i = 0; i < 1000; i++) assert_int_equal(seen[i], 1);
    /* the test part is the first ceil(0.2 N) of ct_data_permutation(N, seed), the train part the rest */
    int64_t order[1000];
    ct_data_permutation(1000, 1, order);
    assert_memory_equal(b, order, 200 * sizeof(int64_t));
    assert_memory_equal(a, order + 200, 800 * sizeof(int64_t));
    free(a);
    free(b);
    ct_dataset_free(train);
    ct_dataset_free(test);
    /* the digits split the way scikit-learn's test_size rounds: ceil(0.25 * 1797) = 450 */
    ct_dataset *digits = ct_csv_dataset_load(CTORCH_DIGITS_PATH, NULL);
    assert_int_equal(ct_dataset_split(digits, 0.25, 0, &train, &test), CT_OK);
    assert_int_equal(ct_dataset_size(test), 450);
    assert_int_equal(ct_dataset_size(train), 1347);
    assert_int_equal(ct_dataset_num_features(test), 64);
    assert_int_equal(ct_dataset_num_classes(test), 10);
    ct_dataset_free(train);
    ct_dataset_free(test);
    ct_dataset_free(digits);
    ct_dataset_free(ds);
    /* 0.1 * 30 is 3.0000000000000004 in doubles: still 3 test samples */
    ds = numbered_dataset(30, 7);
    assert_int_equal(ct_dataset_split(ds, 0.1, 0, &train, &test), CT_OK);
    assert_int_equal(ct_dataset_size(test), 3);
    assert_int_equal(ct_dataset_size(train), 27);
    ct_dataset_free(train);
    ct_dataset_free(test);
    assert_int_equal(ct_dataset_split(ds, 0.101, 0, &train, &test), CT_OK);
    assert_int_equal(ct_dataset_size(test), 4);
    ct_dataset_free(train);
    ct_dataset_free(test);
    ct_dataset_free(ds);
}

static void the_same_seed_gives_the_same_split_and_another_seed_another(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(300, 7);
    ct_dataset *train1, *test1, *train2, *test2, *train3, *test3;
    assert_int_equal(ct_dataset_split(ds, 0.3, 123, &train1, &test1), CT_OK);
    assert_int_equal(ct_dataset_split(ds, 0.3, 123, &train2, &test2), CT_OK);
    assert_int_equal(ct_dataset_split(ds, 0.3, 124, &train3, &test3), CT_OK);
    int64_t *a = sample_numbers(test1), *b = sample_numbers(test2), *c = sample_numbers(test3);
    int64_t *ta = sample_numbers(train1), *tb = sample_numbers(train2);
    assert_memory_equal(a, b, 90 * sizeof(int64_t));
    assert_memory_equal(ta, tb, 210 * sizeof(int64_t));
    assert_memory_not_equal(a, c, 90 * sizeof(int64_t));
    /* and it is a shuffle: the test part is not simply the first samples */
    int in_order = 0;
    for (int i = 0; i < 90; i++) in_order += a[i] == i;
    assert_true(in_order < 10);
    free(a);
    free(b);
    free(c);
    free(ta);
    free(tb);
    ct_dataset *parts[] = {train1, test1, train2, test2, train3, test3};
    for (int i = 0; i < 6; i++) ct_dataset_free(parts[i]);
    ct_dataset_free(ds);
}

static void a_part_keeps_the_whole_datasets_classes(void **state)
{
    (void)state;
    /* labels 0..6, but a 1-sample test part holds only one of them */
    ct_dataset *ds = numbered_dataset(10, 7);
    ct_dataset *train, *test;
    assert_int_equal(ct_dataset_split(ds, 0.1, 5, &train, &test), CT_OK);
    assert_int_equal(ct_dataset_size(test), 1);
    assert_int_equal(ct_dataset_size(train), 9);
    assert_int_equal(ct_dataset_num_classes(test), 7);
    ct_dataset_free(train);
    ct_dataset_free(test);
    ct_dataset_free(ds);
}

static void bad_splits_are_refused(void **state)
{
    (void)state;
    ct_dataset *ds = numbered_dataset(4, 2);
    ct_dataset *train = (ct_dataset *)1, *test = (ct_dataset *)1;
    assert_int_equal(ct_dataset_split(ds, 0.0, 1, &train, &test), CT_ERR_INVALID_ARGUMENT);
    assert_null(train);
    assert_null(test);
    assert_error(CT_ERR_INVALID_ARGUMENT, "test_fraction is 0; it must lie strictly between 0 and 1");
    assert_int_equal(ct_dataset_split(ds, 1.0, 1, &train, &test), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "test_fraction is 1");
    assert_int_equal(ct_dataset_split(ds, 0.0 / 0.0, 1, &train, &test), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "strictly between 0 and 1");
    assert_int_equal(ct_dataset_split(ds, 0.8, 1, &train, &test), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "with 4 samples and test_fraction 0.8 the train part would be empty");
    ct_dataset *one = numbered_dataset(1, 1);
    assert_int_equal(ct_dataset_split(one, 0.5, 1, &train, &test), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "with 1 samples");
    assert_int_equal(ct_dataset_split(NULL, 0.5, 1, &train, &test), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'ds'");
    assert_int_equal(ct_dataset_split(ds, 0.5, 1, NULL, &test), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'train'");
    assert_int_equal(ct_dataset_split(ds, 0.5, 1, &train, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'test'");
    ct_dataset_free(one);
    ct_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splitmix64_gives_the_reference_sequence),
        cmocka_unit_test(permutations_are_pinned_to_their_seed),
        cmocka_unit_test(a_large_permutation_holds_every_index_once),
        cmocka_unit_test(a_split_has_ceil_of_the_fraction_in_test_and_loses_nothing),
        cmocka_unit_test(the_same_seed_gives_the_same_split_and_another_seed_another),
        cmocka_unit_test(a_part_keeps_the_whole_datasets_classes),
        cmocka_unit_test(bad_splits_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
