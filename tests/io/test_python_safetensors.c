/* A round trip through Python's safetensors package, run by $CTORCH_PYTHON (default python3;
 * scripts/test points it at the virtual environment scripts/install-deps makes). Where that Python
 * cannot import safetensors and numpy the program exits 77, which ctest reports as skipped. */
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
    };
    int failures = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(folder);
    return failures;
}
