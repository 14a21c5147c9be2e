/* The first OpenCL run says on stderr that it compiles kernels, which otherwise looks like a hang;
 * later runs, which find them built, say nothing. One small op (a fill) in a child process with a
 * fresh CTORCH_OPENCL_CACHE_DIR prints the line once; the same op with the same folder does not;
 * CTORCH_COMPILE_NOTICE=0 keeps it quiet, and so does a stderr that is not a terminal unless
 * CTORCH_COMPILE_NOTICE=1 (here: a pipe). Run with --child, this program is that child. */
#include <stdlib.h>
#include <unistd.h>

#include "opencl_test.h"
#include "support/run_command.h"

#define NOTICE "ctorch: compiling OpenCL kernels for opencl:0 ("

static int child(void)
{
    int64_t shape[1] = {4};
    ct_tensor *t = ct_full(shape, 1, 3.0, CT_F32, OPENCL0);
    float values[4] = {0};
    bool right = t && ct_tensor_to_array(t, values, sizeof values) == CT_OK && values[3] == 3.0f;
    if (!right) fprintf(stderr, "the fill failed: %s\n", ct_last_error_message());
    ct_release(t);
    return right ? 0 : 1;
}

/* The child's stderr alone, run with the environment assignments env; fails unless it exits 0. */
static char *run_child(const char *env)
{
    char self[4096], command[8192];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(length > 0);
    self[length] = '\0';
    snprintf(command, sizeof command, "env %s '%s' --child 2>&1 >/dev/null", env, self);
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s: status %d: %s", command, status, out);
    return out;
}

static size_t count(const char *text, const char *part)
{
    size_t n = 0;
    for (const char *at = text; (at = strstr(at, part)); at += strlen(part)) n++;
    return n;
}

static void the_first_run_says_it_compiles_and_later_ones_do_not(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    char folder[] = "/tmp/ctorch_compile_notice_XXXXXX";
    assert_non_null(mkdtemp(folder));
    char env[1024], records[128];
    snprintf(records, sizeof records, "%s/records", folder); /* made by the first run */
    snprintf(env, sizeof env, "CTORCH_COMPILE_NOTICE=1 CTORCH_OPENCL_CACHE_DIR='%s'", records);
    char *cold = run_child(env);
    if (count(cold, NOTICE) != 1) fail_msg("a cold cache: want the line once: '%s'", cold);
    char *warm = run_child(env);
    if (strstr(warm, "compiling")) fail_msg("a warm cache: want no line: '%s'", warm);

    snprintf(env, sizeof env, "CTORCH_COMPILE_NOTICE=0 CTORCH_OPENCL_CACHE_DIR='%s/other'", folder);
    char *quiet = run_child(env);
    if (strstr(quiet, "compiling")) fail_msg("CTORCH_COMPILE_NOTICE=0: want no line: '%s'", quiet);
    snprintf(env, sizeof env, "-u CTORCH_COMPILE_NOTICE CTORCH_OPENCL_CACHE_DIR='%s/piped'", folder);
    char *piped = run_child(env);
    if (strstr(piped, "compiling")) fail_msg("stderr a pipe: want no line: '%s'", piped);
    free(piped);
    free(cold);
    free(warm);
    free(quiet);
    char command[700];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    int status;
    free(ct_test_run_command(command, &status));
    assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0) return child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_first_run_says_it_compiles_and_later_ones_do_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
