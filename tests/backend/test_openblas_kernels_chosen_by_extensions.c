/* OpenBLAS runs the kernels chosen from the CPU's extensions: libctorch_startup's constructor sets
 * OPENBLAS_CORETYPE before OpenBLAS starts, where the user has not set it, and leaves the user's
 * alone. A matrix library whose kernels are below the CPU gets one warning naming the fix.
 * Shown in this program started again (--child: it prints what OpenBLAS saw), linked as the tests
 * link, and in the `ctorch` command. Passes on any CPU: the expected kernels come from the CPU. */
#include <cblas.h>
#include <limits.h>
#include <stdio.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "support/run_command.h"
#include "test_common.h"

static char self[PATH_MAX];

/* What this program, started again with env before it, found at its start. */
static char *child_report(const char *env)
{
    char command[PATH_MAX + 256];
    snprintf(command, sizeof command, "env -u OPENBLAS_CORETYPE %s '%s' --child", env, self);
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s: status %d: %s", command, status, out);
    return out;
}

static ct_cpu_matrix_engine openblas_engine(void)
{
    ct_cpu_info info;
    assert_int_equal(ct_cpu_get_info(&info), CT_OK);
    assert_string_equal(info.engines[0].name, "OpenBLAS");
    return info.engines[0];
}

static void openblas_runs_the_kernels_chosen_from_the_extensions(void **state)
{
    (void)state;
    ct_cpu_matrix_engine openblas = openblas_engine();
    char *out = child_report("");
    char want[256];
    if (openblas.best_kernel[0]) /* OpenBLAS names its kernels as it likes: compared without case */
        snprintf(want, sizeof want, "OPENBLAS_CORETYPE=%s kernels=%s\n", openblas.best_kernel,
                 openblas.best_kernel);
    else /* no extension ctorch chooses by (not x86, or older than AVX2): OpenBLAS's own choice */
        snprintf(want, sizeof want, "OPENBLAS_CORETYPE=(unset) kernels=");
    if (strncasecmp(out, want, strlen(want)) != 0) fail_msg("want '%s', the child printed '%s'", want, out);
    free(out);
}

static void a_users_openblas_coretype_stands(void **state)
{
    (void)state;
    char *out = child_report("OPENBLAS_CORETYPE=Prescott"); /* what every x86-64 CPU runs */
    if (strncasecmp(out, "OPENBLAS_CORETYPE=Prescott kernels=", 35) != 0)
        fail_msg("the user's OPENBLAS_CORETYPE=Prescott was not kept: %s", out);
    free(out);
}

/* `ctorch info` with env, its stderr alone when errors, else its stdout alone. */
static char *run_info(const char *env, const char *args, bool errors)
{
    char command[PATH_MAX + 256];
    snprintf(command, sizeof command, "env -u CTORCH_LOG -u OPENBLAS_CORETYPE %s '%s' info %s %s", env,
             CTORCH_TOOL_PATH, args, errors ? "2>&1 >/dev/null" : "2>/dev/null");
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s: status %d: %s", command, status, out);
    return out;
}

static int count(const char *text, const char *part)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, part)) != NULL; p += strlen(part)) n++;
    return n;
}

static void kernels_below_the_cpu_are_warned_of_once(void **state)
{
    (void)state;
    ct_cpu_info info;
    assert_int_equal(ct_cpu_get_info(&info), CT_OK);
    bool avx2_or_more = info.has.avx2 && info.has.fma;
    char *errors = run_info("OPENBLAS_CORETYPE=Prescott", "", true);
    int warnings = count(errors, "ctorch warning: cpu: OpenBLAS");
    if (avx2_or_more) {
        if (warnings != 1 || !strstr(errors, "runs its Prescott kernels where this CPU") ||
            !strstr(errors, "OPENBLAS_CORETYPE=Prescott is set; unset it"))
            fail_msg("want one warning of OpenBLAS's Prescott kernels, with the fix: %s", errors);
    } else if (warnings != 0) {
        fail_msg("a CPU without AVX2 runs Prescott's kernels at its best, yet: %s", errors);
    }
    free(errors);
    char *out = run_info("OPENBLAS_CORETYPE=Prescott", "--json", false);
    cJSON *root = cJSON_Parse(out);
    if (!root) fail_msg("not JSON: %s", out);
    cJSON *openblas = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "cpu"), "engines"), 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(openblas, "kernel")), "Prescott");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(openblas, "set_by_ctorch")));
    assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(openblas, "below_cpu")), avx2_or_more);
    cJSON_Delete(root);
    free(out);
    /* Left to ctorch, OpenBLAS is not below the CPU: no warning of it. */
    errors = run_info("", "", true);
    if (count(errors, "ctorch warning: cpu: OpenBLAS") != 0) fail_msg("a warning with ctorch's choice: %s", errors);
    free(errors);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0) {
        const char *coretype = getenv("OPENBLAS_CORETYPE");
        printf("OPENBLAS_CORETYPE=%s kernels=%s\n", coretype ? coretype : "(unset)",
               openblas_get_corename());
        return 0;
    }
    if (!realpath(argv[0], self)) {
        perror(argv[0]);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(openblas_runs_the_kernels_chosen_from_the_extensions),
        cmocka_unit_test(a_users_openblas_coretype_stands),
        cmocka_unit_test(kernels_below_the_cpu_are_warned_of_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
