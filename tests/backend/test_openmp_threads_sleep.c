/* Between parallel launches, ctorch's OpenMP threads spin briefly (about 50 us) and then sleep, in
 * every program that loads the library, unless the user set how they wait. Long-spinning threads
 * (libgomp's default: about 300000 turns after each parallel region) took the cores from each
 * other on a busy machine, and made library programs and `ctorch bench` about 4x slower there.
 *
 * The library sets GOMP_SPINCOUNT=1000 before libgomp reads its environment
 * (src/startup/before_libraries.c). Shown two ways: this program (linked as the tests link: the
 * shared library, with cmocka and OpenBLAS beside it) spends almost no CPU time while it sleeps
 * after a parallel op; and libgomp itself, asked to print its settings (OMP_DISPLAY_ENV=verbose)
 * in the `ctorch` command (the shared library, as users link it), reports that spin count, and the
 * user's own OMP_WAIT_POLICY still wins. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "support/run_command.h"
#include "test_common.h"

static double process_cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void threads_take_no_cpu_time_while_the_program_sleeps(void **state)
{
    (void)state;
    ct_tensor *x = ct_ones((int64_t[]){1 << 20}, 1, CT_F32, CT_DEVICE_CPU);
    assert_non_null(x);
    double idle = 0;
    for (int round = 0; round < 10; round++) {
        ct_tensor *y = ct_add(x, x); /* a parallel launch */
        assert_non_null(y);
        ct_release(y);
        double start = process_cpu_seconds();
        usleep(20000);
        idle += process_cpu_seconds() - start;
    }
    ct_release(x);
    /* Threads that spin libgomp's default spent about 3 ms in each of these sleeps here; with
     * ctorch's brief spin, about 0.05 ms. */
    if (idle > 5e-3)
        fail_msg("the program used %.1f ms of CPU time in 200 ms of sleep after parallel ops: its "
                 "OpenMP threads spin", idle * 1e3);
}

/* The lines libgomp prints about how it waits when `ctorch version` starts with env. */
static char *libgomp_settings(const char *env)
{
    char command[1024];
    snprintf(command, sizeof command, "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT %s OMP_DISPLAY_ENV=verbose '%s' version 2>&1",
             env, CTORCH_TOOL_PATH);
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s: status %d: %s", command, status, out);
    return out;
}

static void libgomp_in_the_command_spins_briefly(void **state)
{
    (void)state;
    char *out = libgomp_settings("");
    if (!strstr(out, "GOMP_SPINCOUNT = '1000'"))
        fail_msg("libgomp was not started with a spin count of 1000 in `ctorch version`: %s", out);
    free(out);
}

static void the_users_wait_policy_stands(void **state)
{
    (void)state;
    char *out = libgomp_settings("OMP_WAIT_POLICY=active");
    if (!strstr(out, "OMP_WAIT_POLICY = 'ACTIVE'"))
        fail_msg("OMP_WAIT_POLICY=active was not kept: %s", out);
    free(out);
    out = libgomp_settings("GOMP_SPINCOUNT=1000");
    if (!strstr(out, "GOMP_SPINCOUNT = '1000'")) fail_msg("GOMP_SPINCOUNT=1000 was not kept: %s", out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_take_no_cpu_time_while_the_program_sleeps),
        cmocka_unit_test(libgomp_in_the_command_spins_briefly),
        cmocka_unit_test(the_users_wait_policy_stands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
