/* Save then load gives back every byte: every dtype, 0-d and empty tensors, views (saved
 * contiguous), metadata; tensors on opencl:0 and opencl:1 come back on their devices, on the cpu
 * with "cpu", or where a table sends them; a checkpoint from a CUDA machine loads through a map
 * and without one fails with a message that says how to map it. */
#include <math.h>
#include <unistd.h>

#include "backend/opencl_test.h"
#include "io/safetensors_files.h"

static char folder[] = "/tmp/ctorch-io-round-XXXXXX";
static char path[256];

/* 24 elements of each dtype with distinct bytes, the floats with NaN, infinities and -0. */
static void fill_pattern(ct_dtype dtype, void *data, int count)
{
    for (int i = 0; i < count; i++) {
        switch (dtype) {
        case CT_F32: ((float *)data)[i] = i == 1 ? NAN : i == 2 ? -INFINITY : i == 3 ? -0.0f : (float)i * 1.25f - 7.0f; break;
        case CT_F64: ((double *)data)[i] = i == 1 ? NAN : i == 2 ? INFINITY : (double)i * -3.5 + 0.1; break;
        case CT_I32: ((int32_t *)data)[i] = i == 0 ? INT32_MIN : i == 1 ? INT32_MAX : i * 100003 - 5; break;
        case CT_I64: ((int64_t *)data)[i] = i == 0 ? INT64_MIN : i == 1 ? INT64_MAX : (int64_t)i * 10000000019LL; break;
        case CT_U8: ((uint8_t *)data)[i] = (uint8_t)(i * 37 + 1); break;
        /* float16 and bfloat16 bit patterns: NaN, infinity, -0, subnormals and ordinary values */
        case CT_F16: ((uint16_t *)data)[i] = i == 1 ? 0x7e01 : i == 2 ? 0xfc00 : i == 3 ? 0x8000 : (uint16_t)(i * 2741 + 1); break;
        case CT_BF16: ((uint16_t *)data)[i] = i == 1 ? 0x7fc1 : i == 2 ? 0x7f80 : i == 3 ? 0x0001 : (uint16_t)(i * 2741 + 7); break;
        default: ((uint8_t *)data)[i] = (uint8_t)(i % 3 == 0); break;
        }
    }
}

static ct_tensor *pattern_tensor(ct_dtype dtype, const int64_t *shape, int ndim, ct_device device)
{
    uint8_t data[24 * 8];
    fill_pattern(dtype, data, 24);
    return ct_tensor_from_data(data, dtype, shape, ndim, device);
}

static void add(ct_state_dict *sd, const char *name, ct_tensor *t)
{
    assert_non_null(t);
    assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
    ct_release(t);
}

/* The loaded tensor has the original's dtype, shape and bytes, and lives on `device`. */
static void assert_same_tensor(const ct_state_dict *loaded, const char *name, const ct_tensor *original,
                               ct_device device)
{
    ct_tensor *t = ct_state_dict_get(loaded, name);
    if (!t) fail_msg("'%s' is missing: %s", name, ct_last_error_message());
    char expected[CT_DEVICE_STRING_MAX], actual[CT_DEVICE_STRING_MAX];
    if (!ct_device_equal(ct_tensor_device(t), device))
        fail_msg("'%s' is on %s, expected %s", name, ct_device_format(ct_tensor_device(t), actual, sizeof actual),
                 ct_device_format(device, expected, sizeof expected));
    assert_int_equal(ct_tensor_dtype(t), ct_tensor_dtype(original));
    assert_int_equal(ct_tensor_ndim(t), ct_tensor_ndim(original));
    for (int d = 0; d < ct_tensor_ndim(t); d++) assert_int_equal(ct_tensor_size(t, d), ct_tensor_size(original, d));
    if (ct_numel(t) > 0) assert_true(ct_is_contiguous(t)); /* (ct_is_contiguous says no to [2, 0, 3]) */
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
    unsigned char *a = malloc(bytes + 1), *b = malloc(bytes + 1);
    assert_int_equal(ct_tensor_to_array(t, a, bytes), CT_OK);
    assert_int_equal(ct_tensor_to_array(original, b, bytes), CT_OK);
    if (bytes) assert_memory_equal(a, b, bytes);
    free(a);
    free(b);
    ct_release(t);
}

