/* A small product on the CPU runs on the calling thread alone: OpenBLAS's threads, woken for it,
 * cost more than they save (src/backend/cpu/cpu_blas_threads.c). A large product gets them back,
 * the user's own thread count stands, and each count gives the same bits run to run. Shown where
 * OpenBLAS is its pthreads build with more than one thread (the others are left as they are). */
#include <cblas.h>
#include <math.h>

#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "test_common.h"

#define OPENBLAS_PTHREADS 1

static int threads_at_start;

static int setup(void **state)
{
    (void)state;
    threads_at_start = openblas_get_num_threads();
    ct_cpu_engine_set_for_testing("openblas"); /* the products this shows are OpenBLAS's */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    openblas_set_num_threads(threads_at_start);
    ct_cpu_engine_set_for_testing(NULL);
    return 0;
}

static bool adjustable(void)
{
    if (openblas_get_parallel() == OPENBLAS_PTHREADS && threads_at_start > 1) return true;
    print_message("OpenBLAS is not a pthreads build with several threads here (parallel %d, %d threads)\n",
                  openblas_get_parallel(), threads_at_start);
    return false;
}

/* a [m, k] @ b [k, n] on the CPU: a of small integers, b uniform in [0, 1). */
static ct_tensor *product(int64_t m, int64_t n, int64_t k)
{
    ct_manual_seed(7);
    ct_tensor *a = ct_randint(-8, 8, (int64_t[]){m, k}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *b = ct_rand((int64_t[]){k, n}, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(a);
    assert_non_null(b);
    ct_tensor *c = ct_matmul(a, b);
    assert_non_null(c);
    ct_release(a);
    ct_release(b);
    return c;
}

static void small_products_take_one_thread_and_large_ones_all(void **state)
{
    (void)state;
    if (!adjustable()) skip();
    ct_release(product(32, 256, 64)); /* the digits MLP's first layer at batch 32 */
    assert_int_equal(openblas_get_num_threads(), 1);
    ct_release(product(256, 256, 256));
    assert_int_equal(openblas_get_num_threads(), threads_at_start);
    ct_release(product(16, 16, 16));
    assert_int_equal(openblas_get_num_threads(), 1);
}

static void the_users_thread_count_stands(void **state)
{
    (void)state;
    if (!adjustable()) skip();
    ct_release(product(256, 256, 256));
    openblas_set_num_threads(1); /* the user's choice, between two products */
    ct_release(product(256, 256, 256));
    assert_int_equal(openblas_get_num_threads(), 1);
    ct_release(product(8, 8, 8));
    ct_release(product(256, 256, 256));
    assert_int_equal(openblas_get_num_threads(), 1);
}

static void expect_same_bits(const ct_tensor *x, const ct_tensor *y, size_t bytes)
{
    float *a = malloc(bytes), *b = malloc(bytes);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(ct_tensor_to_array(x, a, bytes), CT_OK);
    assert_int_equal(ct_tensor_to_array(y, b, bytes), CT_OK);
    assert_memory_equal(a, b, bytes);
    free(a);
    free(b);
}

/* OpenBLAS may split a long sum over k between its threads on some CPUs (its Zen kernels do),
 * so the thread count may change the last bits, as in PyTorch (docs/design.md says so); what holds
 * is the same bits run to run at one thread count, and agreement within float32 rounding. */
static void each_thread_count_gives_the_same_bits_run_to_run(void **state)
{
    (void)state;
    if (!adjustable()) skip();
    int64_t m = 192, n = 320, k = 4096; /* a long sum over k, and rows and columns to split */
    assert_true(m * n * k >= CT_CPU_GEMM_PARALLEL_MIN_WORK);
    size_t bytes = sizeof(float) * (size_t)(m * n);
    ct_tensor *threaded[2], *alone[2];
    for (int run = 0; run < 2; run++) {
        openblas_set_num_threads(threads_at_start);
        threaded[run] = product(m, n, k);
        assert_int_equal(openblas_get_num_threads(), threads_at_start);
        openblas_set_num_threads(1);
        alone[run] = product(m, n, k);
        assert_int_equal(openblas_get_num_threads(), 1);
    }
    expect_same_bits(threaded[0], threaded[1], bytes);
    expect_same_bits(alone[0], alone[1], bytes);
    float *x = malloc(bytes), *y = malloc(bytes);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(ct_tensor_to_array(threaded[0], x, bytes), CT_OK);
    assert_int_equal(ct_tensor_to_array(alone[0], y, bytes), CT_OK);
    /* terms below 8 in magnitude, sums of a few hundred: two orders of the 4096 additions round
     * apart by far less than 0.05, while a missing or doubled term moves a sum by far more */
    for (int64_t i = 0; i < m * n; i++)
        if (fabsf(x[i] - y[i]) > 0.05f)
            fail_msg("element %lld: %.9g with %d threads, %.9g with one", (long long)i, x[i], threads_at_start, y[i]);
    free(x);
    free(y);
    for (int run = 0; run < 2; run++) ct_release(threaded[run]), ct_release(alone[run]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(small_products_take_one_thread_and_large_ones_all, setup, teardown),
        cmocka_unit_test_setup_teardown(the_users_thread_count_stands, setup, teardown),
        cmocka_unit_test_setup_teardown(each_thread_count_gives_the_same_bits_run_to_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
