/* Reading datasets from CSV files: the shipped digits set, plain and gzip files, the options
 * (label column, header, scale), the layouts real files have (CRLF, blank lines, no final
 * newline, long lines), datasets over tensors, and finding the shipped file. */
#include <stdio.h>

#include "data_test.h"

static int setup(void **state) { (void)state; data_test_setup(); return 0; }
static int teardown(void **state) { (void)state; data_test_cleanup(); return 0; }

static void the_shipped_digits_file_has_1797_samples_of_64_features_and_10_classes(void **state)
{
    (void)state;
    ct_dataset *ds = ct_csv_dataset_load(CTORCH_DIGITS_PATH, NULL);
    assert_non_null(ds);
    assert_int_equal(ct_dataset_size(ds), 1797);
    assert_int_equal(ct_dataset_num_features(ds), 64);
    assert_int_equal(ct_dataset_num_classes(ds), 10);
    ct_tensor *x = ct_dataset_features(ds), *y = ct_dataset_labels(ds);
    assert_int_equal(ct_tensor_dtype(x), CT_F32);
    assert_int_equal(ct_tensor_dtype(y), CT_I64);
    assert_true(ct_device_equal(ct_tensor_device(x), CT_DEVICE_CPU));
    assert_int_equal(ct_tensor_size(x, 0), 1797);
    assert_int_equal(ct_tensor_size(x, 1), 64);
    assert_int_equal(ct_tensor_size(y, 0), 1797);
    float *features = floats_of(x);
    int64_t *labels = int64s_of(y);
    /* the first rows as the file has them */
    const float row0[8] = {0, 0, 5, 13, 9, 1, 0, 0};
    for (int i = 0; i < 8; i++) assert_true(features[i] == row0[i]);
    assert_true(features[63] == 0);
    assert_int_equal(labels[0], 0);
    const float row1[6] = {0, 0, 0, 12, 13, 5};
    for (int i = 0; i < 6; i++) assert_true(features[64 + i] == row1[i]);
    assert_int_equal(labels[1], 1);
    assert_int_equal(labels[2], 2);
    /* every value is a count 0..16, every label a digit, and each digit appears */
    int seen[10] = {0};
    for (int64_t i = 0; i < 1797 * 64; i++) assert_true(features[i] >= 0 && features[i] <= 16);
    for (int64_t i = 0; i < 1797; i++) {
        assert_true(labels[i] >= 0 && labels[i] <= 9);
        seen[labels[i]]++;
    }
    for (int d = 0; d < 10; d++) assert_true(seen[d] >= 170);
    free(features);
    free(labels);
    ct_release(x);
    ct_release(y);
    ct_dataset_free(ds);
}

static void feature_scale_multiplies_the_features_and_leaves_the_labels(void **state)
{
    (void)state;
    ct_csv_options options = ct_csv_options_default();
    options.feature_scale = 1.0 / 16;
    ct_dataset *ds = ct_csv_dataset_load(CTORCH_DIGITS_PATH, &options);
    assert_non_null(ds);
    ct_tensor *x = ct_dataset_features(ds), *y = ct_dataset_labels(ds);
    float *features = floats_of(x);
    int64_t *labels = int64s_of(y);
    assert_true(features[2] == 5.0f / 16);
    assert_true(features[3] == 13.0f / 16);
    for (int64_t i = 0; i < 1797 * 64; i++) assert_true(features[i] >= 0 && features[i] <= 1);
    assert_int_equal(labels[1], 1);
    assert_int_equal(ct_dataset_num_classes(ds), 10);
    free(features);
    free(labels);
    ct_release(x);
    ct_release(y);
    ct_dataset_free(ds);
}

