/* The CUDA backend's disk cache of compiled kernels, without a GPU: where it lives, that what is
 * written reads back, that keys differ with any input, and that a damaged or truncated file, or a
 * FIFO, is ignored (the backend then compiles again and writes it anew). */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_common.h"

#ifdef CTORCH_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernel_cache.h"

static char folder[256];

static int make_folder(void **state)
{
    (void)state;
    snprintf(folder, sizeof folder, "/tmp/ctorch-cuda-cache-XXXXXX");
    if (!mkdtemp(folder)) return -1;
    strcat(folder, "/nested/cuda"); /* made on the first write */
    setenv("CTORCH_CUDA_CACHE_DIR", folder, 1);
    return 0;
}

static void the_folder_follows_the_variables(void **state)
{
    (void)state;
    char buf[512];
    assert_string_equal(ct_cuda_kernel_cache_dir(buf, sizeof buf), folder);
    unsetenv("CTORCH_CUDA_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/somewhere", 1);
    assert_string_equal(ct_cuda_kernel_cache_dir(buf, sizeof buf), "/somewhere/ctorch/cuda");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/someone", 1);
    assert_string_equal(ct_cuda_kernel_cache_dir(buf, sizeof buf), "/home/someone/.cache/ctorch/cuda");
    setenv("CTORCH_CUDA_CACHE_DIR", folder, 1);
}

static void keys_depend_on_every_part(void **state)
{
    (void)state;
    char a[CT_CUDA_CACHE_KEY_SIZE], b[CT_CUDA_CACHE_KEY_SIZE], c[CT_CUDA_CACHE_KEY_SIZE];
    const char *first[] = {"source", "--gpu-architecture=compute_80", "nvrtc 13.0"};
    const char *second[] = {"source", "--gpu-architecture=compute_90", "nvrtc 13.0"};
    const char *shifted[] = {"sourc", "e--gpu-architecture=compute_80", "nvrtc 13.0"};
    ct_cuda_cache_key(first, 3, a);
    ct_cuda_cache_key(second, 3, b);
    ct_cuda_cache_key(shifted, 3, c);
    assert_int_equal(strlen(a), 32);
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, c);
    ct_cuda_cache_key(first, 3, b);
    assert_string_equal(a, b);
}

static void what_is_written_reads_back(void **state)
{
    (void)state;
    const char *ptx = "\n// leading blank line\n.version 9.0\n.target sm_80\n.entry fill_f32(\n";
    assert_null(ct_cuda_cache_read("00000000000000000000000000000001"));
    ct_cuda_cache_write("00000000000000000000000000000001", ptx);
    char *back = ct_cuda_cache_read("00000000000000000000000000000001");
    assert_non_null(back);
    assert_string_equal(back, ptx);
    free(back);
    ct_cuda_cache_discard("00000000000000000000000000000001");
    assert_null(ct_cuda_cache_read("00000000000000000000000000000001"));
}

/* Rewrites the stored file of key through `damage`. */
static void damage_file(const char *key, long keep_bytes, const char *replace_with)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.ptx", folder, key);
    if (keep_bytes >= 0) assert_int_equal(truncate(path, keep_bytes), 0);
    if (replace_with) {
        FILE *file = fopen(path, "r+b");
        assert_non_null(file);
        fseek(file, -3, SEEK_END);
        fputs(replace_with, file);
        fclose(file);
    }
}

static void a_damaged_file_is_ignored(void **state)
{
    (void)state;
    const char *key = "00000000000000000000000000000002";
    const char *ptx = ".version 9.0\n.target sm_80\n.entry fill_f32(\n";
    ct_cuda_cache_write(key, ptx);
    damage_file(key, -1, "XY\n"); /* same length, other bytes */
    assert_null(ct_cuda_cache_read(key));
    ct_cuda_cache_write(key, ptx);
    damage_file(key, 30, NULL); /* cut short */
    assert_null(ct_cuda_cache_read(key));
    damage_file(key, 0, NULL); /* empty */
    assert_null(ct_cuda_cache_read(key));
    ct_cuda_cache_write(key, ptx); /* written anew, it reads again */
    char *back = ct_cuda_cache_read(key);
    assert_non_null(back);
    assert_string_equal(back, ptx);
    free(back);
}

/* A FIFO where a cache file would be is ignored at once: opening it would wait for a writer. */
static void a_fifo_in_the_cache_is_ignored_without_blocking(void **state)
{
    (void)state;
    const char *key = "00000000000000000000000000000004";
    ct_cuda_cache_write("00000000000000000000000000000005", ".version 9.0\n"); /* makes the folder */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.ptx", folder, key);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(30);
    assert_null(ct_cuda_cache_read(key));
    alarm(0);
    unlink(path);
}

static void no_folder_means_no_cache(void **state)
{
    (void)state;
    setenv("CTORCH_CUDA_CACHE_DIR", "", 1);
    ct_cuda_cache_write("00000000000000000000000000000003", ".version 9.0\n");
    assert_null(ct_cuda_cache_read("00000000000000000000000000000003"));
    setenv("CTORCH_CUDA_CACHE_DIR", "/proc/not-a-place-to-write", 1); /* cannot be made: ignored */
    ct_cuda_cache_write("00000000000000000000000000000003", ".version 9.0\n");
    assert_null(ct_cuda_cache_read("00000000000000000000000000000003"));
    /* A name too long to hold: no cache, rather than one in the folder its first bytes name. */
    char longer[1200];
    int n = snprintf(longer, sizeof longer, "%s/", folder);
    memset(longer + n, 'x', sizeof longer - (size_t)n - 1);
    longer[sizeof longer - 1] = '\0';
    setenv("CTORCH_CUDA_CACHE_DIR", longer, 1);
    char buf[900];
    assert_string_equal(ct_cuda_kernel_cache_dir(buf, sizeof buf), "");
    ct_cuda_cache_write("00000000000000000000000000000003", ".version 9.0\n");
    longer[899] = '\0'; /* the folder a cut-short name would have made */
    struct stat info;
    assert_int_not_equal(stat(longer, &info), 0);
    setenv("CTORCH_CUDA_CACHE_DIR", folder, 1);
}

static int remove_folder(void **state)
{
    (void)state;
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%.*s'", (int)(strlen(folder) - strlen("/nested/cuda")), folder);
    return system(command) == 0 ? 0 : -1;
}
#endif

int main(void)
{
#ifdef CTORCH_HAVE_CUDA
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_folder_follows_the_variables),
        cmocka_unit_test(keys_depend_on_every_part),
        cmocka_unit_test(what_is_written_reads_back),
        cmocka_unit_test(a_damaged_file_is_ignored),
        cmocka_unit_test(a_fifo_in_the_cache_is_ignored_without_blocking),
        cmocka_unit_test(no_folder_means_no_cache),
    };
    return cmocka_run_group_tests(tests, make_folder, remove_folder);
#else
    printf("built without the CUDA backend: nothing to check\n");
    return 0;
#endif
}
