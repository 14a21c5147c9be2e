/* Kernel programs on OpenCL: built per device on first use and kept; a family that does not
 * build is CT_ERR_BACKEND naming the family, the device and the build log (shown with a broken
 * source put in through the test hook); threads launching on one device do not mix up the
 * arguments of a shared cl_kernel; a program may exit while its work is still queued. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opencl_test.h"

static void a_broken_kernel_reports_family_device_and_build_log(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
#ifdef CTORCH_HAVE_OPENCL
    int64_t shape[1] = {5};
    /* built and cached before the source is replaced: the cache is dropped with it */
    ct_tensor *before = ct_full(shape, 1, 1.0, CT_F32, OPENCL0);
    assert_non_null(before);
    ct_release(before);

    assert_int_equal(ct_opencl_replace_family_source_for_testing(
                         "fill", "CT_KERNEL fill_f32(CT_KERNEL_BUFFERS, const ct_kparams p)\n"
                                 "{ this_is_not_opencl_c = ; }\n"),
                     CT_OK);
    assert_null(ct_full(shape, 1, 1.0, CT_F32, OPENCL0));
    assert_int_equal(ct_last_error(), CT_ERR_BACKEND);
    const char *message = ct_last_error_message();
    if (!strstr(message, "opencl:0") || !strstr(message, "kernel family 'fill' does not build") ||
        !strstr(message, "this_is_not_opencl_c"))
        fail_msg("message lacks the device, the family or the log: %s", message);
    ct_clear_error();
    /* every device builds its own program: opencl:1 fails the same way */
    if (ct_device_count(CT_OPENCL) > 1) {
        assert_null(ct_full(shape, 1, 1.0, CT_F32, OPENCL1));
        assert_error(CT_ERR_BACKEND, "opencl:1");
    }
    /* other families are not affected */
    ct_tensor *cpu = ct_tensor_from_data((float[]){1, 2, 3, 4, 5}, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *moved = ct_to(cpu, OPENCL0);
    ct_tensor *doubled = ct_add(moved, moved);
    assert_non_null(doubled);
    ct_release(doubled);
    ct_release(moved);
    ct_release(cpu);

    /* restored: the embedded source builds again */
    assert_int_equal(ct_opencl_replace_family_source_for_testing("fill", NULL), CT_OK);
    ct_tensor *after = ct_full(shape, 1, 3.0, CT_F32, OPENCL0);
    ct_tensor *expected = ct_full(shape, 1, 3.0, CT_F32, CT_DEVICE_CPU);
    assert_same_values(after, expected, 0, 0, "fill after restoring");
    ct_release(after);
    ct_release(expected);

    assert_int_equal(ct_opencl_replace_family_source_for_testing("nonsense", "x"),
                     CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'nonsense' is not a kernel family");
#endif
}

typedef struct worker {
    int seed;
    bool ok;
} worker;

/* Fills, adds and reads back many small tensors with values of its own. */
static void *launch_many(void *arg)
{
    worker *w = arg;
    w->ok = true;
    int64_t shape[1] = {257};
    for (int round = 0; round < 40 && w->ok; round++) {
        double value = w->seed * 1000 + round;
        ct_tensor *a = ct_full(shape, 1, value, CT_F64, OPENCL0);
        ct_tensor *b = ct_add_scalar(a, 0.5);
        double back[257];
        w->ok = b && ct_tensor_to_array(b, back, sizeof back) == CT_OK;
        for (int i = 0; i < 257 && w->ok; i++) w->ok = back[i] == value + 0.5;
        ct_release(a);
        ct_release(b);
    }
    return NULL;
}

static void threads_launching_on_one_device_keep_their_arguments(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    pthread_t threads[4];
    worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i].seed = i + 1;
        pthread_create(&threads[i], NULL, launch_many, &workers[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_true(workers[i].ok);
    }
}

/* The child: queues a fill and an exp and exits without waiting. Run with an empty PoCL cache,
 * the driver is still compiling the last kernel's work-group function at exit. */
static int exit_with_queued_work(void)
{
    int64_t shape[2] = {300, 301};
    ct_tensor *a = ct_full(shape, 2, 2.0, CT_F32, OPENCL0);
    ct_tensor *b = ct_exp(a);
    int status = a && b ? 0 : 1;
    ct_release(b); /* released without waiting: the work is still queued at exit */
    ct_release(a);
    return status;
}

static void a_process_may_exit_with_work_still_queued(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(length > 0);
    self[length] = '\0';
    for (int run = 0; run < 2; run++) {
        char cache[] = "/tmp/ctorch-pocl-cache-XXXXXX", command[8400];
        assert_non_null(mkdtemp(cache));
        snprintf(command, sizeof command, "POCL_CACHE_DIR='%s' '%s' --exit-with-queued-work; "
                 "status=$?; rm -rf '%s'; exit $status", cache, self, cache);
        int status = system(command);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--exit-with-queued-work") == 0) return exit_with_queued_work();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_broken_kernel_reports_family_device_and_build_log),
        cmocka_unit_test(threads_launching_on_one_device_keep_their_arguments),
        cmocka_unit_test(a_process_may_exit_with_work_still_queued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
