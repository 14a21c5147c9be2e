/* multinomial draws categories in proportion to their weights (a chi-square bound at a fixed
 * seed), the same draws for the same seed on every device, distinct categories without
 * replacement, never a zero weight; PyTorch's refusals of bad weights. */
#include <math.h>

#include "support/devices.h"
#include "test_common.h"

static int64_t *draws(const ct_tensor *t)
{
    assert_non_null(t);
    assert_int_equal(ct_tensor_dtype(t), CT_I64);
    int64_t n = ct_numel(t);
    int64_t *out = malloc((size_t)n * sizeof *out);
    ct_tensor *h = ct_to(t, CT_DEVICE_CPU);
    assert_int_equal(ct_tensor_to_array(h, out, (size_t)n * sizeof *out), CT_OK);
    ct_release(h);
    return out;
}

/* Pearson's statistic of the counts of n draws against weights w (summing to 1). */
static double chi_square(const int64_t *d, int64_t n, const double *w, int categories)
{
    double counts[16] = {0}, statistic = 0;
    for (int64_t k = 0; k < n; k++) counts[d[k]] += 1;
    for (int c = 0; c < categories; c++)
        if (w[c] > 0) statistic += (counts[c] - n * w[c]) * (counts[c] - n * w[c]) / (n * w[c]);
        else assert_true(counts[c] == 0);
    return statistic;
}

static ct_tensor *weights_on(const double *w, int64_t rows, int64_t c, ct_device device)
{
    double *tiled = malloc((size_t)(rows * c) * sizeof *tiled);
    for (int64_t r = 0; r < rows; r++) memcpy(tiled + r * c, w, (size_t)c * sizeof *w);
    int64_t shape[2] = {rows, c};
    ct_tensor *t = ct_tensor_from_data(tiled, CT_F64, shape, 2, device);
    free(tiled);
    return t;
}

/* 3 degrees of freedom: P(chi2 > 16.27) = 0.001. The seed is fixed, so the test is repeatable;
 * wrong proportions (one weight off by 10% at these counts) exceed the bound. */
static void draws_follow_the_weights_with_and_without_replacement(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const double w[5] = {0.1, 0.2, 0, 0.3, 0.4}, raw[5] = {1, 2, 0, 3, 4};
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_manual_seed(1234);
        int64_t c = 5;
        ct_tensor *p = ct_tensor_from_data(raw, CT_F64, &c, 1, devices[d]);
        ct_tensor *with = ct_multinomial(p, 8000, true);
        assert_int_equal(ct_tensor_ndim(with), 1);
        int64_t *a = draws(with);
        assert_true(chi_square(a, 8000, w, 5) < 16.27);
        free(a);
        /* the first draw without replacement follows the weights too: one per row */
        ct_tensor *rows = weights_on(raw, 4000, 5, devices[d]);
        ct_tensor *first = ct_multinomial(rows, 1, false);
        assert_int_equal(ct_tensor_shape(first)[0], 4000);
        a = draws(first);
        assert_true(chi_square(a, 4000, w, 5) < 16.27);
        free(a);
        ct_scope_pop();
    }
}

static void without_replacement_the_categories_are_distinct(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const double raw[6] = {5, 0, 1, 1e-3, 2, 7};
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_tensor *rows = weights_on(raw, 50, 6, devices[d]);
        int64_t *a = draws(ct_multinomial(rows, 5, false));
        for (int r = 0; r < 50; r++)
            for (int i = 0; i < 5; i++) {
                assert_true(a[r * 5 + i] != 1 && a[r * 5 + i] >= 0 && a[r * 5 + i] < 6);
                for (int j = 0; j < i; j++) assert_true(a[r * 5 + i] != a[r * 5 + j]);
            }
        free(a);
        ct_scope_pop();
    }
}

static void the_same_seed_gives_the_same_draws_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const double raw[4] = {0.5, 1.5, 1, 3};
    int64_t *first[2] = {NULL, NULL};
    for (int replacement = 0; replacement < 2; replacement++)
        for (int d = 0; d < count; d++)
            for (int again = 0; again < 2; again++) {
                ct_scope_push();
                ct_manual_seed(77);
                ct_tensor *rows = weights_on(raw, 16, 4, devices[d]);
                int64_t *a = draws(ct_multinomial(rows, 3, replacement));
                if (!first[replacement]) first[replacement] = a;
                else {
                    assert_memory_equal(a, first[replacement], 16 * 3 * sizeof *a);
                    free(a);
                }
                ct_scope_pop();
            }
    /* another seed, other draws */
    ct_manual_seed(78);
    ct_tensor *rows = weights_on(raw, 16, 4, CT_DEVICE_CPU);
    ct_tensor *other = ct_multinomial(rows, 3, true);
    int64_t *a = draws(other);
    assert_true(memcmp(a, first[1], 16 * 3 * sizeof *a) != 0);
    free(a);
    ct_release(other);
    ct_release(rows);
    free(first[0]);
    free(first[1]);
}

static void bad_weights_are_refused(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t c = 3, s23[2] = {2, 3};
    const double negative[3] = {1, -1, 0}, nan[3] = {1, NAN, 0}, inf[3] = {1, INFINITY, 0},
                 one_zero_row[6] = {1, 2, 3, 0, 0, 0}, sparse[3] = {1, 0, 0};
    assert_null(ct_multinomial(ct_tensor_from_data(negative, CT_F64, &c, 1, CT_DEVICE_CPU), 1, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "element < 0");
    assert_null(ct_multinomial(ct_tensor_from_data(nan, CT_F64, &c, 1, CT_DEVICE_CPU), 1, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "nan");
    assert_null(ct_multinomial(ct_tensor_from_data(inf, CT_F64, &c, 1, CT_DEVICE_CPU), 1, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "inf");
    assert_null(ct_multinomial(ct_tensor_from_data(one_zero_row, CT_F64, s23, 2, CT_DEVICE_CPU), 1, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "sum of probabilities <= 0");
    ct_tensor *p = ct_tensor_from_data(sparse, CT_F64, &c, 1, CT_DEVICE_CPU);
    assert_null(ct_multinomial(p, 2, false));
    assert_error(CT_ERR_INVALID_ARGUMENT, "only 1 nonzero categories");
    assert_null(ct_multinomial(p, 4, false));
    assert_error(CT_ERR_INVALID_ARGUMENT, "more than the 3 categories");
    assert_null(ct_multinomial(p, 0, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "num_samples is 0");
    assert_null(ct_multinomial(ct_ones(&c, 1, CT_I64, CT_DEVICE_CPU), 1, true));
    assert_error(CT_ERR_DTYPE, "floating");
    int64_t s3d[3] = {1, 1, 3};
    assert_null(ct_multinomial(ct_ones(s3d, 3, CT_F32, CT_DEVICE_CPU), 1, true));
    assert_error(CT_ERR_SHAPE, "[C] or [N, C]");
    assert_null(ct_multinomial(NULL, 1, true));
    assert_error(CT_ERR_NULL_ARGUMENT, "probs");
    /* with replacement a single category may be drawn again and again */
    int64_t *a = draws(ct_multinomial(p, 4, true));
    for (int k = 0; k < 4; k++) assert_int_equal(a[k], 0);
    free(a);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(draws_follow_the_weights_with_and_without_replacement),
        cmocka_unit_test(without_replacement_the_categories_are_distinct),
        cmocka_unit_test(the_same_seed_gives_the_same_draws_on_every_device),
        cmocka_unit_test(bad_weights_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