static void every_dtype_comes_back_byte_for_byte(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    int64_t shape[3] = {2, 3, 4};
    char name[32];
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        snprintf(name, sizeof name, "t.%s", ct_dtype_name((ct_dtype)dt));
        add(sd, name, pattern_tensor((ct_dtype)dt, shape, 3, CT_DEVICE_CPU));
        snprintf(name, sizeof name, "scalar.%s", ct_dtype_name((ct_dtype)dt));
        add(sd, name, pattern_tensor((ct_dtype)dt, NULL, 0, CT_DEVICE_CPU));
    }
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict *back = ct_load(path, NULL);
    assert_non_null(back);
    assert_int_equal(ct_state_dict_count(back), ct_state_dict_count(sd));
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        const char *n = ct_state_dict_name_at(sd, i);
        assert_string_equal(ct_state_dict_name_at(back, i), n); /* the order is kept */
        ct_tensor *original = ct_state_dict_get(sd, n);
        assert_same_tensor(back, n, original, CT_DEVICE_CPU);
        ct_release(original);
    }
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
}

/* A float16 or bfloat16 checkpoint loads into a float32 model, converted exactly (every 16-bit
 * value is a float32), as PyTorch's load_state_dict copies into the parameters' dtype. */
static void sixteen_bit_checkpoints_load_into_float32_models(void **state)
{
    (void)state;
    for (int format = 0; format < 2; format++) {
        ct_dtype dtype = format ? CT_BF16 : CT_F16;
        ct_module *source = ct_linear(3, 2, true);
        ct_state_dict *sd = ct_module_state_dict(source, NULL);
        assert_non_null(sd);
        ct_state_dict *narrow = ct_state_dict_create();
        for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
            ct_tensor *t = ct_state_dict_get(sd, ct_state_dict_name_at(sd, i));
            add(narrow, ct_state_dict_name_at(sd, i), ct_to_dtype(t, dtype));
            ct_release(t);
        }
        assert_int_equal(ct_save(narrow, path), CT_OK);
        ct_state_dict *back = ct_load(path, NULL);
        assert_non_null(back);
        ct_tensor *saved_weight = ct_state_dict_get(back, "weight");
        assert_int_equal(ct_tensor_dtype(saved_weight), dtype);
        ct_module *target = ct_linear(3, 2, true);
        ct_load_report report;
        assert_int_equal(ct_module_load_state_dict(target, back, true, &report), CT_OK);
        assert_int_equal(report.loaded, 2);
        ct_tensor *weight = ct_module_parameter(target, "weight");
        assert_int_equal(ct_tensor_dtype(weight), CT_F32);
        float got[6];
        uint16_t bits[6];
        assert_int_equal(ct_tensor_to_array(weight, got, sizeof got), CT_OK);
        assert_int_equal(ct_tensor_to_array(saved_weight, bits, sizeof bits), CT_OK);
        for (int k = 0; k < 6; k++)
            assert_true(got[k] == (format ? ct_bf16_to_float(bits[k]) : ct_f16_to_float(bits[k])));
        ct_release(weight);
        ct_release(saved_weight);
        ct_module_free(target);
        ct_state_dict_free(back);
        ct_state_dict_free(narrow);
        ct_state_dict_free(sd);
        ct_module_free(source);
    }
}

static void empty_tensors_come_back_with_their_shapes(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    int64_t none[1] = {0}, middle[3] = {2, 0, 3};
    add(sd, "none", ct_empty(none, 1, CT_F32, CT_DEVICE_CPU));
    add(sd, "middle", ct_empty(middle, 3, CT_I64, CT_DEVICE_CPU));
    add(sd, "one", ct_full(NULL, 0, 3.5, CT_F64, CT_DEVICE_CPU));
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict *back = ct_load(path, NULL);
    assert_non_null(back);
    for (int64_t i = 0; i < 3; i++) {
        ct_tensor *original = ct_state_dict_tensor_at(sd, i);
        assert_same_tensor(back, ct_state_dict_name_at(sd, i), original, CT_DEVICE_CPU);
        ct_release(original);
    }
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
}

