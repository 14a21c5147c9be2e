/* Random tensors: Philox 4x32-10 against its published answers, reproducibility by seed, the
 * same numbers on every device, the distributions, and bad arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"
#include "tensor/random_internal.h"

static void *read_all(const ct_tensor *t)
{
    assert_non_null(t);
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
    void *values = malloc(bytes + 1);
    assert_non_null(values);
    assert_int_equal(ct_tensor_to_array(t, values, bytes), CT_OK);
    return values;
}

/* Runs first: nothing has seeded the generator yet. */
static void the_default_seed_is_pytorchs(void **state)
{
    (void)state;
    assert_true(ct_initial_seed() == UINT64_C(67280421310721));
    ct_manual_seed(1234);
    assert_true(ct_initial_seed() == 1234);
}

static void philox_matches_the_random123_known_answers(void **state)
{
    (void)state;
    static const struct {
        uint32_t counter[4], key[2], expected[4];
    } answers[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t k = 0; k < sizeof answers / sizeof *answers; k++) {
        uint32_t out[4];
        ct_philox4x32_10(answers[k].counter, answers[k].key, out);
        for (int w = 0; w < 4; w++) assert_int_equal(out[w], answers[k].expected[w]);
    }
}

static void rand_float32_is_the_top_24_bits_of_the_first_philox_word(void **state)
{
    (void)state;
    const uint64_t seed = UINT64_C(0x123456789abcdef0);
    ct_manual_seed(seed);
    ct_tensor *t = ct_rand((const int64_t[]){5}, 1, CT_F32, CT_DEVICE_CPU);
    float *values = read_all(t);
    for (uint32_t i = 0; i < 5; i++) {
        uint32_t counter[4] = {i, 0, 0, 0}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, out[4];
        ct_philox4x32_10(counter, key, out);
        assert_true(values[i] == (float)(out[0] >> 8) / 16777216.0f);
    }
    free(values);
    ct_release(t);
}

static void one_seed_gives_the_same_numbers_and_draws_continue_the_counter(void **state)
{
    (void)state;
    const int64_t n = 1000;
    ct_manual_seed(42);
    ct_tensor *a = ct_randn(&n, 1, CT_F64, CT_DEVICE_CPU);
    ct_tensor *next = ct_randn(&n, 1, CT_F64, CT_DEVICE_CPU);
    ct_manual_seed(42);
    ct_tensor *b = ct_randn(&n, 1, CT_F64, CT_DEVICE_CPU);
    ct_manual_seed(43);
    ct_tensor *c = ct_randn(&n, 1, CT_F64, CT_DEVICE_CPU);
    double *va = read_all(a), *vb = read_all(b), *vc = read_all(c), *vnext = read_all(next);
    assert_memory_equal(va, vb, (size_t)n * sizeof *va);
    int same_as_other_seed = 0, same_as_next = 0;
    for (int64_t i = 0; i < n; i++) {
        same_as_other_seed += va[i] == vc[i];
        same_as_next += va[i] == vnext[i];
    }
    assert_int_equal(same_as_other_seed, 0);
    assert_int_equal(same_as_next, 0);
    /* Element i uses counter offset + i: two draws of 4 and 6 are one draw of 10. */
    ct_manual_seed(7);
    ct_tensor *four = ct_rand((const int64_t[]){2, 2}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *six = ct_rand((const int64_t[]){6}, 1, CT_F32, CT_DEVICE_CPU);
    ct_manual_seed(7);
    ct_tensor *ten = ct_rand((const int64_t[]){10}, 1, CT_F32, CT_DEVICE_CPU);
    float *v4 = read_all(four), *v6 = read_all(six), *v10 = read_all(ten);
    assert_memory_equal(v4, v10, 4 * sizeof *v4);
    assert_memory_equal(v6, v10 + 4, 6 * sizeof *v6);
    free(v4), free(v6), free(v10);
    ct_release(four), ct_release(six), ct_release(ten);
    free(va), free(vb), free(vc), free(vnext);
    ct_release(a), ct_release(b), ct_release(c), ct_release(next);
}

static void every_device_gives_the_same_numbers_for_one_seed(void **state)
{
    (void)state;
    const int64_t shape[2] = {33, 31};
    ct_device fake = {CT_OPENCL, 0};
    for (int kind = 0; kind < 5; kind++) {
        ct_tensor *on[2];
        for (int d = 0; d < 2; d++) {
            ct_device device = d == 0 ? CT_DEVICE_CPU : fake;
            ct_manual_seed(2024);
            switch (kind) {
            case 0: on[d] = ct_rand(shape, 2, CT_F32, device); break;
            case 1: on[d] = ct_rand(shape, 2, CT_F64, device); break;
            case 2: on[d] = ct_randn(shape, 2, CT_F32, device); break;
            case 3: on[d] = ct_randn(shape, 2, CT_F64, device); break;
            default: on[d] = ct_randint(-50, 50, shape, 2, CT_I64, device); break;
            }
        }
        assert_true(ct_device_equal(ct_tensor_device(on[1]), fake));
        void *cpu = read_all(on[0]), *accelerator = read_all(on[1]);
        assert_memory_equal(cpu, accelerator, (size_t)ct_numel(on[0]) * ct_dtype_size(ct_tensor_dtype(on[0])));
        free(cpu), free(accelerator);
        ct_release(on[0]), ct_release(on[1]);
    }
    /* Devices keep their own counters: drawing on one does not move the other. */
    ct_manual_seed(5);
    ct_tensor *first_fake = ct_rand(shape, 2, CT_F32, fake);
    ct_tensor *first_cpu = ct_rand(shape, 2, CT_F32, CT_DEVICE_CPU);
    void *a = read_all(first_fake), *b = read_all(first_cpu);
    assert_memory_equal(a, b, (size_t)ct_numel(first_cpu) * sizeof(float));
    free(a), free(b);
    ct_release(first_fake), ct_release(first_cpu);
}

static void randn_of_a_million_has_mean_zero_and_variance_one(void **state)
{
    (void)state;
    const int64_t n = 1000000;
    ct_manual_seed(99);
    for (int f = 0; f < 2; f++) {
        ct_dtype dtype = f ? CT_F64 : CT_F32;
        ct_tensor *t = ct_randn(&n, 1, dtype, CT_DEVICE_CPU);
        void *raw = read_all(t);
        double sum = 0, sum_sq = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = f ? ((double *)raw)[i] : ((float *)raw)[i];
            assert_true(isfinite(v));
            sum += v;
            sum_sq += v * v;
        }
        double mean = sum / (double)n, variance = sum_sq / (double)n - mean * mean;
        /* 4 standard errors: sd(mean) = 1/sqrt(n), sd(variance) = sqrt(2/n). */
        assert_true(fabs(mean) < 4.0 / sqrt((double)n));
        assert_true(fabs(variance - 1.0) < 4.0 * sqrt(2.0 / (double)n));
        free(raw);
        ct_release(t);
    }
}

