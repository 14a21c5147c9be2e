/* Writes the fuzzer's seed corpus into a folder: small valid checkpoints saved by ct_save, files
 * as Python's safetensors writes them (some claiming devices: cuda:0, opencl:1), and every
 * malformed file of safetensors_files.h. The committed tests/io/corpus/ came from
 *     ./build/tests/io/make_fuzz_corpus tests/io/corpus */
#include <stdio.h>

#include "ctorch.h"
#include "io/safetensors_files.h"

static int save(const char *folder, const char *name, ct_state_dict *sd)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.safetensors", folder, name);
    int failed = ct_save(sd, path) != CT_OK;
    if (failed) fprintf(stderr, "make_fuzz_corpus: %s\n", ct_last_error_message());
    ct_state_dict_free(sd);
    return failed;
}

static int write_bytes(const char *folder, const char *name, st_bytes bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.safetensors", folder, name);
    int failed = st_write_file(path, bytes) != 0;
    if (failed) fprintf(stderr, "make_fuzz_corpus: cannot write %s\n", path);
    free(bytes.data);
    return failed;
}

static void add(ct_state_dict *sd, const char *name, ct_tensor *t)
{
    ct_state_dict_add(sd, name, t);
    ct_release(t);
}

/* One small tensor of every dtype, a scalar and an empty tensor, and metadata. */
static ct_state_dict *every_dtype(void)
{
    ct_state_dict *sd = ct_state_dict_create();
    int64_t shape[2] = {2, 3};
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%s", ct_dtype_name((ct_dtype)dt));
        ct_tensor *values = ct_arange(0, 6, 1, CT_F64, CT_DEVICE_CPU);
        ct_tensor *shaped = ct_reshape(values, shape, 2);
        add(sd, name, ct_to_dtype(shaped, (ct_dtype)dt));
        ct_release(shaped);
        ct_release(values);
    }
    add(sd, "step", ct_full(NULL, 0, 42, CT_I64, CT_DEVICE_CPU));
    int64_t none[2] = {0, 4};
    add(sd, "empty", ct_zeros(none, 2, CT_F32, CT_DEVICE_CPU));
    ct_state_dict_set_metadata(sd, "model", "mlp");
    return sd;
}

static ct_state_dict *module_prefixed(void)
{
    ct_state_dict *sd = ct_state_dict_create();
    int64_t w[2] = {3, 2}, b[1] = {3};
    add(sd, "fc.weight", ct_ones(w, 2, CT_F32, CT_DEVICE_CPU));
    add(sd, "fc.bias", ct_zeros(b, 1, CT_F32, CT_DEVICE_CPU));
    ct_state_dict_add_prefix(sd, "module.");
    return sd;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_fuzz_corpus <folder>\n");
        return 2;
    }
    const char *folder = argv[1];
    int failed = 0;
    failed += save(folder, "good_every_dtype", every_dtype());
    failed += save(folder, "good_module_prefix", module_prefixed());
    failed += save(folder, "good_empty_dict", ct_state_dict_create());

    static const float weights[6] = {0.5f, -1.5f, 2.0f, 3.25f, -0.0f, 1e-3f};
    static const unsigned char bytes[6] = {1, 0, 1, 1, 0, 0};
    failed += write_bytes(folder, "good_python_style", st_build(
        "{\"__metadata__\":{\"format\":\"pt\"},\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]},"
        "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", weights, sizeof weights));
    failed += write_bytes(folder, "good_saved_on_cuda", st_build(
        "{\"__metadata__\":{\"ctorch.version\":\"0.1.0\",\"ctorch.device.w\":\"cuda:0\",\"ctorch.device.mask\":\"cuda:1\"},"
        "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[4,6]}}", bytes, 6));
    failed += write_bytes(folder, "good_saved_on_opencl", st_build(
        "{\"__metadata__\":{\"ctorch.version\":\"0.1.0\",\"ctorch.device.a\":\"opencl:0\",\"ctorch.device.b\":\"opencl:1\"},"
        "\"a\":{\"dtype\":\"U8\",\"shape\":[2,1],\"data_offsets\":[0,2]},"
        "\"b\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[2,3]}}", bytes, 3));
    failed += write_bytes(folder, "good_escaped_names", st_build(
        "{\"caf\\u00e9 \\\"x\\\"\\n\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
        "\"\\u65e5\\u672c\":{\"dtype\":\"U8\",\"shape\":[0,3],\"data_offsets\":[1,1]}}", bytes, 1));
    for (size_t k = 0; k < sizeof st_bad_files / sizeof st_bad_files[0]; k++)
        failed += write_bytes(folder, st_bad_files[k].id, st_bad_files[k].make());
    if (!failed) printf("make_fuzz_corpus: wrote the seed corpus into %s\n", folder);
    return failed != 0;
}
