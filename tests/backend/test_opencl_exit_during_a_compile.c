/* A program that exits while PoCL still compiles a kernel it queued (and never waited for) ends
 * with status 0: it crashed at times (status 139, or glibc's abort on a corrupted heap), because
 * LLVM's statics made during that compile were destroyed under PoCL's compiling thread before
 * ctorch's exit handler waited for the queues. The first launch of each kernel is now waited for
 * and the handler registered after it. Each run is a child process with an empty kernel cache
 * (POCL_CACHE_DIR), so that the kernels compile; a stream destroyed with work queued is waited for
 * too. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_common.h"

/* The child: a first launch waited for (as a program reads a result), then new kernels queued on
 * a stream and on the default queue, never waited for, and exit. */
static int child(bool destroy_stream)
{
    ct_device device = {CT_OPENCL, 0};
    ct_tensor *a = ct_full((int64_t[]){256}, 1, 1.0, CT_F32, device);
    double value = 0;
    if (ct_item(ct_sum(a, NULL, 0, false), &value) != CT_OK || value != 256) return 3;
    ct_stream *stream = ct_stream_create(device);
    if (!stream || ct_set_stream(stream) != CT_OK) return 4;
    if (!ct_softmax(ct_exp(ct_mul_scalar(a, 2.0)), 0)) return 5;
    if (ct_set_default_stream(device) != CT_OK) return 6;
    if (destroy_stream) ct_stream_destroy(stream);
    if (!ct_sigmoid(a)) return 7;
    return 0; /* exit with the work queued */
}

static void exiting_while_kernels_compile_ends_cleanly(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    /* one run (the compiles take seconds), the stream destroyed with its work queued; the child
     * exits holding its tensors, as such a program does, so LeakSanitizer is not asked about it */
    char cache[] = "/tmp/ctorch_exit_compile_XXXXXX", command[512];
    assert_non_null(mkdtemp(cache));
    snprintf(command, sizeof command, "POCL_CACHE_DIR=%s ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" timeout 300 /proc/%d/exe child destroy; status=$?; "
             "rm -rf %s; exit $status", cache, (int)getpid(), cache);
    int status = system(command);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        fail_msg("the program ended with status %d (139: a crash at exit; 134: an abort; 124: a hang)",
                 WEXITSTATUS(status));
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "child") == 0) return child(strcmp(argv[2], "destroy") == 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exiting_while_kernels_compile_ends_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
