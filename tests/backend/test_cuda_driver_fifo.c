/* CTORCH_CUDA_DRIVER naming a FIFO: dlopen would wait for a writer forever, so the CUDA backend
 * refuses the path and is unavailable with the reason. The variable is set before the backend
 * starts (the driver is opened once per process); the alarm ends the test if it hangs. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_common.h"

static char folder[] = "/tmp/ctorch-cuda-fifo-XXXXXX";
static char fifo[128];

static void a_fifo_as_the_driver_is_refused_without_blocking(void **state)
{
    (void)state;
#ifndef CTORCH_HAVE_CUDA
    skip();
#endif
    alarm(30);
    assert_false(ct_is_available(CT_CUDA));
    const char *reason = ct_backend_unavailable_reason(CT_CUDA);
    char expected[256];
    snprintf(expected, sizeof expected, "CUDA driver library not found (%s is a FIFO (named pipe), not a library "
             "file, from CTORCH_CUDA_DRIVER)", fifo);
    if (!strstr(reason, expected)) fail_msg("reason '%s' lacks '%s'", reason, expected);
    alarm(0);
}

int main(void)
{
    if (!mkdtemp(folder)) return 1;
    snprintf(fifo, sizeof fifo, "%s/libcuda.so.1", folder);
    if (mkfifo(fifo, 0600) != 0 || setenv("CTORCH_CUDA_DRIVER", fifo, 1) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_fifo_as_the_driver_is_refused_without_blocking),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(fifo);
    rmdir(folder);
    return failed;
}
