/* On the stand-in CUDA devices, the numbers whose bits ctorch promises to be the same on every
 * device: the random generators for one seed (uniform, normal, integers; float32 and float64),
 * and float-to-integer conversions of values an integer cannot hold (saturated, NaN to 0). */
#include <math.h>

#include "standin_test.h"

static void expect_same_bytes(const ct_tensor *cpu, const ct_tensor *cuda, const char *what)
{
    size_t bytes = (size_t)ct_numel(cpu) * ct_dtype_size(ct_tensor_dtype(cpu));
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    assert_int_equal(ct_tensor_to_array(cpu, a, bytes), CT_OK);
    assert_int_equal(ct_tensor_to_array(cuda, b, bytes), CT_OK);
    size_t size = ct_dtype_size(ct_tensor_dtype(cpu));
    for (size_t i = 0; i < bytes / size; i++)
        if (memcmp(a + i * size, b + i * size, size) != 0)
            fail_msg("%s: element %zu differs between the cpu and %s", what, i,
                     ct_device_equal(ct_tensor_device(cuda), CUDA0) ? "cuda:0" : "cuda:1");
    free(a), free(b);
}

static void one_seed_gives_the_same_bits_as_the_cpu(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(2);
    const int64_t shape[2] = {41, 23};
    const char *names[5] = {"rand float32", "rand float64", "randn float32", "randn float64", "randint int64"};
    for (int d = 0; d < 2; d++) {
        for (int kind = 0; kind < 5; kind++) {
            ct_tensor *on[2];
            for (int k = 0; k < 2; k++) {
                ct_manual_seed(4242);
                ct_device where = k == 0 ? CT_DEVICE_CPU : (ct_device){CT_CUDA, d};
                switch (kind) {
                case 0: on[k] = ct_rand(shape, 2, CT_F32, where); break;
                case 1: on[k] = ct_rand(shape, 2, CT_F64, where); break;
                case 2: on[k] = ct_randn(shape, 2, CT_F32, where); break;
                case 3: on[k] = ct_randn(shape, 2, CT_F64, where); break;
                default: on[k] = ct_randint(-(1LL << 40), 1LL << 40, shape, 2, CT_I64, where); break;
                }
                assert_non_null(on[k]);
            }
            expect_same_bytes(on[0], on[1], names[kind]);
            ct_release(on[0]), ct_release(on[1]);
        }
    }
}

static void float_to_integer_conversions_give_the_cpus_bits(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    const double values[10] = {1e20, -1e20, NAN, INFINITY, -INFINITY, 3.9, -3.9, 2147483904.0, 300.7, -0.9};
    ct_tensor *cpu = ct_tensor_from_data(values, CT_F64, (const int64_t[]){10}, 1, CT_DEVICE_CPU);
    ct_tensor *cuda = ct_to(cpu, CUDA0);
    const ct_dtype targets[3] = {CT_I64, CT_I32, CT_U8};
    for (int k = 0; k < 3; k++) {
        for (int source = 0; source < 2; source++) {
            ct_dtype from = source == 0 ? CT_F64 : CT_F32;
            ct_tensor *cpu_from = ct_to_dtype(cpu, from), *cuda_from = ct_to_dtype(cuda, from);
            ct_tensor *a = ct_to_dtype(cpu_from, targets[k]), *b = ct_to_dtype(cuda_from, targets[k]);
            assert_non_null(a);
            assert_non_null(b);
            expect_same_bytes(a, b, ct_dtype_name(targets[k]));
            ct_release(a), ct_release(b), ct_release(cpu_from), ct_release(cuda_from);
        }
    }
    int64_t saturated[10];
    ct_tensor *as_i64 = ct_to_dtype(cuda, CT_I64);
    assert_int_equal(ct_tensor_to_array(as_i64, saturated, sizeof saturated), CT_OK);
    assert_true(saturated[0] == INT64_MAX && saturated[1] == INT64_MIN && saturated[2] == 0);
    ct_release(as_i64), ct_release(cuda), ct_release(cpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_seed_gives_the_same_bits_as_the_cpu),
        cmocka_unit_test(float_to_integer_conversions_give_the_cpus_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
