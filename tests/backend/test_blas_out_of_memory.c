/* A product on the CPU when OpenBLAS cannot map its work buffers (the address space limited as by
 * `ulimit -v`, or memory exhausted) fails with an out-of-memory error that says so; it used to hang
 * in OpenBLAS's blas_memory_alloc, which retries a failed mapping forever. An alarm turns a hang
 * into a failure (and ctest's TIMEOUT backs it). Once the limit is lifted the same product works,
 * and OpenBLAS maps then what ctorch checked for: CT_OPENBLAS_BUFFER_BYTES. */
#include <cblas.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend/cpu/cpu_blas_workspace.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "test_common.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_TEST_CLANG_ASAN 1
#endif
#endif

/* The process's mapped bytes (the first field of /proc/self/statm, in pages). */
static size_t mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    unsigned long pages = 0;
    assert_int_equal(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Returns once the process's mappings have not changed for 200 ms (or after 5 s). */
static void settle_mappings(void)
{
    size_t last = mapped_bytes();
    for (int unchanged = 0, polls = 0; unchanged < 10 && polls < 250; polls++) {
        usleep(20000);
        size_t now = mapped_bytes();
        unchanged = now == last ? unchanged + 1 : 0;
        last = now;
    }
}

static void hung(int signal)
{
    (void)signal;
    static const char message[] = "ct_matmul hung: OpenBLAS keeps retrying to map its work buffer\n";
    ssize_t ignored = write(2, message, sizeof message - 1);
    (void)ignored;
    _exit(1);
}

static void set_address_space_limit(rlim_t bytes)
{
    struct rlimit limit;
    assert_int_equal(getrlimit(RLIMIT_AS, &limit), 0);
    limit.rlim_cur = bytes;
    assert_int_equal(setrlimit(RLIMIT_AS, &limit), 0);
}

static void a_product_without_room_for_openblas_fails_then_works_with_room(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(CT_TEST_CLANG_ASAN)
    skip(); /* AddressSanitizer's shadow memory takes terabytes of address space */
#endif
    ct_cpu_engine_set_for_testing("openblas"); /* the products this shows are OpenBLAS's */
    /* Large enough to run on every OpenBLAS thread (m*n*k >= 65536 * 4). */
    enum { N = 256 };
    ct_tensor *a = ct_rand((int64_t[]){N, N}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *b = ct_rand((int64_t[]){N, N}, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(a);
    assert_non_null(b);
    struct rlimit before;
    assert_int_equal(getrlimit(RLIMIT_AS, &before), 0);
    /* Room for the product's output, not for one more OpenBLAS buffer. */
    size_t mapped = mapped_bytes();
    set_address_space_limit(mapped + CT_OPENBLAS_BUFFER_BYTES / 2);
    signal(SIGALRM, hung);
    alarm(30);
    ct_tensor *c = ct_matmul(a, b);
    alarm(0);
    set_address_space_limit(before.rlim_cur);
    assert_null(c);
    assert_error(CT_ERR_OUT_OF_MEMORY, "out of memory for OpenBLAS's work buffer: it maps 128 MiB for each thread");

    /* OpenBLAS's threads map their buffers when they start, which on a busy machine may still be
     * under way: wait until the mappings stop changing, and count a late thread's buffer too. */
    settle_mappings();
    mapped = mapped_bytes();
    c = ct_matmul(a, b);
    assert_non_null(c);
    /* The caller's buffer (and perhaps a late thread's), and a little for the output. */
    size_t grown = mapped_bytes() - mapped, buffers = (grown + (4u << 20)) / CT_OPENBLAS_BUFFER_BYTES;
    if (buffers < 1 || buffers > (size_t)openblas_get_num_threads() ||
        grown < buffers * CT_OPENBLAS_BUFFER_BYTES || grown > buffers * CT_OPENBLAS_BUFFER_BYTES + (4u << 20))
        fail_msg("the first product mapped %zu KiB, not a multiple of CT_OPENBLAS_BUFFER_BYTES (%zu MiB) "
                 "for the caller and OpenBLAS's %d threads", grown >> 10, CT_OPENBLAS_BUFFER_BYTES >> 20,
                 openblas_get_num_threads());
    /* The product is right: every element of c against its own sum. */
    static float av[N * N], bv[N * N], cv[N * N];
    assert_int_equal(ct_tensor_to_array(a, av, sizeof av), CT_OK);
    assert_int_equal(ct_tensor_to_array(b, bv, sizeof bv), CT_OK);
    assert_int_equal(ct_tensor_to_array(c, cv, sizeof cv), CT_OK);
    for (int i = 0; i < N; i += 17)
        for (int j = 0; j < N; j += 13) {
            double want = 0;
            for (int k = 0; k < N; k++) want += (double)av[i * N + k] * bv[k * N + j];
            assert_float_equal(cv[i * N + j], want, 1e-4 * want);
        }
    ct_release(c);
    ct_release(a);
    ct_release(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_product_without_room_for_openblas_fails_then_works_with_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
