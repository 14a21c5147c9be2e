/* `ctorch eval` of a state dict without ctorch's metadata, as a PyTorch user saves one
 * (safetensors.torch.save_file(model.state_dict(), path)): the model is read from the tensors'
 * names and shapes (or named by --model) and tested on ctorch train's default split, to the
 * accuracy train reported for the same weights. Files written here in C always run; the same
 * files rewritten by Python's safetensors from PyTorch-shaped dicts run where $CTORCH_PYTHON
 * (default python3) can import safetensors and numpy, and are skipped elsewhere. */
#include <stdio.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"
#include "train.h"

static const char *python = "python3";
static char mlp_trained[256], mlp_plain[256], cnn_plain[256];
static double mlp_accuracy; /* what train reported */

/* eval --json of path (with extra options): the model it names and the accuracy. */
static double eval_json(const char *path, const char *extra, const char *model)
{
    char args[1024];
    snprintf(args, sizeof args, "eval --device cpu --json --checkpoint %s %s", path, extra);
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("ctorch %s: status %d: %s", args, status, out);
    cJSON *line = last_json_line(out);
    const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(line, "model"));
    if (!got || strcmp(got, model) != 0) fail_msg("ctorch %s: not the %s: %s", args, model, out);
    double accuracy = cJSON_GetNumberValue(cJSON_GetObjectItem(line, "test_accuracy"));
    cJSON_Delete(line);
    free(out);
    return accuracy;
}

/* path's tensors under the same names, saved to plain without any metadata of ours. */
static void save_without_metadata(const char *path, const char *plain)
{
    ct_state_dict *sd = ct_load(path, "cpu");
    if (!sd) fail_msg("%s", ct_last_error_message());
    ct_state_dict *bare = ct_state_dict_create();
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        assert_int_equal(ct_state_dict_add(bare, ct_state_dict_name_at(sd, i), t), CT_OK);
        ct_release(t);
    }
    assert_int_equal(ct_state_dict_metadata_count(bare), 0);
    assert_int_equal(ct_save(bare, plain), CT_OK);
    ct_state_dict_free(bare);
    ct_state_dict_free(sd);
}

static int setup(void **state)
{
    (void)state;
    ct_test_fresh_checkpoint_path(mlp_trained, sizeof mlp_trained, "ctorch_pytorch_test_");
    ct_test_fresh_checkpoint_path(mlp_plain, sizeof mlp_plain, "ctorch_pytorch_test_");
    ct_test_fresh_checkpoint_path(cnn_plain, sizeof cnn_plain, "ctorch_pytorch_test_");
    /* The default seed: a file without metadata is tested on the default split. */
    char args[512];
    snprintf(args, sizeof args, "train --device cpu --epochs 3 --json --save %s", mlp_trained);
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("ctorch %s: status %d: %s", args, status, out);
    cJSON *summary = last_json_line(out);
    mlp_accuracy = cJSON_GetNumberValue(cJSON_GetObjectItem(summary, "test_accuracy"));
    cJSON_Delete(summary);
    free(out);
    save_without_metadata(mlp_trained, mlp_plain);
    /* An untrained cnn for digits (8 x 8, 10 classes): its names and shapes are what matter. */
    ct_module *cnn = ct_train_model_create(CT_TRAIN_CNN, 64, 10);
    assert_non_null(cnn);
    ct_state_dict *sd = ct_module_state_dict(cnn, NULL);
    assert_int_equal(ct_save(sd, cnn_plain), CT_OK);
    ct_state_dict_free(sd);
    ct_module_release(cnn);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(mlp_trained);
    unlink(mlp_plain);
    unlink(cnn_plain);
    return 0;
}

static void a_file_without_metadata_is_read_from_its_tensors(void **state)
{
    (void)state;
    double tested = eval_json(mlp_plain, "", "mlp");
    if (tested != mlp_accuracy) fail_msg("train said %g, eval of the same weights without metadata %g",
                                         mlp_accuracy, tested);
    eval_json(mlp_plain, "--model mlp", "mlp");
    eval_json(cnn_plain, "", "cnn");
    /* The plain output says what it assumed. */
    char args[512];
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s", cnn_plain);
    int status;
    char *out = run_tool(args, &status);
    assert_int_equal(status, 0);
    if (!strstr(out, "has no ctorch metadata: read as the cnn") || !strstr(out, "default split"))
        fail_msg("%s", out);
    free(out);
}