static void views_are_saved_contiguous(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t shape[2] = {4, 6};
    ct_tensor *base = ct_arange(0, 24, 1, CT_I32, CT_DEVICE_CPU);
    ct_tensor *matrix = ct_reshape(base, shape, 2);
    ct_tensor *transposed = ct_transpose(matrix, 0, 1);
    ct_tensor *strided = ct_slice(matrix, 1, 1, 6, 2);
    ct_tensor *row = ct_select(matrix, 0, 2);
    assert_false(ct_is_contiguous(transposed));
    assert_false(ct_is_contiguous(strided));
    ct_state_dict *sd = ct_state_dict_create();
    assert_int_equal(ct_state_dict_add(sd, "transposed", transposed), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "strided", strided), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "row", row), CT_OK);
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict *back = ct_load(path, NULL);
    assert_non_null(back);
    assert_same_tensor(back, "transposed", transposed, CT_DEVICE_CPU);
    assert_same_tensor(back, "strided", strided, CT_DEVICE_CPU);
    assert_same_tensor(back, "row", row, CT_DEVICE_CPU);
    int32_t values[24];
    ct_tensor *t = ct_state_dict_get(back, "transposed");
    assert_int_equal(ct_tensor_to_array(t, values, sizeof values), CT_OK);
    assert_int_equal(values[1], 6); /* [0][1] of the transpose is [1][0] of the matrix */
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
    assert_int_equal(ct_scope_pop(), CT_OK);
}

static void metadata_and_prefixed_names_come_back(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    add(sd, "fc.weight", ct_ones((int64_t[]){2, 2}, 2, CT_F32, CT_DEVICE_CPU));
    add(sd, "fc.bias", ct_zeros((int64_t[]){2}, 1, CT_F32, CT_DEVICE_CPU));
    assert_int_equal(ct_state_dict_set_metadata(sd, "model", "mlp \"small\"\n"), CT_OK);
    assert_int_equal(ct_state_dict_add_prefix(sd, "module."), CT_OK); /* as DataParallel names them */
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict *back = ct_load(path, NULL);
    assert_non_null(back);
    assert_string_equal(ct_state_dict_metadata(back, "model"), "mlp \"small\"\n");
    assert_string_equal(ct_state_dict_metadata(back, "ctorch.version"), CT_VERSION_STRING);
    assert_string_equal(ct_state_dict_metadata(back, "ctorch.device.module.fc.bias"), "cpu");
    assert_string_equal(ct_state_dict_name_at(back, 0), "module.fc.weight");
    assert_int_equal(ct_state_dict_strip_prefix(back, "module."), CT_OK);
    assert_string_equal(ct_state_dict_name_at(back, 0), "fc.weight");
    assert_string_equal(ct_state_dict_name_at(back, 1), "fc.bias");
    /* saving what was loaded writes ctorch's own keys afresh, once */
    assert_int_equal(ct_save(back, path), CT_OK);
    ct_state_dict *again = ct_load(path, NULL);
    assert_non_null(again);
    assert_string_equal(ct_state_dict_metadata(again, "ctorch.device.fc.weight"), "cpu");
    assert_null(ct_state_dict_metadata(again, "ctorch.device.module.fc.weight"));
    ct_state_dict_free(again);
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
}

/* The state dict owns what ct_load made: the caller's scope records none of it. */
static void loaded_tensors_do_not_enter_the_callers_scope(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    add(sd, "w", ct_ones((int64_t[]){3}, 1, CT_F32, CT_DEVICE_CPU));
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_scope_push();
    ct_state_dict *back = ct_load(path, NULL);
    assert_int_equal(ct_scope_pop(), CT_OK);
    ct_tensor *w = ct_state_dict_tensor_at(back, 0);
    assert_int_equal(ct_refcount(w), 2);
    ct_release(w);
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
}

