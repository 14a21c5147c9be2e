/* Without a CUDA driver, or with CTORCH_CUDA_DRIVER naming a file that is not one, the CUDA
 * backend is compiled in but unavailable, with the reason, and everything that asks for a CUDA
 * device fails with that reason instead of crashing. ctest runs this program three times: as the
 * machine is (skipped where a driver exists), with CTORCH_CUDA_DRIVER=/nonexistent, and with
 * CTORCH_CUDA_DRIVER naming a library that has none of the driver's functions (libm). */
#include <dlfcn.h>
#include <stdio.h>

#include "support/run_command.h"
#include "test_common.h"

/* The reason this run expects, by what CTORCH_CUDA_DRIVER names. */
static const char *expected_reason(void)
{
    const char *driver = getenv("CTORCH_CUDA_DRIVER");
    if (!driver || !driver[0]) return "CUDA driver library not found (libcuda.so.1: ";
    if (strstr(driver, "libm")) return "has no function cuInit";
    return "CUDA driver library not found (/nonexistent: ";
}

/* True where a CUDA driver is used: the machine's, or a file CTORCH_CUDA_DRIVER names other than
 * the two this test points at. */
static bool a_driver_is_used_here(void)
{
    const char *driver = getenv("CTORCH_CUDA_DRIVER");
    if (driver && driver[0]) return !strstr(driver, "/nonexistent") && !strstr(driver, "libm");
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return false;
    dlclose(library);
    return true;
}

static void cuda_is_compiled_in_and_unavailable_with_the_reason(void **state)
{
    (void)state;
#ifndef CTORCH_HAVE_CUDA
    assert_false(ct_backend_is_compiled(CT_CUDA));
    assert_string_equal(ct_backend_unavailable_reason(CT_CUDA), "not compiled in");
    skip();
#endif
    assert_true(ct_backend_is_compiled(CT_CUDA));
    assert_false(ct_is_available(CT_CUDA));
    assert_int_equal(ct_device_count(CT_CUDA), 0);
    const char *reason = ct_backend_unavailable_reason(CT_CUDA);
    if (!strstr(reason, expected_reason()))
        fail_msg("reason '%s' lacks '%s'", reason, expected_reason());
    /* asked twice, the same answer: the driver is opened once */
    assert_string_equal(ct_backend_unavailable_reason(CT_CUDA), reason);
}

static void asking_for_a_cuda_device_fails_with_the_reason(void **state)
{
    (void)state;
#ifndef CTORCH_HAVE_CUDA
    skip();
#endif
    ct_device device = {CT_CPU, 0};
    assert_int_equal(ct_device_parse("cuda:0", &device), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, expected_reason());
    assert_int_equal(ct_device_parse("cuda", &device), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "device 'cuda': the cuda backend has no usable device");

    ct_device cuda0 = {CT_CUDA, 0};
    size_t free_bytes = 0, total_bytes = 0;
    assert_int_equal(ct_mem_get_info(cuda0, &free_bytes, &total_bytes), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, expected_reason());
    int64_t shape[1] = {4};
    assert_null(ct_zeros(shape, 1, CT_F32, cuda0));
    assert_error(CT_ERR_UNAVAILABLE, expected_reason());
    assert_null(ct_stream_create(cuda0));
    assert_error(CT_ERR_UNAVAILABLE, expected_reason());
}

static void moving_a_tensor_to_cuda_fails_with_the_reason(void **state)
{
    (void)state;
#ifndef CTORCH_HAVE_CUDA
    skip();
#endif
    int64_t shape[1] = {3};
    ct_tensor *x = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_non_null(x);
    assert_null(ct_to(x, (ct_device){CT_CUDA, 0}));
    assert_error(CT_ERR_UNAVAILABLE, "device 'cuda:0': the cuda backend has no usable device");
    assert_null(ct_to(x, (ct_device){CT_CUDA, 0}));
    assert_error(CT_ERR_UNAVAILABLE, expected_reason());
    ct_release(x);

    ct_device best = {CT_CUDA, 0};
    assert_int_equal(ct_best_device(&best), CT_OK);
    assert_int_not_equal(best.type, CT_CUDA);
}

/* `ctorch info` prints the backend as compiled in and unavailable, with the reason. */
static void info_shows_cuda_compiled_in_and_why_it_is_unavailable(void **state)
{
    (void)state;
#ifndef CTORCH_HAVE_CUDA
    skip();
#endif
    char command[1024];
    snprintf(command, sizeof command, "'%s' info 2>&1", CTORCH_TOOL_PATH);
    int status;
    char *out = ct_test_run_command(command, &status);
    assert_int_equal(status, 0);
    if (!strstr(out, "cuda    compiled in, unavailable: ")) fail_msg("no CUDA line in:\n%s", out);
    if (!strstr(out, expected_reason())) fail_msg("no '%s' in:\n%s", expected_reason(), out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cuda_is_compiled_in_and_unavailable_with_the_reason),
        cmocka_unit_test(asking_for_a_cuda_device_fails_with_the_reason),
        cmocka_unit_test(moving_a_tensor_to_cuda_fails_with_the_reason),
        cmocka_unit_test(info_shows_cuda_compiled_in_and_why_it_is_unavailable),
    };
    if (ct_backend_is_compiled(CT_CUDA) && a_driver_is_used_here()) {
        printf("a CUDA driver is installed here: these checks are for machines without one\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