static void a_model_the_tensors_are_not_fails_naming_what_it_needs(void **state)
{
    (void)state;
    char args[512];
    int status;
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --model mlp", cnn_plain);
    char *out = run_tool(args, &status);
    assert_int_equal(status, 1);
    if (!strstr(out, "not the mlp's") || !strstr(out, "0.weight [256, features]")) fail_msg("%s", out);
    free(out);
    /* A file with ctorch's metadata holds the model it says. */
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --model cnn", mlp_trained);
    out = run_tool(args, &status);
    assert_int_equal(status, 2);
    if (!strstr(out, "holds the mlp model")) fail_msg("%s", out);
    free(out);
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --model rnn", mlp_plain);
    out = run_tool(args, &status);
    assert_int_equal(status, 2);
    if (!strstr(out, "--model 'rnn' is not a model")) fail_msg("%s", out);
    free(out);
}

/* What a PyTorch user writes: safetensors.torch.save_file(model.state_dict()) of
 *   nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))            (the mlp)
 *   nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
 *                 nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
 *                 nn.Flatten(), nn.Linear(128, 10))                              (the cnn)
 * Torch is not needed to write the same file: the names, the shapes, float32, contiguous, and
 * the metadata {"format": "pt"} that safetensors.torch writes. The mlp's weights are the ones
 * ctorch trained (read by Python, written anew); the cnn's are random. */
static const char script[] =
    "import sys\n"
    "import numpy as np\n"
    "from safetensors.numpy import load_file, save_file\n"
    "trained = load_file(sys.argv[1])\n"
    "mlp = {name: np.ascontiguousarray(trained[name], dtype=np.float32)\n"
    "       for name in ['0.weight', '0.bias', '2.weight', '2.bias']}\n"
    "assert mlp['0.weight'].shape == (256, 64) and mlp['2.weight'].shape == (10, 256)\n"
    "save_file(mlp, sys.argv[2], metadata={'format': 'pt'})\n"
    "rng = np.random.default_rng(0)\n"
    "shapes = {'1.weight': (16, 1, 3, 3), '1.bias': (16,), '4.weight': (32, 16, 3, 3), '4.bias': (32,),\n"
    "          '8.weight': (10, 128), '8.bias': (10,)}\n"
    "cnn = {name: (rng.standard_normal(shape) * 0.1).astype(np.float32) for name, shape in shapes.items()}\n"
    "save_file(cnn, sys.argv[3], metadata={'format': 'pt'})\n";

static void a_file_written_by_python_safetensors_evaluates(void **state)
{
    (void)state;
    char probe[512];
    snprintf(probe, sizeof probe, "'%s' -c 'import numpy, safetensors.numpy' >/dev/null 2>&1", python);
    if (system(probe) != 0) {
        printf("%s cannot import safetensors and numpy: skipped (scripts/install-deps installs them)\n", python);
        skip();
    }
    char script_path[] = "/tmp/ctorch-pytorch-script-XXXXXX";
    int fd = mkstemp(script_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    char mlp_python[256], cnn_python[256], command[2048];
    ct_test_fresh_checkpoint_path(mlp_python, sizeof mlp_python, "ctorch_pytorch_test_");
    ct_test_fresh_checkpoint_path(cnn_python, sizeof cnn_python, "ctorch_pytorch_test_");
    snprintf(command, sizeof command, "'%s' '%s' '%s' '%s' '%s'", python, script_path, mlp_trained, mlp_python,
             cnn_python);
    assert_int_equal(system(command), 0);
    double tested = eval_json(mlp_python, "", "mlp");
    if (tested != mlp_accuracy) fail_msg("train said %g, eval of Python's file %g", mlp_accuracy, tested);
    eval_json(cnn_python, "", "cnn");
    unlink(mlp_python);
    unlink(cnn_python);
    unlink(script_path);
}

int main(void)
{
    const char *chosen = getenv("CTORCH_PYTHON");
    if (chosen && *chosen) python = chosen;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_file_without_metadata_is_read_from_its_tensors),
        cmocka_unit_test(a_model_the_tensors_are_not_fails_naming_what_it_needs),
        cmocka_unit_test(a_file_written_by_python_safetensors_evaluates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
