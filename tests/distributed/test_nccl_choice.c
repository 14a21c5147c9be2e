/* Which backend carries CUDA tensors, decided on the machine the test runs on: NCCL where the CUDA
 * backend has a device and the NCCL library opens, else MPI with host staging, with the reason
 * logged. On a machine without a GPU (CI, this repository's development machine) that is MPI.
 * The NCCL library itself opens without a GPU where the toolkit has it. Run under mpirun with 2
 * ranks and with 1; with CTORCH_CUDA_NCCL pointing at a file that does not exist (a ctest of its
 * own), the library must fail to open, naming that file. */
#include <fcntl.h>
#include <unistd.h>

#include "dist_test.h"
#include "distributed/dist_internal.h"

/* Runs ct_dist_backend_name(CT_CUDA) with stderr in a file, and returns what was written. */
static char *backend_name_with_log(const char **name)
{
    char path[] = "/tmp/ctorch_nccl_choice_XXXXXX";
    int file = mkstemp(path);
    assert_true(file >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(file, STDERR_FILENO);
    ct_log_level level = ct_get_log_level();
    ct_set_log_level(CT_LOG_INFO);
    *name = ct_dist_backend_name(CT_CUDA);
    ct_dist_backend_name(CT_CUDA); /* logged once, not at every call */
    ct_set_log_level(level);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    static char text[4096];
    ssize_t n = pread(file, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(file);
    unlink(path);
    return text;
}

static void cuda_tensors_go_through_nccl_only_where_there_is_a_device_and_nccl(void **state)
{
    (void)state;
    const char *name = NULL;
    const char *log = backend_name_with_log(&name);
    assert_non_null(name);
    char reason[1024];
    bool usable = ct_dist_nccl_usable(reason, sizeof reason);
    print_message("ct_dist_backend_name(CT_CUDA) = %s; log: %s", name, log);
    /* scripts/gpu-check: on a GPU machine, NCCL must be what carries CUDA tensors (unless this run
     * points CTORCH_CUDA_NCCL at a file that is not there on purpose). */
    const char *chosen = getenv("CTORCH_CUDA_NCCL");
    if (getenv("CTORCH_TEST_EXPECT_NCCL") && !(chosen && access(chosen, F_OK) != 0)) {
        if (!usable) fail_msg("CTORCH_TEST_EXPECT_NCCL is set, but CUDA tensors go through MPI: %s", reason);
        assert_string_equal(name, "nccl");
    }
    if (!ct_is_available(CT_CUDA)) {
        /* Here: no GPU, so MPI, and why. */
        assert_false(usable);
        assert_string_equal(name, "mpi");
#ifdef CT_TEST_HAVE_NCCL
        char expected[512];
        snprintf(expected, sizeof expected, "the CUDA backend is not available (%s)",
                 ct_backend_unavailable_reason(CT_CUDA));
        assert_string_equal(reason, expected);
#else
        assert_non_null(strstr(reason, "ctorch was built without NCCL"));
#endif
        char line[1200];
        snprintf(line, sizeof line, "ctorch info: ct_dist: CUDA tensors' collectives go through MPI with host "
                 "staging, not NCCL: %s\n", reason);
        assert_string_equal(log, line); /* once */
    } else if (usable) {
        assert_string_equal(name, "nccl");
        assert_string_equal(reason, "");
        assert_non_null(strstr(log, "CUDA tensors' collectives go through NCCL "));
    } else {
        /* A GPU without a usable NCCL: MPI, with a warning that says why. */
        assert_string_equal(name, "mpi");
        assert_non_null(strstr(log, "ctorch warning: ct_dist: CUDA tensors' collectives go through MPI"));
        assert_non_null(strstr(log, reason));
    }
    /* Other devices' tensors go through MPI whatever CUDA has. */
    assert_string_equal(ct_dist_backend_name(CT_CPU), "mpi");
    assert_string_equal(ct_dist_backend_name(CT_OPENCL), "mpi");
}

static void the_nccl_library_opens_without_a_gpu_or_names_the_file_it_could_not_open(void **state)
{
    (void)state;
    int version = -1;
    char reason[1024];
    bool loaded = ct_dist_nccl_library_load(&version, reason, sizeof reason);
    const char *chosen = getenv("CTORCH_CUDA_NCCL");
#ifdef CT_TEST_HAVE_NCCL
    if (chosen && access(chosen, F_OK) != 0) {
        assert_false(loaded);
        assert_int_equal(version, 0);
        char expected[512];
        snprintf(expected, sizeof expected, "cannot open the NCCL library %s: ", chosen);
        assert_memory_equal(reason, expected, strlen(expected));
        return;
    }
    /* The toolkit's NCCL, found through the loader's path or the folder the build found. */
    if (!loaded) fail_msg("NCCL did not open: %s", reason);
    assert_true(version >= 21000);
    assert_string_equal(reason, "");
    print_message("NCCL %d.%d.%d opened\n", version / 10000, version / 100 % 100, version % 100);
#else
    (void)chosen;
    assert_false(loaded);
    assert_non_null(strstr(reason, "ctorch was built without NCCL"));
#endif
}

int main(void)
{
    if (ct_dist_init() != CT_OK) {
        fprintf(stderr, "ct_dist_init: %s\n", ct_last_error_message());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cuda_tensors_go_through_nccl_only_where_there_is_a_device_and_nccl),
        cmocka_unit_test(the_nccl_library_opens_without_a_gpu_or_names_the_file_it_could_not_open),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_dist_finalize();
    return failed;
}