/* The contents every layout below must read as. */
static void assert_small_dataset(ct_dataset *ds)
{
    assert_non_null(ds);
    assert_int_equal(ct_dataset_size(ds), 3);
    assert_int_equal(ct_dataset_num_features(ds), 2);
    assert_int_equal(ct_dataset_num_classes(ds), 5);
    ct_tensor *x = ct_dataset_features(ds), *y = ct_dataset_labels(ds);
    float *features = floats_of(x);
    int64_t *labels = int64s_of(y);
    const float expected_x[6] = {1.5f, -2, 0.25f, 1e3f, 0, 7};
    const int64_t expected_y[3] = {0, 4, 2};
    for (int i = 0; i < 6; i++) assert_true(features[i] == expected_x[i]);
    for (int i = 0; i < 3; i++) assert_int_equal(labels[i], expected_y[i]);
    free(features);
    free(labels);
    ct_release(x);
    ct_release(y);
    ct_dataset_free(ds);
}

static const char SMALL[] = "1.5,-2,0\n0.25,1e3,4\n0,7,2\n";

static void plain_and_gzip_files_read_the_same(void **state)
{
    (void)state;
    assert_small_dataset(ct_csv_dataset_load(data_test_write("small.csv", SMALL), NULL));
    assert_small_dataset(ct_csv_dataset_load(data_test_write("small.csv.gz", SMALL), NULL));
    /* zlib reads an uncompressed file under a .gz name as it is, and a gzip file under any name */
    assert_small_dataset(ct_csv_dataset_load(data_test_write("plain.gz", SMALL), NULL));
    char gz[600], renamed[600];
    snprintf(gz, sizeof gz, "%s", data_test_write("compressed.csv.gz", SMALL));
    snprintf(renamed, sizeof renamed, "%s", data_test_path("compressed-without-suffix"));
    assert_int_equal(rename(gz, renamed), 0);
    assert_small_dataset(ct_csv_dataset_load(renamed, NULL));
}

static void crlf_blank_lines_spaces_and_no_final_newline_are_accepted(void **state)
{
    (void)state;
    assert_small_dataset(ct_csv_dataset_load(
        data_test_write("crlf.csv", "1.5,-2,0\r\n0.25,1e3,4\r\n0,7,2\r\n"), NULL));
    assert_small_dataset(ct_csv_dataset_load(
        data_test_write("blank.csv", "\n1.5,-2,0\n\n  \n0.25,1e3,4\n0,7,2\n\n\n"), NULL));
    assert_small_dataset(ct_csv_dataset_load(
        data_test_write("spaces.csv", " 1.5 , -2,0\n0.25,\t1e3 ,4\n0,7, 2 \n"), NULL));
    assert_small_dataset(ct_csv_dataset_load(data_test_write("no-newline.csv", "1.5,-2,0\n0.25,1e3,4\n0,7,2"), NULL));
    assert_small_dataset(ct_csv_dataset_load(data_test_write("labels-as-floats.csv", "1.5,-2,0.0\n0.25,1e3,4.\n0,7,2e0\n"), NULL));
}

static void the_label_column_and_a_header_are_options(void **state)
{
    (void)state;
    ct_csv_options options = ct_csv_options_default();
    options.label_column = 0;
    assert_small_dataset(ct_csv_dataset_load(data_test_write("first.csv", "0,1.5,-2\n4,0.25,1e3\n2,0,7\n"), &options));
    options.label_column = 1;
    assert_small_dataset(ct_csv_dataset_load(data_test_write("middle.csv", "1.5,0,-2\n0.25,4,1e3\n0,2,7\n"), &options));
    options.label_column = -2; /* counted from the end */
    assert_small_dataset(ct_csv_dataset_load(data_test_path("middle.csv"), &options));
    options = ct_csv_options_default();
    options.has_header = true;
    assert_small_dataset(ct_csv_dataset_load(data_test_write("header.csv", "a,b,label\n1.5,-2,0\n0.25,1e3,4\n0,7,2\n"), &options));
    assert_small_dataset(ct_csv_dataset_load(data_test_write("header-after-blank.csv.gz", "\nx,y,z\n1.5,-2,0\n0.25,1e3,4\n0,7,2\n"), &options));
}

