/* Interop with Python's safetensors and PyTorch: a file built byte for byte as they write it
 * (no ctorch metadata, tensors ordered by alignment then name, header padded with spaces) loads
 * onto the cpu; and ctorch's own files parse back as the format requires: the length prefix, a
 * JSON header padded to 8 bytes, string-only metadata, offsets contiguous from 0 that cover the
 * data section, each tensor aligned to its element size, little-endian row-major bytes. */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "io/safetensors_files.h"
#include "test_common.h"

static char folder[] = "/tmp/ctorch-io-interop-XXXXXX";
static char path[256];

static void loads_a_file_as_python_safetensors_writes_it(void **state)
{
    (void)state;
    /* safetensors.torch.save_file({"weight": float64 2x2, "bias": float32 [3], "steps": int64 [],
     * "mask": bool [3], "pixels": uint8 [2], "ids": int32 [2]}): 8-byte dtypes first, then by name */
    unsigned char data[32 + 8 + 12 + 8 + 3 + 2];
    size_t at = 0;
    const double weight[4] = {1.5, -2.25, 3e100, -0.0};
    const int64_t steps = -1234567890123LL;
    const float bias[3] = {0.5f, -1.0f, 1e-30f};
    const int32_t ids[2] = {-7, 2147483647};
    const uint8_t mask[3] = {1, 0, 1}, pixels[2] = {0, 255};
    memcpy(data + at, weight, 32), at += 32;
    memcpy(data + at, &steps, 8), at += 8;
    memcpy(data + at, bias, 12), at += 12;
    memcpy(data + at, ids, 8), at += 8;
    memcpy(data + at, mask, 3), at += 3;
    memcpy(data + at, pixels, 2), at += 2;
    st_bytes bytes = st_build(
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"steps\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]},"
        "\"weight\":{\"dtype\":\"F64\",\"shape\":[2,2],\"data_offsets\":[0,32]},"
        "\"bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[40,52]},"
        "\"ids\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[52,60]},"
        "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[60,63]},"
        "\"pixels\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[63,65]}}",
        data, at);
    assert_int_equal(st_write_file(path, bytes), 0);
    free(bytes.data);
    ct_state_dict *sd = ct_load(path, NULL);
    if (!sd) fail_msg("%s", ct_last_error_message());
    assert_int_equal(ct_state_dict_count(sd), 6);
    assert_string_equal(ct_state_dict_name_at(sd, 0), "steps"); /* the header's order */
    assert_string_equal(ct_state_dict_metadata(sd, "format"), "pt");
    for (int64_t i = 0; i < 6; i++) {
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        assert_true(ct_device_equal(ct_tensor_device(t), CT_DEVICE_CPU));
        ct_release(t);
    }
    struct {
        const char *name;
        const void *values;
        size_t bytes;
        ct_dtype dtype;
        int ndim;
    } expected[] = {
        {"weight", weight, 32, CT_F64, 2}, {"steps", &steps, 8, CT_I64, 0}, {"bias", bias, 12, CT_F32, 1},
        {"ids", ids, 8, CT_I32, 1},        {"mask", mask, 3, CT_BOOL, 1},   {"pixels", pixels, 2, CT_U8, 1},
    };
    for (size_t k = 0; k < 6; k++) {
        ct_tensor *t = ct_state_dict_get(sd, expected[k].name);
        assert_non_null(t);
        assert_int_equal(ct_tensor_dtype(t), expected[k].dtype);
        assert_int_equal(ct_tensor_ndim(t), expected[k].ndim);
        unsigned char back[32];
        assert_int_equal(ct_tensor_to_array(t, back, sizeof back), CT_OK);
        assert_memory_equal(back, expected[k].values, expected[k].bytes);
        ct_release(t);
    }
    ct_state_dict_free(sd);
}

