/* The loader trusts nothing: every malformed file (truncated, lengths past the end, bad JSON or
 * UTF-8, unknown dtypes, wrong shapes, offsets outside, overlapping or leaving gaps, duplicate
 * names, non-string metadata, bools that are not 0/1, nesting too deep, \u0000 in a name) fails
 * with CT_ERR_IO and a message naming the file, the tensor and what is wrong; truncating or
 * corrupting a good file never crashes; a FIFO or a device is refused without blocking. */
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors_files.h"
#include "test_common.h"

static char folder[] = "/tmp/ctorch-io-bad-XXXXXX";

static void path_of(char *buf, size_t size, const char *id)
{
    snprintf(buf, size, "%s/%s.safetensors", folder, id);
}

static void load_fails_with_io_error(const char *path, const char *map, const char *expected)
{
    ct_clear_error();
    ct_state_dict *sd = ct_load(path, map);
    if (sd) {
        ct_state_dict_free(sd);
        fail_msg("'%s' loaded; expected an error with '%s'", path, expected);
    }
    if (!strstr(ct_last_error_message(), path))
        fail_msg("message '%s' does not name the file '%s'", ct_last_error_message(), path);
    assert_error(CT_ERR_IO, expected);
}

/* One test per file of safetensors_files.h (the state is its entry). */
static void rejects_the_malformed_file(void **state)
{
    const st_bad_file *bad = *state;
    char path[256];
    path_of(path, sizeof path, bad->id);
    st_bytes bytes = bad->make();
    assert_int_equal(st_write_file(path, bytes), 0);
    free(bytes.data);
    load_fails_with_io_error(path, NULL, bad->expected);
    load_fails_with_io_error(path, "cpu", bad->expected);
    unlink(path);
}