/* cpu, opencl:0, opencl:1 tensors (one of them a view) saved together. */
static ct_state_dict *three_devices(void)
{
    ct_state_dict *sd = ct_state_dict_create();
    int64_t shape[2] = {4, 6};
    add(sd, "on_cpu", pattern_tensor(CT_I64, shape, 2, CT_DEVICE_CPU));
    add(sd, "on_0", pattern_tensor(CT_F32, shape, 2, OPENCL0));
    ct_tensor *on1 = pattern_tensor(CT_F64, shape, 2, OPENCL1);
    add(sd, "on_1.t", ct_transpose(on1, 0, 1));
    add(sd, "mask_1", pattern_tensor(CT_BOOL, shape, 2, OPENCL1));
    ct_release(on1);
    return sd;
}

static void assert_placed(const ct_state_dict *sd, const ct_state_dict *back, const ct_device devices[4])
{
    assert_non_null(back);
    for (int64_t i = 0; i < 4; i++) {
        ct_tensor *original = ct_state_dict_tensor_at(sd, i);
        assert_same_tensor(back, ct_state_dict_name_at(sd, i), original, devices[i]);
        ct_release(original);
    }
}

static void opencl_tensors_come_back_where_the_map_says(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    ct_state_dict *sd = three_devices();
    assert_int_equal(ct_save(sd, path), CT_OK);
    const ct_device cpu = CT_DEVICE_CPU;
    struct {
        const char *map;
        ct_device devices[4];
    } cases[] = {
        {NULL, {cpu, OPENCL0, OPENCL1, OPENCL1}},
        {"cpu", {cpu, cpu, cpu, cpu}},
        {"opencl:1", {OPENCL1, OPENCL1, OPENCL1, OPENCL1}},
        {"opencl:0=opencl:1,opencl:1=cpu", {cpu, OPENCL1, cpu, cpu}},
        {" opencl:1 = opencl:0 ", {cpu, OPENCL0, OPENCL0, OPENCL0}},
        {"cpu=opencl:0", {OPENCL0, OPENCL0, OPENCL1, OPENCL1}},
        {"opencl=cpu", {cpu, cpu, cpu, cpu}},
        {"opencl=cpu,opencl:1=opencl:0", {cpu, cpu, OPENCL0, OPENCL0}},
        {"cuda:0=cpu", {cpu, OPENCL0, OPENCL1, OPENCL1}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ct_state_dict *back = ct_load(path, cases[k].map);
        if (!back) fail_msg("map '%s': %s", cases[k].map ? cases[k].map : "NULL", ct_last_error_message());
        assert_placed(sd, back, cases[k].devices);
        ct_state_dict_free(back);
    }
    ct_state_dict_free(sd);
}

/* A checkpoint written on a machine with CUDA (hand-made: this one has none). */
static void write_cuda_checkpoint(void)
{
    static const float data[6] = {1, 2, 3, 4, 5, 6};
    st_bytes bytes = st_build("{\"__metadata__\":{\"ctorch.version\":\"0.1.0\",\"ctorch.device.fc.weight\":\"cuda:0\","
                              "\"ctorch.device.fc.bias\":\"cuda:1\"},\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                              "\"data_offsets\":[0,16]},\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
                              "\"data_offsets\":[16,24]}}", data, sizeof data);
    assert_int_equal(st_write_file(path, bytes), 0);
    free(bytes.data);
}

static void a_cuda_checkpoint_loads_through_a_map_and_fails_clearly_without(void **state)
{
    (void)state;
    if (ct_is_available(CT_CUDA)) skip(); /* the machine this checks has no CUDA device */
    write_cuda_checkpoint();
    assert_null(ct_load(path, NULL));
    char expected[1024];
    /* without CUDA compiled in, or compiled in with no driver or device here (the reason) */
    char why[600] = "ctorch was built without cuda support";
    if (ct_backend_is_compiled(CT_CUDA))
        snprintf(why, sizeof why, "it has no usable cuda device: %s", ct_backend_unavailable_reason(CT_CUDA));
    snprintf(expected, sizeof expected, "ct_load: '%s': tensor 'fc.weight' was saved on cuda:0, which this "
             "machine does not have (%s); load it with a map_location such as \"cpu\" or "
             "\"cuda:0=cpu\"", path, why);
    assert_error(CT_ERR_DEVICE, expected);
    assert_null(ct_load(path, "cuda:0=cpu")); /* fc.bias, on cuda:1, has no map */
    assert_error(CT_ERR_DEVICE, "tensor 'fc.bias' was saved on cuda:1, which this machine does not have");

    const char *maps[] = {"cpu", "cuda:0=cpu,cuda:1=cpu", "cuda=cpu"};
    for (size_t k = 0; k < sizeof maps / sizeof maps[0]; k++) {
        ct_state_dict *back = ct_load(path, maps[k]);
        if (!back) fail_msg("map '%s': %s", maps[k], ct_last_error_message());
        ct_tensor *w = ct_state_dict_get(back, "fc.weight");
        assert_true(ct_device_equal(ct_tensor_device(w), CT_DEVICE_CPU));
        double last;
        ct_tensor *row = ct_select(w, 0, 1), *item = ct_select(row, 0, 1);
        assert_int_equal(ct_item(item, &last), CT_OK);
        assert_true(last == 4);
        ct_release(item);
        ct_release(row);
        ct_release(w);
        ct_state_dict_free(back);
    }
    if (ct_device_count(CT_OPENCL) >= 2) {
        ct_state_dict *back = ct_load(path, "cuda:1=opencl:1,cuda=opencl:0");
        assert_non_null(back);
        ct_tensor *w = ct_state_dict_get(back, "fc.weight"), *b = ct_state_dict_get(back, "fc.bias");
        assert_true(ct_device_equal(ct_tensor_device(w), OPENCL0));
        assert_true(ct_device_equal(ct_tensor_device(b), OPENCL1));
        ct_release(w);
        ct_release(b);
        ct_state_dict_free(back);
    }
}

static void a_device_index_this_machine_lacks_is_named(void **state)
{
    (void)state;
    static const uint8_t data[1] = {7};
    st_bytes bytes = st_build("{\"__metadata__\":{\"ctorch.device.x\":\"opencl:7\"},"
                              "\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", data, 1);
    assert_int_equal(st_write_file(path, bytes), 0);
    free(bytes.data);
    assert_null(ct_load(path, NULL));
    if (ct_backend_is_compiled(CT_OPENCL) && ct_is_available(CT_OPENCL)) {
        char expected[128];
        int count = ct_device_count(CT_OPENCL);
        snprintf(expected, sizeof expected, "(it has %d opencl device%s)", count, count == 1 ? "" : "s");
        assert_error(CT_ERR_DEVICE, expected);
    } else {
        assert_error(CT_ERR_DEVICE, "tensor 'x' was saved on opencl:7, which this machine does not have");
    }
    ct_state_dict *back = ct_load(path, "opencl:7=cpu");
    assert_non_null(back);
    ct_state_dict_free(back);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(folder)) return -1;
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", folder);
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
        cmocka_unit_test(every_dtype_comes_back_byte_for_byte),
        cmocka_unit_test(sixteen_bit_checkpoints_load_into_float32_models),
        cmocka_unit_test(empty_tensors_come_back_with_their_shapes),
        cmocka_unit_test(views_are_saved_contiguous),
        cmocka_unit_test(metadata_and_prefixed_names_come_back),
        cmocka_unit_test(loaded_tensors_do_not_enter_the_callers_scope),
        cmocka_unit_test(opencl_tensors_come_back_where_the_map_says),
        cmocka_unit_test(a_cuda_checkpoint_loads_through_a_map_and_fails_clearly_without),
        cmocka_unit_test(a_device_index_this_machine_lacks_is_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
