/* Bad CSV input: each problem is an error that names the file, the line and (for a field) the
 * column, counted from 1, and nothing is returned. */
#include <stdio.h>
#include <sys/stat.h>

#include "data_test.h"

static int setup(void **state) { (void)state; data_test_setup(); return 0; }
static int teardown(void **state) { (void)state; data_test_cleanup(); return 0; }

/* Loading `text` (as file `name`) fails with status and a message holding `part` and the path. */
static void assert_load_fails(const char *name, const char *text, const ct_csv_options *options,
                              ct_status status, const char *part)
{
    char path[600];
    snprintf(path, sizeof path, "%s", data_test_write(name, text));
    ct_clear_error();
    assert_null(ct_csv_dataset_load(path, options));
    if (!strstr(ct_last_error_message(), path))
        fail_msg("message '%s' lacks the path '%s'", ct_last_error_message(), path);
    assert_error(status, part);
}

static void a_missing_file_is_an_io_error_naming_it(void **state)
{
    (void)state;
    const char *path = data_test_path("no-such-file.csv");
    assert_null(ct_csv_dataset_load(path, NULL));
    if (!strstr(ct_last_error_message(), path)) fail_msg("'%s' lacks the path", ct_last_error_message());
    assert_error(CT_ERR_IO, "No such file or directory");
    assert_null(ct_csv_dataset_load(data_test_folder, NULL));
    assert_error(CT_ERR_IO, "is a folder, not a regular file");
    assert_null(ct_csv_dataset_load(NULL, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "'path'");
}

/* A FIFO would block the open until a writer came, and /dev/zero never ends: both are refused
 * before they are read. (The alarm ends the test if it hangs.) */
static void fifos_and_devices_are_refused_without_blocking(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s", data_test_path("fifo.csv"));
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(30);
    assert_null(ct_csv_dataset_load(path, NULL));
    if (!strstr(ct_last_error_message(), path)) fail_msg("'%s' lacks the path", ct_last_error_message());
    assert_error(CT_ERR_IO, "is a FIFO (named pipe), not a regular file");
    assert_null(ct_csv_dataset_load("/dev/zero", NULL));
    assert_error(CT_ERR_IO, "'/dev/zero' is a character device, not a regular file");
    alarm(0);
}

/* Loading length bytes of text fails with a message holding part. */
static void assert_bytes_fail(const char *name, const char *text, size_t length, ct_status status,
                              const char *part)
{
    char path[600];
    snprintf(path, sizeof path, "%s", data_test_write_bytes(name, text, length));
    ct_clear_error();
    ct_dataset *ds = ct_csv_dataset_load(path, NULL);
    if (ds) {
        int64_t rows = ct_dataset_size(ds);
        ct_dataset_free(ds);
        fail_msg("%s loaded (%lld rows); expected an error with '%s'", name, (long long)rows, part);
    }
    if (!strstr(ct_last_error_message(), path))
        fail_msg("message '%s' lacks the path '%s'", ct_last_error_message(), path);
    assert_error(status, part);
}

#define BYTES(text) text, sizeof text - 1

/* A NUL byte ends a C string: read line by line with string functions, a row holding one looked
 * short or blank and was dropped. Anywhere in the file it is an error naming the line and column. */
static void nul_bytes_are_refused_where_they_are(void **state)
{
    (void)state;
    assert_bytes_fail("nul-in-row.csv", BYTES("1,2,0\n3,4\0,1\n5,6,0\n"), CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 2: a NUL byte (\\x00, byte 4 of the line)");
    assert_bytes_fail("nul-first.csv", BYTES("\0" "1,2,0\n"), CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 1: a NUL byte");
    assert_bytes_fail("nul-block.csv.gz", BYTES("1,2,0\n3,4,1\n\0\0\0\0\0\0\0\0\n5,6,0\n"),
                      CT_ERR_INVALID_ARGUMENT, "line 3, column 1: a NUL byte");
    assert_bytes_fail("nul-last.csv", BYTES("1,2,0\n3,4,1\n\0"), CT_ERR_INVALID_ARGUMENT,
                      "line 3, column 1: a NUL byte");
    assert_bytes_fail("nul-label.csv", BYTES("1,2,0\r\n3,4,1\0\r\n"), CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 3: a NUL byte");
}

/* Bytes of a binary file are escaped in messages, so that none can move the terminal's cursor. */
static void control_bytes_are_escaped_in_messages(void **state)
{
    (void)state;
    assert_bytes_fail("control.csv", BYTES("1,2,0\n3,a\x01\x1b[2Jb,1\n"), CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 2: 'a\\x01\\x1b[2Jb' is not a number");
    assert_bytes_fail("delete.csv", BYTES("\x7f,2,0\n"), CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 1: '\\x7f' is not a number");
    /* a tab alone is still an empty field */
    assert_bytes_fail("tab.csv", BYTES("1,\t,0\n"), CT_ERR_INVALID_ARGUMENT, "line 1, column 2: the field is empty");
}

static void rows_of_different_lengths_are_refused(void **state)
{
    (void)state;
    assert_load_fails("ragged.csv", "1,2,0\n3,4,1\n5,1\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 3: 2 columns, but the first row (line 1) has 3");
    assert_load_fails("ragged-long.csv.gz", "\n1,2,0\n3,4,5,1\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 3: 4 columns, but the first row (line 2) has 3");
    assert_load_fails("trailing-comma.csv", "1,2,0\n3,4,1,\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 2: 4 columns");
}

static void fields_that_are_not_numbers_are_refused(void **state)
{
    (void)state;
    assert_load_fails("word.csv", "1,2,0\n3,abc,1\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 2: 'abc' is not a number");
    assert_load_fails("suffix.csv.gz", "1,2,0\n3,4,1\n5,6x,1\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 3, column 2: '6x' is not a number");
    assert_load_fails("empty-field.csv", "1,,0\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 2: the field is empty");
    assert_load_fails("nan.csv", "nan,2,0\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 1: 'nan' is not a finite number");
    assert_load_fails("inf.csv", "1,2,0\n-inf,2,0\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 1: '-inf' is not a finite number");
    assert_load_fails("too-big.csv", "1e39,2,0\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 1: '1e39' (scaled: 1e+39) is out of float32's range");
    assert_load_fails("semicolons.csv", "1;2;0\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1: one column; a row needs at least one feature and a label");
    /* a long field is shortened in the message */
    char text[200] = "1,";
    memset(text + 2, 'z', 100);
    strcpy(text + 102, ",0\n");
    assert_load_fails("long-field.csv", text, NULL, CT_ERR_INVALID_ARGUMENT, "zzz...' is not a number");
}

static void labels_must_be_non_negative_integers(void **state)
{
    (void)state;
    assert_load_fails("fraction.csv", "1,2,0\n3,4,1.5\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 3: the label '1.5' is not a non-negative integer");
    assert_load_fails("negative.csv.gz", "1,2,-1\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 3: the label '-1' is not a non-negative integer");
    assert_load_fails("huge.csv", "1,2,3e9\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 3: the label '3e9' is larger than 2147483647");
    assert_load_fails("word-label.csv", "1,2,cat\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 3: 'cat' is not a number");
    ct_csv_options options = ct_csv_options_default();
    options.label_column = 0;
    assert_load_fails("first-column.csv", "0,2,3\n0.5,2,3\n", &options, CT_ERR_INVALID_ARGUMENT,
                      "line 2, column 1: the label '0.5'");
    /* a header that is not skipped is a row like any other */
    assert_load_fails("header-not-skipped.csv", "a,b,label\n1,2,0\n", NULL, CT_ERR_INVALID_ARGUMENT,
                      "line 1, column 1: 'a' is not a number");
}

static void a_file_without_data_rows_is_refused(void **state)
{
    (void)state;
    assert_load_fails("empty.csv", "", NULL, CT_ERR_INVALID_ARGUMENT, "no data rows (the file is empty)");
    assert_load_fails("empty.csv.gz", "", NULL, CT_ERR_INVALID_ARGUMENT, "no data rows (the file is empty)");
    assert_load_fails("blank.csv", "\n  \n\r\n", NULL, CT_ERR_INVALID_ARGUMENT, "no data rows (only blank lines)");
    ct_csv_options options = ct_csv_options_default();
    options.has_header = true;
    assert_load_fails("header-only.csv", "a,b,label\n\n", &options, CT_ERR_INVALID_ARGUMENT,
                      "no data rows (only a header)");
}

static void bad_options_are_refused(void **state)
{
    (void)state;
    ct_csv_options options = ct_csv_options_default();
    options.label_column = 3;
    assert_load_fails("three.csv", "1,2,0\n", &options, CT_ERR_INDEX,
                      "line 1: label_column 3 is out of range for 3 columns (use 0 to 2, or -1 to -3");
    options.label_column = -4;
    assert_load_fails("three.csv", "1,2,0\n", &options, CT_ERR_INDEX, "label_column -4 is out of range");
    options = ct_csv_options_default();
    options.feature_scale = 1.0 / 0.0;
    assert_null(ct_csv_dataset_load(data_test_path("three.csv"), &options));
    assert_error(CT_ERR_INVALID_ARGUMENT, "feature_scale is inf; it must be a finite number");
}

static void a_damaged_gzip_file_is_an_io_error(void **state)
{
    (void)state;
    /* a compressed file cut short: zlib finds the end of its data missing */
    enum { ROWS = 2000 };
    char *text = malloc(ROWS * 16), *p = text;
    for (int r = 0; r < ROWS; r++) p += sprintf(p, "%d,%d,%d\n", r, r * 7 % 13, r % 10);
    char path[600];
    snprintf(path, sizeof path, "%s", data_test_write("cut.csv.gz", text));
    free(text);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
    assert_null(ct_csv_dataset_load(path, NULL));
    if (!strstr(ct_last_error_message(), path)) fail_msg("'%s' lacks the path", ct_last_error_message());
    assert_error(CT_ERR_IO, "cannot read");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_missing_file_is_an_io_error_naming_it),
        cmocka_unit_test(fifos_and_devices_are_refused_without_blocking),
        cmocka_unit_test(nul_bytes_are_refused_where_they_are),
        cmocka_unit_test(control_bytes_are_escaped_in_messages),
        cmocka_unit_test(rows_of_different_lengths_are_refused),
        cmocka_unit_test(fields_that_are_not_numbers_are_refused),
        cmocka_unit_test(labels_must_be_non_negative_integers),
        cmocka_unit_test(a_file_without_data_rows_is_refused),
        cmocka_unit_test(bad_options_are_refused),
        cmocka_unit_test(a_damaged_gzip_file_is_an_io_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