static void missing_files_folders_and_null_paths_are_errors(void **state)
{
    (void)state;
    char path[256];
    path_of(path, sizeof path, "does_not_exist");
    assert_null(ct_load(path, NULL));
    assert_error(CT_ERR_IO, "cannot open");
    assert_null(ct_load(folder, NULL));
    assert_error(CT_ERR_IO, "is a folder, not a regular file");
    assert_null(ct_load(NULL, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "'path'");
}

/* What is not a regular file is refused before it is opened for reading: opening a FIFO would wait
 * for a writer, and a device such as /dev/zero never ends. (The alarm ends the test if it hangs.) */
static void fifos_and_devices_are_refused_without_blocking(void **state)
{
    (void)state;
    char path[256];
    path_of(path, sizeof path, "fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(30);
    assert_null(ct_load(path, NULL));
    if (!strstr(ct_last_error_message(), path)) fail_msg("'%s' lacks the path", ct_last_error_message());
    assert_error(CT_ERR_IO, "is a FIFO (named pipe), not a regular file");
    assert_null(ct_load("/dev/zero", "cpu"));
    assert_error(CT_ERR_IO, "'/dev/zero' is a character device, not a regular file");
    alarm(0);
    unlink(path);
}

/* A map that cannot be right fails before the file is opened (this path does not exist). */
static void malformed_map_locations_are_errors_before_reading(void **state)
{
    (void)state;
    static const struct {
        const char *map, *expected;
    } invalid[] = {
        {"gpu", "map_location 'gpu': device string 'gpu' is not a device"},
        {"", "map_location '': device string '' is not a device"},
        {"cuda:0=cpu,oops", "map_location 'cuda:0=cpu,oops': 'oops' is not a pair from=to"},
        {"=cpu", "'=cpu' is not a pair from=to"},
        {"cuda:0=", "'cuda:0=' is not a pair from=to"},
        {"cuda:0=cpu=opencl:0", "is not a pair from=to"},
        {"cuda:0=cpu,", "'' is not a pair from=to"},
        {"cuda:x=cpu", "device string 'cuda:x' has index 'x'"},
        {"cuda:0=cpu, cuda:0 = cpu", "maps 'cuda:0' twice"},
    };
    for (size_t k = 0; k < sizeof invalid / sizeof invalid[0]; k++) {
        assert_null(ct_load("/nonexistent/model.safetensors", invalid[k].map));
        assert_error(CT_ERR_INVALID_ARGUMENT, invalid[k].expected);
    }
    /* a target that is not on this machine: cuda:0 where there is no CUDA, else one past the last */
    char map[64], expected[128];
    int missing = ct_device_count(CT_CUDA);
    snprintf(map, sizeof map, "opencl:0=cuda:%d", missing);
    snprintf(expected, sizeof expected, "map_location '%s': device 'cuda:%d'", map, missing);
    assert_null(ct_load("/nonexistent/model.safetensors", map));
    assert_true(ct_last_error() == CT_ERR_NOT_COMPILED || ct_last_error() == CT_ERR_UNAVAILABLE ||
                ct_last_error() == CT_ERR_DEVICE);
    if (!strstr(ct_last_error_message(), expected)) fail_msg("message: %s", ct_last_error_message());
    ct_clear_error();
}

static st_bytes good_file(void)
{
    static const float data[6] = {1, 2, 3, 4, 5, 6};
    return st_build("{\"__metadata__\":{\"format\":\"pt\"},\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                    "\"data_offsets\":[0,16]},\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}",
                    data, sizeof data);
}

static void every_truncation_of_a_good_file_is_an_error(void **state)
{
    (void)state;
    char path[256];
    path_of(path, sizeof path, "truncated");
    st_bytes whole = good_file();
    for (size_t size = 0; size < whole.size; size++) {
        st_bytes part = {whole.data, size};
        assert_int_equal(st_write_file(path, part), 0);
        ct_state_dict *sd = ct_load(path, NULL);
        if (sd) fail_msg("the first %zu of %zu bytes loaded", size, whole.size);
        assert_int_equal(ct_last_error(), CT_ERR_IO);
        ct_clear_error();
    }
    assert_int_equal(st_write_file(path, whole), 0);
    ct_state_dict *sd = ct_load(path, NULL);
    assert_non_null(sd);
    assert_int_equal(ct_state_dict_count(sd), 2);
    ct_state_dict_free(sd);
    free(whole.data);
    unlink(path);
}

/* Every byte of the file set to a few values in turn: loads or fails, never crashes. */
static void corrupting_any_byte_loads_or_fails_cleanly(void **state)
{
    (void)state;
    char path[256];
    path_of(path, sizeof path, "corrupted");
    st_bytes whole = good_file();
    static const unsigned char values[] = {0x00, 0x22, 0x2c, 0x5b, 0x7d, 0x80, 0xff, '9', '-'};
    for (size_t at = 0; at < whole.size; at++) {
        unsigned char saved = whole.data[at];
        for (size_t v = 0; v < sizeof values; v++) {
            whole.data[at] = values[v];
            assert_int_equal(st_write_file(path, whole), 0);
            ct_state_dict *sd = ct_load(path, NULL);
            if (sd) {
                for (int64_t i = 0; i < ct_state_dict_count(sd); i++) assert_non_null(ct_state_dict_name_at(sd, i));
                ct_state_dict_free(sd);
            } else if (ct_last_error() != CT_ERR_IO) {
                fail_msg("byte %zu = 0x%02x: %s %s", at, values[v], ct_status_name(ct_last_error()),
                         ct_last_error_message());
            }
            ct_clear_error();
        }
        whole.data[at] = saved;
    }
    free(whole.data);
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
    enum { BAD = sizeof st_bad_files / sizeof st_bad_files[0] };
    struct CMUnitTest tests[BAD + 5];
    for (int k = 0; k < BAD; k++)
        tests[k] = (struct CMUnitTest){st_bad_files[k].id, rejects_the_malformed_file, NULL, NULL,
                                       (void *)&st_bad_files[k]};
    tests[BAD + 0] = (struct CMUnitTest)cmocka_unit_test(missing_files_folders_and_null_paths_are_errors);
    tests[BAD + 1] = (struct CMUnitTest)cmocka_unit_test(every_truncation_of_a_good_file_is_an_error);
    tests[BAD + 2] = (struct CMUnitTest)cmocka_unit_test(corrupting_any_byte_loads_or_fails_cleanly);
    tests[BAD + 3] = (struct CMUnitTest)cmocka_unit_test(malformed_map_locations_are_errors_before_reading);
    tests[BAD + 4] = (struct CMUnitTest)cmocka_unit_test(fifos_and_devices_are_refused_without_blocking);
    return cmocka_run_group_tests(tests, make_folder, remove_folder);
}
