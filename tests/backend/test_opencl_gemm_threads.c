/* Two threads that make their first matrix products at the same moment, each on its own OpenCL
 * device (as DataParallel's workers do), get the right products and do not crash: CLBlast 1.5
 * corrupts its caches when called from threads at once, so ctorch makes one call at a time.
 * CLBlast builds its kernels once per process, so each trial is a fresh run of this program
 * (`--child`); the race hit about 1 run in 20 without the lock (1 in 3 under ASan). */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opencl_test.h"

enum { TRIALS = 8, N = 48 };

static pthread_barrier_t start_together;

typedef struct product {
    ct_device device;
    const ct_tensor *a, *b, *expected; /* on the cpu */
    bool right;
} product;

static void *multiply_on(void *argument)
{
    product *p = argument;
    ct_set_device(p->device);
    ct_scope_push();
    ct_tensor *a = ct_to(p->a, p->device), *b = ct_to(p->b, p->device);
    pthread_barrier_wait(&start_together);
    ct_tensor *c = ct_to(ct_matmul(a, b), CT_DEVICE_CPU);
    ct_tensor *largest = ct_max(ct_abs(ct_sub(c, p->expected)), NULL, 0, false);
    double difference = 1;
    p->right = largest && ct_item(largest, &difference) == CT_OK && difference <= 1e-4;
    if (!p->right)
        fprintf(stderr, "opencl:%d: %s (difference %g)\n", p->device.index, ct_last_error_message(), difference);
    ct_scope_pop();
    return NULL;
}

/* The child: both devices' first products at once; prints "right" when both are. */
static int child(void)
{
    ct_scope_push();
    ct_manual_seed(3);
    int64_t shape[2] = {N, N};
    ct_tensor *a = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU), *b = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *expected = ct_matmul(a, b);
    /* A kernel other than CLBlast's is built here first: the first kernel build lets LLVM (in
     * PoCL) replace the building thread's alternate signal stack, which ASan then fails to free
     * when that thread ends. */
    ct_tensor *on_device = ct_to(a, OPENCL0);
    if (!ct_to(ct_add(on_device, on_device), CT_DEVICE_CPU)) {
        fprintf(stderr, "%s\n", ct_last_error_message());
        return 1;
    }
    product products[2] = {{OPENCL0, a, b, expected, false}, {OPENCL1, a, b, expected, false}};
    pthread_barrier_init(&start_together, NULL, 2);
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, multiply_on, &products[i]);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start_together);
    bool right = products[0].right && products[1].right;
    ct_scope_pop();
    printf("%s\n", right ? "right" : "wrong");
    return right ? 0 : 1;
}

/* Runs this program with --child; returns its output (static) and its exit status. */
static const char *run_child(int *exit_status)
{
    static char self[4096], out[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(length > 0);
    self[length] = '\0';
    char command[8192];
    snprintf(command, sizeof command, "'%s' --child 2>&1", self);
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    size_t used = 0, n;
    while ((n = fread(out + used, 1, sizeof out - used - 1, pipe)) > 0) used += n;
    out[used] = '\0';
    int status = pclose(pipe);
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

static void first_products_of_two_threads_at_once_are_right(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    for (int trial = 0; trial < TRIALS; trial++) {
        int status;
        const char *out = run_child(&status);
        if (status != 0 || strcmp(out, "right\n") != 0)
            fail_msg("trial %d of %d: status %d: %s", trial + 1, TRIALS, status, out);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0) return child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_products_of_two_threads_at_once_are_right),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
