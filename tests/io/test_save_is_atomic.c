/* ct_save writes a temporary file beside the target, syncs it and renames it over the target: a
 * write that fails half-way (the internal hook) leaves the old checkpoint byte for byte and no
 * temporary behind; paths that cannot be written are errors that name them. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "test_common.h"

static char folder[] = "/tmp/ctorch-io-save-XXXXXX";

/* A state dict of `count` float tensors of 64 elements, each filled with base + its index. */
static ct_state_dict *checkpoint(int count, double base)
{
    ct_state_dict *sd = ct_state_dict_create();
    int64_t shape[2] = {8, 8};
    for (int k = 0; k < count; k++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d.weight", k);
        ct_tensor *t = ct_full(shape, 2, base + k, CT_F32, CT_DEVICE_CPU);
        assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
        ct_release(t);
    }
    return sd;
}

static unsigned char *file_bytes(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size + 1);
    assert_int_equal(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

/* The names in the folder besides . and .., as one comma-separated string. */
static void folder_entries(char *buf, size_t size)
{
    DIR *dir = opendir(folder);
    assert_non_null(dir);
    buf[0] = '\0';
    for (struct dirent *e; (e = readdir(dir));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (buf[0]) strncat(buf, ",", size - strlen(buf) - 1);
        strncat(buf, e->d_name, size - strlen(buf) - 1);
    }
    closedir(dir);
}

static double first_value(const ct_state_dict *sd, const char *name)
{
    ct_tensor *t = ct_state_dict_get(sd, name);
    float values[64];
    assert_int_equal(ct_tensor_to_array(t, values, sizeof values), CT_OK);
    ct_release(t);
    return values[0];
}

static void a_save_replaces_the_file(void **state)
{
    (void)state;
    char path[256], entries[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    ct_state_dict *first = checkpoint(2, 1), *second = checkpoint(3, 10);
    assert_int_equal(ct_save(first, path), CT_OK);
    assert_int_equal(ct_save(second, path), CT_OK);
    ct_state_dict *back = ct_load(path, NULL);
    assert_non_null(back);
    assert_int_equal(ct_state_dict_count(back), 3);
    assert_true(first_value(back, "layer2.weight") == 12);
    folder_entries(entries, sizeof entries);
    assert_string_equal(entries, "model.safetensors");
    ct_state_dict_free(back);
    ct_state_dict_free(first);
    ct_state_dict_free(second);
    unlink(path);
}

static void a_write_failing_half_way_leaves_the_old_checkpoint(void **state)
{
    (void)state;
    char path[256], entries[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    ct_state_dict *old = checkpoint(2, 1), *new = checkpoint(4, 100);
    assert_int_equal(ct_save(old, path), CT_OK);
    size_t old_size, new_size, size;
    unsigned char *old_bytes = file_bytes(path, &old_size);
    assert_int_equal(ct_save(new, path), CT_OK); /* to learn the new file's size */
    free(file_bytes(path, &new_size));
    assert_int_equal(ct_save(old, path), CT_OK);
    const size_t limits[] = {0, 5, 8, 40, new_size / 2, new_size - 1};
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
        ct_io_fail_write_after_for_testing(limits[k]);
        assert_int_equal(ct_save(new, path), CT_ERR_IO);
        ct_io_fail_write_after_for_testing(SIZE_MAX);
        char expected[64];
        snprintf(expected, sizeof expected, "writing failed after %zu bytes", limits[k]);
        if (!strstr(ct_last_error_message(), path)) fail_msg("'%s' does not name the file", ct_last_error_message());
        assert_error(CT_ERR_IO, expected);
        unsigned char *bytes = file_bytes(path, &size);
        assert_int_equal(size, old_size);
        assert_memory_equal(bytes, old_bytes, size);
        free(bytes);
        folder_entries(entries, sizeof entries);
        assert_string_equal(entries, "model.safetensors"); /* no temporary left */
    }
    ct_state_dict *back = ct_load(path, NULL);
    assert_int_equal(ct_state_dict_count(back), 2);
    assert_true(first_value(back, "layer1.weight") == 2);
    ct_state_dict_free(back);
    /* with the hook off again, the new checkpoint goes in whole */
    assert_int_equal(ct_save(new, path), CT_OK);
    free(file_bytes(path, &size));
    assert_int_equal(size, new_size);
    free(old_bytes);
    ct_state_dict_free(old);
    ct_state_dict_free(new);
    unlink(path);
}

static void a_first_save_that_fails_leaves_nothing(void **state)
{
    (void)state;
    char path[256], entries[512];
    snprintf(path, sizeof path, "%s/fresh.safetensors", folder);
    ct_state_dict *sd = checkpoint(1, 0);
    ct_io_fail_write_after_for_testing(100);
    assert_int_equal(ct_save(sd, path), CT_ERR_IO);
    ct_io_fail_write_after_for_testing(SIZE_MAX);
    assert_error(CT_ERR_IO, "writing failed after 100 bytes");
    folder_entries(entries, sizeof entries);
    assert_string_equal(entries, "");
    ct_state_dict_free(sd);
}

static void paths_that_cannot_be_written_are_errors(void **state)
{
    (void)state;
    char path[256], entries[512];
    ct_state_dict *sd = checkpoint(1, 0);
    snprintf(path, sizeof path, "%s/missing/model.safetensors", folder);
    assert_int_equal(ct_save(sd, path), CT_ERR_IO);
    assert_error(CT_ERR_IO, "/missing' does not exist");
    snprintf(path, sizeof path, "%s/", folder);
    assert_int_equal(ct_save(sd, path), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "names a folder");
    snprintf(path, sizeof path, "%s/sub", folder);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(ct_save(sd, path), CT_ERR_IO);
    assert_error(CT_ERR_IO, "cannot replace");
    folder_entries(entries, sizeof entries);
    assert_string_equal(entries, "sub");
    rmdir(path);
    assert_int_equal(ct_save(sd, ""), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the path is empty");
    assert_int_equal(ct_save(NULL, "x"), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'sd'");
    assert_int_equal(ct_save(sd, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'path'");
    ct_state_dict_free(sd);
}

/* A bare file name goes to the working folder; the new file gets the usual mode (umask). */
static void a_relative_path_saves_in_the_working_folder(void **state)
{
    (void)state;
    char previous[512], path[256];
    assert_non_null(getcwd(previous, sizeof previous));
    assert_int_equal(chdir(folder), 0);
    mode_t old_mask = umask(022);
    ct_state_dict *sd = checkpoint(1, 5);
    assert_int_equal(ct_save(sd, "plain.safetensors"), CT_OK);
    umask(old_mask);
    assert_int_equal(chdir(previous), 0);
    snprintf(path, sizeof path, "%s/plain.safetensors", folder);
    struct stat info;
    assert_int_equal(stat(path, &info), 0);
    assert_int_equal(info.st_mode & 0777, 0644);
    ct_state_dict *back = ct_load(path, NULL);
    assert_true(first_value(back, "layer0.weight") == 5);
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
    unlink(path);
}

static int make_folder(void **state)
{
    (void)state;
    return mkdtemp(folder) ? 0 : -1;
}

static int remove_folder(void **state)
{
    (void)state;
    return rmdir(folder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_save_replaces_the_file),
        cmocka_unit_test(a_write_failing_half_way_leaves_the_old_checkpoint),
        cmocka_unit_test(a_first_save_that_fails_leaves_nothing),
        cmocka_unit_test(paths_that_cannot_be_written_are_errors),
        cmocka_unit_test(a_relative_path_saves_in_the_working_folder),
    };
    return cmocka_run_group_tests(tests, make_folder, remove_folder);
}
