/* The first CUDA run says on stderr that it compiles kernels (NVRTC, on a miss of the PTX cache),
 * and a run that finds them in the cache says nothing: one small op (a fill) in a child process
 * with a fresh CTORCH_CUDA_CACHE_DIR prints the line once, the same op with the same folder does
 * not. Run with --child, this program is that child. */
#include <stdlib.h>
#include <unistd.h>

#include "standin_test.h"
#include "support/run_command.h"

#define NOTICE "ctorch: compiling CUDA kernels for cuda:0 ("

static int child(void)
{
    int64_t shape[1] = {4};
    ct_tensor *t = ct_full(shape, 1, 3.0, CT_F32, CUDA0);
    float values[4] = {0};
    bool right = t && ct_tensor_to_array(t, values, sizeof values) == CT_OK && values[3] == 3.0f;
    if (!right) fprintf(stderr, "the fill failed: %s\n", ct_last_error_message());
    ct_release(t);
    return right ? 0 : 1;
}

/* The child's stderr alone, with the notice asked for and CTORCH_CUDA_CACHE_DIR=cache. */
static char *run_child(const char *cache)
{
    char self[4096], command[8192];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(length > 0);
    self[length] = '\0';
    snprintf(command, sizeof command, "env CTORCH_COMPILE_NOTICE=1 CTORCH_CUDA_CACHE_DIR='%s' '%s' --child "
             "2>&1 >/dev/null", cache, self);
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s: status %d: %s", command, status, out);
    return out;
}

static void the_first_run_says_it_compiles_and_a_cached_one_does_not(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    char folder[] = "/tmp/ctorch_cuda_notice_XXXXXX";
    assert_non_null(mkdtemp(folder));
    char *cold = run_child(folder);
    const char *at = strstr(cold, NOTICE);
    if (!at || strstr(at + 1, NOTICE) || !strstr(cold, folder))
        fail_msg("a cold cache: want the line once, naming %s: '%s'", folder, cold);
    char *warm = run_child(folder);
    if (strstr(warm, "compiling")) fail_msg("a warm cache: want no line: '%s'", warm);
    free(cold);
    free(warm);
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    int status;
    free(ct_test_run_command(command, &status));
    assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0) return child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_first_run_says_it_compiles_and_a_cached_one_does_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