static void lines_longer_than_the_read_buffer_are_read_whole(void **state)
{
    (void)state;
    /* 3000 features of "0.125," each: 18 kB per line, several reads of the line buffer */
    enum { F = 3000, N = 4 };
    size_t size = (size_t)N * (F * 6 + 8) + 1;
    char *text = malloc(size), *p = text;
    for (int r = 0; r < N; r++) {
        for (int f = 0; f < F; f++) p += sprintf(p, "%s,", f == F - 1 ? "-8" : "0.125");
        p += sprintf(p, "%d\n", r);
    }
    ct_dataset *ds = ct_csv_dataset_load(data_test_write("wide.csv.gz", text), NULL);
    free(text);
    assert_non_null(ds);
    assert_int_equal(ct_dataset_size(ds), N);
    assert_int_equal(ct_dataset_num_features(ds), F);
    ct_tensor *x = ct_dataset_features(ds), *y = ct_dataset_labels(ds);
    float *features = floats_of(x);
    int64_t *labels = int64s_of(y);
    for (int r = 0; r < N; r++) {
        assert_int_equal(labels[r], r);
        assert_true(features[(size_t)r * F] == 0.125f);
        assert_true(features[(size_t)r * F + F - 1] == -8.0f);
    }
    free(features);
    free(labels);
    ct_release(x);
    ct_release(y);
    ct_dataset_free(ds);
}

static void a_dataset_over_tensors_keeps_its_own_references(void **state)
{
    (void)state;
    float x[6] = {1.5f, -2, 0.25f, 1e3f, 0, 7};
    int64_t y[3] = {0, 4, 2};
    int64_t xshape[2] = {3, 2}, yshape[1] = {3};
    ct_tensor *features = ct_tensor_from_data(x, CT_F32, xshape, 2, CT_DEVICE_CPU);
    ct_tensor *labels = ct_tensor_from_data(y, CT_I64, yshape, 1, CT_DEVICE_CPU);
    ct_dataset *ds = ct_dataset_from_tensors(features, labels);
    ct_release(features);
    ct_release(labels);
    assert_small_dataset(ds);
    /* a strided view is taken as a copy in row-major order */
    float xt[6] = {1.5f, 0.25f, 0, -2, 1e3f, 7};
    int64_t tshape[2] = {2, 3};
    ct_tensor *transposed_source = ct_tensor_from_data(xt, CT_F32, tshape, 2, CT_DEVICE_CPU);
    ct_tensor *view = ct_transpose(transposed_source, 0, 1);
    labels = ct_tensor_from_data(y, CT_I64, yshape, 1, CT_DEVICE_CPU);
    assert_small_dataset(ct_dataset_from_tensors(view, labels));
    /* inside a scope, the accessors' results belong to the scope */
    ds = ct_dataset_from_tensors(view, labels);
    ct_scope_push();
    assert_non_null(ct_dataset_features(ds));
    assert_non_null(ct_dataset_labels(ds));
    assert_int_equal(ct_scope_pop(), CT_OK);
    ct_dataset_free(ds);
    ct_release(view);
    ct_release(labels);
    ct_release(transposed_source);
    ct_dataset_free(NULL);
    assert_int_equal(ct_dataset_size(NULL), -1);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_dataset_size: argument 'ds' is NULL");
    assert_int_equal(ct_dataset_num_features(NULL), -1);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_dataset_num_features");
    assert_int_equal(ct_dataset_num_classes(NULL), -1);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_dataset_num_classes");
}