static void rand_is_uniform_in_zero_to_one(void **state)
{
    (void)state;
    const int64_t n = 1000000;
    ct_manual_seed(3);
    for (int f = 0; f < 2; f++) {
        ct_tensor *t = ct_rand(&n, 1, f ? CT_F64 : CT_F32, CT_DEVICE_CPU);
        void *raw = read_all(t);
        double sum = 0, min = 1, max = 0;
        int64_t below_tenth = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = f ? ((double *)raw)[i] : ((float *)raw)[i];
            sum += v;
            min = fmin(min, v);
            max = fmax(max, v);
            below_tenth += v < 0.1;
        }
        assert_true(min >= 0.0 && max < 1.0);
        assert_true(fabs(sum / (double)n - 0.5) < 4.0 * sqrt(1.0 / 12.0 / (double)n));
        assert_true(fabs((double)below_tenth / (double)n - 0.1) < 4.0 * sqrt(0.09 / (double)n));
        free(raw);
        ct_release(t);
    }
}

static void randint_stays_in_low_to_high_and_covers_it(void **state)
{
    (void)state;
    const int64_t n = 20000;
    ct_manual_seed(11);
    ct_tensor *t = ct_randint(-3, 4, &n, 1, CT_I64, CT_DEVICE_CPU);
    int64_t *v64 = read_all(t);
    int seen[7] = {0};
    for (int64_t i = 0; i < n; i++) {
        assert_in_range(v64[i] + 3, 0, 6);
        seen[v64[i] + 3]++;
    }
    for (int k = 0; k < 7; k++) assert_true(seen[k] > n / 7 / 2);
    free(v64);
    ct_release(t);

    ct_tensor *bytes = ct_randint(250, 256, &n, 1, CT_U8, CT_DEVICE_CPU);
    uint8_t *v8 = read_all(bytes);
    int seen8[6] = {0};
    for (int64_t i = 0; i < n; i++) {
        assert_in_range(v8[i], 250, 255);
        seen8[v8[i] - 250] = 1;
    }
    for (int k = 0; k < 6; k++) assert_int_equal(seen8[k], 1);
    free(v8);
    ct_release(bytes);

    ct_tensor *ints = ct_randint(INT32_MIN, (int64_t)INT32_MAX + 1, &n, 1, CT_I32, CT_DEVICE_CPU);
    int32_t *v32 = read_all(ints);
    int negative = 0;
    for (int64_t i = 0; i < n; i++) negative += v32[i] < 0;
    assert_true(negative > n / 3 && negative < 2 * n / 3);
    free(v32);
    ct_release(ints);

    ct_tensor *floats = ct_randint(0, 10, &n, 1, CT_F32, CT_DEVICE_CPU);
    float *vf = read_all(floats);
    for (int64_t i = 0; i < n; i++) assert_true(vf[i] >= 0 && vf[i] <= 9 && vf[i] == floorf(vf[i]));
    free(vf);
    ct_release(floats);

    /* The whole int64 range: 2^64 - 1 values. */
    ct_tensor *wide = ct_randint(INT64_MIN, INT64_MAX, &n, 1, CT_I64, CT_DEVICE_CPU);
    int64_t *vw = read_all(wide);
    int wide_negative = 0;
    for (int64_t i = 0; i < n; i++) wide_negative += vw[i] < 0;
    assert_true(wide_negative > n / 3 && wide_negative < 2 * n / 3);
    free(vw);
    ct_release(wide);
}

