/* A round trip through Python's safetensors package, run by $CTORCH_PYTHON (default python3;
 * scripts/test points it at the virtual environment scripts/install-deps makes). Where that Python
 * cannot import safetensors and numpy the program exits 77, which ctest reports as skipped. */
#include <math.h>
#include <unistd.h>

#include "test_common.h"

static char folder[] = "/tmp/ctorch-io-python-XXXXXX";
static const char *python = "python3";

static const char script[] =
    "import sys\n"
    "import numpy as np\n"
    "from safetensors import safe_open\n"
    "from safetensors.numpy import load_file, save_file\n"
    "t = load_file(sys.argv[1])\n"
    "assert t['w'].dtype == np.float32 and t['w'].shape == (2, 3), t['w']\n"
    "assert (t['w'] == np.array([[0, 2, 4], [1, 3, 5]], dtype=np.float32)).all(), t['w']\n"
    "assert t['mask'].dtype == np.bool_ and list(t['mask']) == [True, False, True], t['mask']\n"
    "assert t['step'].dtype == np.int64 and t['step'].shape == () and int(t['step']) == -5, t['step']\n"
    "with safe_open(sys.argv[1], 'np') as f:\n"
    "    md = f.metadata()\n"
    "assert md['ctorch.version'] and md['ctorch.device.w'] == 'cpu' and md['model'] == 'mlp', md\n"
    "save_file({'a': np.arange(4, dtype=np.int64), 'b': np.array([[1.5, 2.5]], dtype=np.float64),\n"
    "           'c': np.array([True, False]), 'd': np.array([7], dtype=np.uint8)}, sys.argv[2],\n"
    "          metadata={'k': 'v'})\n";

/* float16 through numpy; bfloat16, which numpy lacks, as raw bytes through safetensors' own
 * (de)serializer, against bit patterns written out here. */
static const char script_16[] =
    "import struct, sys\n"
    "import numpy as np\n"
    "import safetensors\n"
    "from safetensors import safe_open\n"
    "from safetensors.numpy import save_file\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    ours = dict(safetensors.deserialize(f.read()))\n"
    "with safe_open(sys.argv[1], 'np') as f:\n"
    "    h = f.get_tensor('h')\n"
    "assert h.dtype == np.float16 and h.shape == (2, 2), h\n"
    "assert (h == np.array([[1.5, -2.0], [65504.0, 0.0999755859375]], dtype=np.float16)).all(), h\n"
    "b = ours['b']\n"
    "assert b['dtype'] == 'BF16' and b['shape'] == [4], b\n"
    "assert bytes(b['data']) == struct.pack('<4H', 0x3f80, 0xc000, 0x4049, 0x7f80), b\n"
    "save_file({'h': np.array([0.5, -3.25, 6e-08], dtype=np.float16)}, sys.argv[2])\n"
    "raw = np.array([0x3f00, 0xc2c8, 0x0001], dtype=np.uint16)\n"
    "spec = safetensors.TensorSpec(dtype='bfloat16', shape=[3], data_ptr=raw.ctypes.data, data_len=raw.nbytes)\n"
    "with open(sys.argv[3], 'wb') as f:\n"
    "    f.write(safetensors.serialize({'b': spec}))\n";