static void a_dataset_over_wrong_tensors_is_refused(void **state)
{
    (void)state;
    int64_t xshape[2] = {3, 2}, yshape[1] = {3}, short_shape[1] = {2};
    ct_tensor *x = ct_zeros(xshape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_zeros(yshape, 1, CT_I64, CT_DEVICE_CPU);
    ct_tensor *x64 = ct_zeros(xshape, 2, CT_F64, CT_DEVICE_CPU);
    ct_tensor *y_short = ct_zeros(short_shape, 1, CT_I64, CT_DEVICE_CPU);
    ct_tensor *y_negative = ct_full(yshape, 1, -1, CT_I64, CT_DEVICE_CPU);
    assert_null(ct_dataset_from_tensors(NULL, y));
    assert_error(CT_ERR_NULL_ARGUMENT, "features");
    assert_null(ct_dataset_from_tensors(x, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "labels");
    assert_null(ct_dataset_from_tensors(x, y_short));
    assert_error(CT_ERR_SHAPE, "features have shape [3, 2] and labels [2]");
    assert_null(ct_dataset_from_tensors(y, y));
    assert_error(CT_ERR_SHAPE, "[N, F] and [N]");
    assert_null(ct_dataset_from_tensors(x64, y));
    assert_error(CT_ERR_DTYPE, "features are float64");
    assert_null(ct_dataset_from_tensors(x, y_negative));
    assert_error(CT_ERR_INVALID_ARGUMENT, "label -1 (of sample 0) is negative");
    assert_null(ct_dataset_features(NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_dataset_features");
    assert_null(ct_dataset_labels(NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_dataset_labels");
    if (ct_device_count(CT_OPENCL) > 0) {
        ct_tensor *away = ct_to(x, (ct_device){CT_OPENCL, 0});
        assert_null(ct_dataset_from_tensors(away, y));
        assert_error(CT_ERR_DEVICE, "the features are on opencl:0");
        ct_release(away);
    }
    ct_release(x);
    ct_release(y);
    ct_release(x64);
    ct_release(y_short);
    ct_release(y_negative);
}

static void the_default_path_is_the_shipped_file_unless_ctorch_data_says_otherwise(void **state)
{
    (void)state;
    unsetenv("CTORCH_DATA");
    const char *path = ct_default_dataset_path();
    assert_non_null(path);
    assert_string_equal(path, CTORCH_DIGITS_PATH);
    /* CTORCH_DATA names the file itself ... */
    char mine[600];
    snprintf(mine, sizeof mine, "%s", data_test_write("digits.csv.gz", SMALL));
    setenv("CTORCH_DATA", mine, 1);
    assert_string_equal(ct_default_dataset_path(), mine);
    assert_small_dataset(ct_csv_dataset_load(ct_default_dataset_path(), NULL));
    /* ... or a folder that holds digits.csv.gz */
    setenv("CTORCH_DATA", data_test_folder, 1);
    assert_string_equal(ct_default_dataset_path(), mine);
    /* a value that leads nowhere is an error naming the variable */
    setenv("CTORCH_DATA", "/nonexistent/ctorch-data", 1);
    assert_null(ct_default_dataset_path());
    assert_error(CT_ERR_IO, "CTORCH_DATA is '/nonexistent/ctorch-data'");
    /* an empty value counts as unset */
    setenv("CTORCH_DATA", "", 1);
    assert_string_equal(ct_default_dataset_path(), CTORCH_DIGITS_PATH);
    unsetenv("CTORCH_DATA");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_shipped_digits_file_has_1797_samples_of_64_features_and_10_classes),
        cmocka_unit_test(feature_scale_multiplies_the_features_and_leaves_the_labels),
        cmocka_unit_test(plain_and_gzip_files_read_the_same),
        cmocka_unit_test(crlf_blank_lines_spaces_and_no_final_newline_are_accepted),
        cmocka_unit_test(the_label_column_and_a_header_are_options),
        cmocka_unit_test(lines_longer_than_the_read_buffer_are_read_whole),
        cmocka_unit_test(a_dataset_over_tensors_keeps_its_own_references),
        cmocka_unit_test(a_dataset_over_wrong_tensors_is_refused),
        cmocka_unit_test(the_default_path_is_the_shipped_file_unless_ctorch_data_says_otherwise),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