static void empty_and_zero_dim_random_tensors_work(void **state)
{
    (void)state;
    ct_tensor *empty = ct_rand((const int64_t[]){0, 4}, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(empty);
    assert_int_equal(ct_numel(empty), 0);
    ct_tensor *scalar = ct_randn(NULL, 0, CT_F64, CT_DEVICE_CPU);
    double value = NAN;
    assert_int_equal(ct_item(scalar, &value), CT_OK);
    assert_true(isfinite(value));
    ct_release(scalar);
    ct_release(empty);
}

static void expect_error(ct_tensor *t, ct_status status, const char *fragment)
{
    assert_null(t);
    assert_int_equal(ct_last_error(), status);
    if (!strstr(ct_last_error_message(), fragment))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), fragment);
    ct_clear_error();
}

static void bad_dtypes_bounds_and_sizes_are_errors(void **state)
{
    (void)state;
    const int64_t shape[1] = {4};
    expect_error(ct_rand(shape, 1, CT_I64, CT_DEVICE_CPU), CT_ERR_DTYPE, "ct_rand: not supported for 'int64'");
    expect_error(ct_randn(shape, 1, CT_BOOL, CT_DEVICE_CPU), CT_ERR_DTYPE, "ct_randn: not supported for 'bool'");
    expect_error(ct_rand(shape, 1, (ct_dtype)-1, CT_DEVICE_CPU), CT_ERR_DTYPE, "dtype -1");
    expect_error(ct_randint(5, 5, shape, 1, CT_I64, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT,
                 "expects low to be less than high, but got low=5 >= high=5");
    expect_error(ct_randint(-1, 5, shape, 1, CT_U8, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT,
                 "[-1, 5) is out of bounds for uint8");
    expect_error(ct_randint(0, 3, shape, 1, CT_BOOL, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "out of bounds for bool");
    expect_error(ct_randint(0, (int64_t)1 << 40, shape, 1, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT,
                 "out of bounds for float32");
    expect_error(ct_rand((const int64_t[]){2, -3}, 2, CT_F32, CT_DEVICE_CPU), CT_ERR_SHAPE, "negative size in dim 1");
    expect_error(ct_randn((const int64_t[]){-1}, 1, CT_F32, CT_DEVICE_CPU), CT_ERR_SHAPE, "negative size");
    expect_error(ct_randint(0, 2, (const int64_t[]){-1}, 1, CT_I32, CT_DEVICE_CPU), CT_ERR_SHAPE, "negative size");
    expect_error(ct_rand(NULL, 2, CT_F32, CT_DEVICE_CPU), CT_ERR_NULL_ARGUMENT, "shape");
    expect_error(ct_rand(shape, 1, CT_F32, (ct_device){CT_OPENCL, 9}), CT_ERR_DEVICE, "opencl:9");
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_default_seed_is_pytorchs),
        cmocka_unit_test(philox_matches_the_random123_known_answers),
        cmocka_unit_test(rand_float32_is_the_top_24_bits_of_the_first_philox_word),
        cmocka_unit_test(one_seed_gives_the_same_numbers_and_draws_continue_the_counter),
        cmocka_unit_test(every_device_gives_the_same_numbers_for_one_seed),
        cmocka_unit_test(randn_of_a_million_has_mean_zero_and_variance_one),
        cmocka_unit_test(rand_is_uniform_in_zero_to_one),
        cmocka_unit_test(randint_stays_in_low_to_high_and_covers_it),
        cmocka_unit_test(empty_and_zero_dim_random_tensors_work),
        cmocka_unit_test(bad_dtypes_bounds_and_sizes_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