static void loads_a_file_without_metadata_and_without_tensors(void **state)
{
    (void)state;
    static const float one = 1;
    st_bytes bytes = st_build("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &one, 4);
    assert_int_equal(st_write_file(path, bytes), 0);
    free(bytes.data);
    ct_state_dict *sd = ct_load(path, NULL);
    assert_non_null(sd);
    assert_int_equal(ct_state_dict_metadata_count(sd), 0);
    ct_state_dict_free(sd);
    bytes = st_build("{}", NULL, 0);
    assert_int_equal(st_write_file(path, bytes), 0);
    free(bytes.data);
    sd = ct_load(path, NULL);
    assert_non_null(sd);
    assert_int_equal(ct_state_dict_count(sd), 0);
    ct_state_dict_free(sd);
}

static unsigned char *read_all(size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size);
    assert_int_equal(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

static size_t code_size(const char *code)
{
    if (!strcmp(code, "F64") || !strcmp(code, "I64")) return 8;
    if (!strcmp(code, "F32") || !strcmp(code, "I32")) return 4;
    if (!strcmp(code, "U8") || !strcmp(code, "BOOL")) return 1;
    fail_msg("dtype %s", code);
    return 0;
}

static int compare_begin(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static void ctorch_files_follow_the_format(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    const char *names[] = {"mask", "fc.weight", "steps", "pixels", "fc.bias", "ids", "odd \"name\"\n"};
    ct_dtype dtypes[] = {CT_BOOL, CT_F32, CT_I64, CT_U8, CT_F64, CT_I32, CT_U8};
    int64_t shapes[][2] = {{3, 1}, {2, 3}, {1, 1}, {5, 1}, {3, 1}, {1, 7}, {1, 1}};
    for (int k = 0; k < 7; k++) {
        ct_tensor *t = ct_arange(0, (double)(shapes[k][0] * shapes[k][1]), 1, dtypes[k] == CT_BOOL ? CT_U8 : dtypes[k], CT_DEVICE_CPU);
        ct_tensor *shaped = ct_reshape(t, shapes[k], 2);
        ct_tensor *typed = dtypes[k] == CT_BOOL ? ct_to_dtype(shaped, CT_BOOL) : ct_retain(shaped);
        assert_int_equal(ct_state_dict_add(sd, names[k], typed), CT_OK);
        ct_release(typed);
        ct_release(shaped);
        ct_release(t);
    }
    assert_int_equal(ct_state_dict_set_metadata(sd, "note", "trained on digits"), CT_OK);
    assert_int_equal(ct_save(sd, path), CT_OK);

    size_t size;
    unsigned char *file = read_all(&size);
    assert_true(size >= 8);
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--) n = (n << 8) | file[b];
    assert_true(8 + n <= size);
    assert_int_equal((8 + n) % 8, 0);
    const char *header = (const char *)file + 8;
    size_t end = n;
    while (end > 0 && header[end - 1] == ' ') end--;
    assert_int_equal(header[0], '{');
    assert_int_equal(header[end - 1], '}');
    cJSON *json = cJSON_ParseWithLength(header, end);
    assert_non_null(json);

    /* metadata: strings only, the version and each tensor's device */
    cJSON *metadata = cJSON_GetObjectItemCaseSensitive(json, "__metadata__");
    assert_true(cJSON_IsObject(metadata));
    for (cJSON *item = metadata->child; item; item = item->next) assert_true(cJSON_IsString(item));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(metadata, "ctorch.version")->valuestring, CT_VERSION_STRING);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(metadata, "note")->valuestring, "trained on digits");

    /* entries in the state dict's order; ranges contiguous from 0, aligned, covering the data */
    double ranges[7][3];
    int k = 0;
    size_t data_size = size - 8 - n;
    const unsigned char *data = file + 8 + n;
    for (cJSON *item = json->child; item; item = item->next) {
        if (item == metadata) continue;
        assert_true(k < 7);
        assert_string_equal(item->string, names[k]);
        char key[64];
        snprintf(key, sizeof key, "ctorch.device.%s", names[k]);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(metadata, key)->valuestring, "cpu");
        const char *code = cJSON_GetObjectItemCaseSensitive(item, "dtype")->valuestring;
        cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
        cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
        assert_int_equal(cJSON_GetArraySize(shape), 2);
        assert_int_equal(cJSON_GetArrayItem(shape, 0)->valuedouble, shapes[k][0]);
        assert_int_equal(cJSON_GetArrayItem(shape, 1)->valuedouble, shapes[k][1]);
        assert_int_equal(cJSON_GetArraySize(offsets), 2);
        double begin = cJSON_GetArrayItem(offsets, 0)->valuedouble, stop = cJSON_GetArrayItem(offsets, 1)->valuedouble;
        size_t element = code_size(code);
        assert_int_equal(element, ct_dtype_size(dtypes[k]));
        assert_int_equal((size_t)(stop - begin), (size_t)(shapes[k][0] * shapes[k][1]) * element);
        assert_int_equal((size_t)begin % element, 0);
        /* the bytes: little-endian row-major values 0, 1, 2, ... */
        for (int64_t e = 0; e < shapes[k][0] * shapes[k][1]; e++) {
            uint64_t expected = dtypes[k] == CT_BOOL ? (e != 0) : (uint64_t)e, value = 0;
            const unsigned char *p = data + (size_t)begin + (size_t)e * element;
            if (dtypes[k] == CT_F32) { float f; memcpy(&f, p, 4); value = (uint64_t)f; }
            else if (dtypes[k] == CT_F64) { double f; memcpy(&f, p, 8); value = (uint64_t)f; }
            else for (size_t b = element; b-- > 0;) value = (value << 8) | p[b];
            assert_int_equal(value, expected);
        }
        ranges[k][0] = begin;
        ranges[k][1] = stop;
        k++;
    }
    assert_int_equal(k, 7);
    qsort(ranges, 7, sizeof ranges[0], compare_begin);
    double covered = 0;
    for (k = 0; k < 7; k++) {
        assert_true(ranges[k][0] == covered);
        covered = ranges[k][1];
    }
    assert_true(covered == (double)data_size);
    cJSON_Delete(json);
    free(file);
    ct_state_dict_free(sd);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(folder)) return -1;
    snprintf(path, sizeof path, "%s/interop.safetensors", folder);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(folder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_a_file_as_python_safetensors_writes_it),
        cmocka_unit_test(loads_a_file_without_metadata_and_without_tensors),
        cmocka_unit_test(ctorch_files_follow_the_format),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