static void sixteen_bit_tensors_round_trip_through_python_safetensors(void **state)
{
    (void)state;
    char ours[256], theirs_h[256], theirs_b[256], script_path[256], command[1200];
    snprintf(ours, sizeof ours, "%s/ctorch16.safetensors", folder);
    snprintf(theirs_h, sizeof theirs_h, "%s/python16.safetensors", folder);
    snprintf(theirs_b, sizeof theirs_b, "%s/pythonbf16.safetensors", folder);
    snprintf(script_path, sizeof script_path, "%s/check16.py", folder);
    FILE *f = fopen(script_path, "w");
    assert_non_null(f);
    fputs(script_16, f);
    fclose(f);

    ct_scope_push();
    ct_state_dict *sd = ct_state_dict_create();
    const float h[4] = {1.5f, -2.0f, 65504.0f, 0.1f}, b[4] = {1.0f, -2.0f, 3.14159f, INFINITY};
    ct_tensor *h32 = ct_tensor_from_data(h, CT_F32, (int64_t[]){2, 2}, 2, CT_DEVICE_CPU);
    ct_tensor *b32 = ct_tensor_from_data(b, CT_F32, (int64_t[]){4}, 1, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_add(sd, "h", ct_to_dtype(h32, CT_F16)), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "b", ct_to_dtype(b32, CT_BF16)), CT_OK);
    assert_int_equal(ct_save(sd, ours), CT_OK);
    snprintf(command, sizeof command, "'%s' '%s' '%s' '%s' '%s'", python, script_path, ours, theirs_h, theirs_b);
    assert_int_equal(system(command), 0);

    ct_state_dict *back_h = ct_load(theirs_h, NULL), *back_b = ct_load(theirs_b, NULL);
    if (!back_h || !back_b) fail_msg("%s", ct_last_error_message());
    ct_tensor *th = ct_state_dict_get(back_h, "h"), *tb = ct_state_dict_get(back_b, "b");
    assert_int_equal(ct_tensor_dtype(th), CT_F16);
    assert_int_equal(ct_tensor_dtype(tb), CT_BF16);
    float vh[3], vb[3];
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(th, CT_F32), vh, sizeof vh), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(tb, CT_F32), vb, sizeof vb), CT_OK);
    assert_true(vh[0] == 0.5f && vh[1] == -3.25f && vh[2] == 0x1p-24f); /* 6e-08: float16's smallest subnormal */
    assert_true(vb[0] == 0.5f && vb[1] == -100.0f && vb[2] == 0x1p-133f);
    ct_release(th), ct_release(tb);
    ct_state_dict_free(back_h);
    ct_state_dict_free(back_b);
    ct_state_dict_free(sd);
    assert_int_equal(ct_scope_pop(), CT_OK);
    unlink(ours), unlink(theirs_h), unlink(theirs_b), unlink(script_path);
}

static void round_trips_through_python_safetensors(void **state)
{
    (void)state;
    char ours[256], theirs[256], script_path[256], command[1024];
    snprintf(ours, sizeof ours, "%s/ctorch.safetensors", folder);
    snprintf(theirs, sizeof theirs, "%s/python.safetensors", folder);
    snprintf(script_path, sizeof script_path, "%s/check.py", folder);
    FILE *f = fopen(script_path, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);

    ct_scope_push();
    ct_state_dict *sd = ct_state_dict_create();
    int64_t shape[2] = {3, 2};
    ct_tensor *w = ct_transpose(ct_reshape(ct_arange(0, 6, 1, CT_F32, CT_DEVICE_CPU), shape, 2), 0, 1);
    ct_tensor *mask = ct_to_dtype(ct_tensor_from_data((uint8_t[]){1, 0, 1}, CT_U8, (int64_t[]){3}, 1, CT_DEVICE_CPU), CT_BOOL);
    assert_int_equal(ct_state_dict_add(sd, "w", w), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "mask", mask), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "step", ct_full(NULL, 0, -5, CT_I64, CT_DEVICE_CPU)), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "model", "mlp"), CT_OK);
    assert_int_equal(ct_save(sd, ours), CT_OK);
    snprintf(command, sizeof command, "'%s' '%s' '%s' '%s'", python, script_path, ours, theirs);
    assert_int_equal(system(command), 0);

    ct_state_dict *back = ct_load(theirs, NULL);
    if (!back) fail_msg("%s", ct_last_error_message());
    assert_string_equal(ct_state_dict_metadata(back, "k"), "v");
    int64_t a[4];
    double b[2];
    uint8_t c[2], d[1];
    assert_int_equal(ct_tensor_to_array(ct_state_dict_get(back, "a"), a, sizeof a), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_state_dict_get(back, "b"), b, sizeof b), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_state_dict_get(back, "c"), c, sizeof c), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_state_dict_get(back, "d"), d, sizeof d), CT_OK);
    assert_true(a[3] == 3 && b[1] == 2.5 && c[0] == 1 && c[1] == 0 && d[0] == 7);
    assert_int_equal(ct_tensor_dtype(ct_state_dict_get(back, "c")), CT_BOOL);
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
    assert_int_equal(ct_scope_pop(), CT_OK);
    unlink(ours);
    unlink(theirs);
    unlink(script_path);
}

int main(void)
{
    const char *chosen = getenv("CTORCH_PYTHON");
    if (chosen && *chosen) python = chosen;
    char probe[512];
    snprintf(probe, sizeof probe, "'%s' -c 'import numpy, safetensors.numpy' >/dev/null 2>&1", python);
    if (system(probe) != 0) {
        printf("%s cannot import safetensors and numpy: skipped (scripts/install-deps installs them)\n", python);
        return 77;
    }
    if (!mkdtemp(folder)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips_through_python_safetensors),
        cmocka_unit_test(sixteen_bit_tensors_round_trip_through_python_safetensors),
    };
    int failures = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(folder);
    return failures;
}
