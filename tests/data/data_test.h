/* What the data tests share: a temporary folder for hand-made files, writing plain and gzip
 * files, and reading small tensors back. */
#ifndef CT_TEST_DATA_TEST_H
#define CT_TEST_DATA_TEST_H

#include <stdio.h>
#include <unistd.h>
#include <zlib.h>

#include "test_common.h"

static char data_test_folder[256];

/* Makes a fresh temporary folder (removed by data_test_cleanup). */
static inline void data_test_setup(void)
{
    strcpy(data_test_folder, "/tmp/ctorch-data-test-XXXXXX");
    if (!mkdtemp(data_test_folder)) fail_msg("mkdtemp failed");
}

static inline void data_test_cleanup(void)
{
    char command[300];
    snprintf(command, sizeof command, "rm -rf '%s'", data_test_folder);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", data_test_folder);
}

/* The path of `name` in the temporary folder (a static buffer: one at a time). */
static inline const char *data_test_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", data_test_folder, name);
    return path;
}

/* Writes length bytes of text (NUL bytes too) to the temporary file `name` (gzip-compressed when
 * name ends in .gz); returns its path. */
static inline const char *data_test_write_bytes(const char *name, const char *text, size_t length)
{
    const char *path = data_test_path(name);
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".gz") == 0) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        if (length) assert_int_equal(gzwrite(f, text, (unsigned)length), (int)length);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, length, f), length);
        assert_int_equal(fclose(f), 0);
    }
    return path;
}

/* Writes the string text as data_test_write_bytes does. */
static inline const char *data_test_write(const char *name, const char *text)
{
    return data_test_write_bytes(name, text, strlen(text));
}

/* The values of a CPU or device tensor as float32 / int64 (malloc'ed). */
static inline float *floats_of(const ct_tensor *t)
{
    ct_tensor *home = ct_to(t, CT_DEVICE_CPU);
    assert_non_null(home);
    size_t n = (size_t)ct_numel(t);
    float *values = malloc((n ? n : 1) * sizeof *values);
    assert_int_equal(ct_tensor_to_array(home, values, n * sizeof *values), CT_OK);
    ct_release(home);
    return values;
}

static inline int64_t *int64s_of(const ct_tensor *t)
{
    ct_tensor *home = ct_to(t, CT_DEVICE_CPU);
    assert_non_null(home);
    size_t n = (size_t)ct_numel(t);
    int64_t *values = malloc((n ? n : 1) * sizeof *values);
    assert_int_equal(ct_tensor_to_array(home, values, n * sizeof *values), CT_OK);
    ct_release(home);
    return values;
}

/* A dataset of n samples whose features are [i, -i, 0.5 i] and label i % classes, so that every
 * sample can be recognised in a batch. */
static inline ct_dataset *numbered_dataset(int64_t n, int64_t classes)
{
    float *x = calloc((size_t)(n ? n : 1) * 3, sizeof *x);
    int64_t *y = calloc((size_t)(n ? n : 1), sizeof *y);
    for (int64_t i = 0; i < n; i++) {
        x[3 * i] = (float)i;
        x[3 * i + 1] = (float)-i;
        x[3 * i + 2] = 0.5f * (float)i;
        y[i] = i % classes;
    }
    int64_t xshape[2] = {n, 3}, yshape[1] = {n};
    ct_tensor *features = ct_tensor_from_data(x, CT_F32, xshape, 2, CT_DEVICE_CPU);
    ct_tensor *labels = ct_tensor_from_data(y, CT_I64, yshape, 1, CT_DEVICE_CPU);
    ct_dataset *ds = ct_dataset_from_tensors(features, labels);
    assert_non_null(ds);
    ct_release(features);
    ct_release(labels);
    free(x);
    free(y);
    return ds;
}

#endif
