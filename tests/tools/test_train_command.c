/* `ctorch train` and `ctorch eval` as a user runs them: bad options (a bad map_location, a bad
 * --data-parallel list too) fail with status 2 and a message naming the input and what is valid; a
 * short run prints plain lines (not a terminal) or JSON lines ending with the summary; a checkpoint
 * saved by train tests to the same accuracy in eval, with or without DataParallel's "module."
 * prefix; bad checkpoints fail cleanly. A run with --data-parallel over the two OpenCL devices says
 * so, learns, and saves plain names. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"

/* The tool fails with status and its output holds every one of parts (NULL-terminated). */
static void assert_fails(const char *args, int status, const char *const *parts)
{
    int got;
    char *out = run_tool(args, &got);
    if (got != status) fail_msg("ctorch %s: status %d, want %d; output: %s", args, got, status, out);
    for (const char *const *part = parts; *part; part++)
        if (!strstr(out, *part)) fail_msg("ctorch %s: the output lacks '%s': %s", args, *part, out);
    if (strchr(out, '\n') != out + strlen(out) - 1) fail_msg("ctorch %s: not one line: %s", args, out);
    free(out);
}

#define FAILS(args, status, ...) assert_fails(args, status, (const char *const[]){__VA_ARGS__, NULL})

static void bad_train_options_fail_with_a_message(void **state)
{
    (void)state;
    FAILS("train --frobnicate", 2, "unknown option '--frobnicate'", "--epochs", "--batch-size");
    FAILS("train --epochs abc", 2, "--epochs 'abc' is not an integer from 1 to");
    FAILS("train --epochs 0", 2, "--epochs '0' is not an integer from 1 to");
    FAILS("train --epochs=2x", 2, "--epochs '2x' is not an integer");
    FAILS("train --epochs", 2, "--epochs needs a value");
    FAILS("train --batch-size -4", 2, "--batch-size '-4' is not an integer from 1 to");
    FAILS("train --lr 0", 2, "--lr '0' is not a number above 0");
    FAILS("train --lr fast", 2, "--lr 'fast' is not a number");
    FAILS("train --seed -1", 2, "--seed '-1' is not an integer from 0 to");
    FAILS("train --model resnet", 2, "--model 'resnet' is not a model; use mlp or cnn");
    FAILS("train --optimizer lbfgs", 2, "--optimizer 'lbfgs' is not an optimizer; use sgd, adam or adamw");
    FAILS("train --device gpu:0", 2, "--device", "gpu:0");
    FAILS("train --device opencl:99", 2, "--device", "opencl:99");
    FAILS("train --data /nonexistent/digits.csv", 2, "--data '/nonexistent/digits.csv'", "No such file");
}

/* A --save path that ct_save would refuse fails at once (status 2), not after the training: one
 * line of output, no epoch. */
static void bad_save_paths_fail_before_training(void **state)
{
    (void)state;
    FAILS("train --save /nonexistent/model.safetensors", 2, "--save: ", "'/nonexistent/model.safetensors'",
          "the folder '/nonexistent' does not exist");
    FAILS("train --save /tmp", 2, "--save: ", "cannot replace '/tmp': it is a folder");
    FAILS("train --save /tmp/", 2, "--save: ", "'/tmp/' names a folder");
    FAILS("train --save ''", 2, "--save: ", "the path is empty");
    char args[512] = "train --save /tmp/";
    size_t used = strlen(args);
    memset(args + used, 'n', 300);
    args[used + 300] = '\0';
    FAILS(args, 2, "--save: ", "the file name is 300 bytes; the folder takes names of at most 255");
    char fifo[] = "/tmp/ctorch_train_save_fifo_XXXXXX";
    assert_non_null(mkdtemp(fifo));
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", fifo);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(args, sizeof args, "train --save %s", path);
    FAILS(args, 2, "--save: ", "it is a FIFO (named pipe), not a regular file");
    unlink(path);
    rmdir(fifo);
}

static void bad_data_parallel_lists_fail_with_a_message(void **state)
{
    (void)state;
    FAILS("train --data-parallel", 2, "--data-parallel needs a value");
    FAILS("train --data-parallel gpu:0", 2, "--data-parallel: ", "'gpu:0'", "expected 'cpu'");
    FAILS("train --data-parallel cpu,", 2, "--data-parallel: ", "'cpu,' has an empty entry");
    FAILS("train --data-parallel cpu,cpu", 2, "--data-parallel 'cpu,cpu' lists cpu twice; list each device once");
    FAILS("train --device opencl:99 --data-parallel cpu", 2, "--device", "opencl:99");
    if (ct_device_count(CT_OPENCL) < 2) skip();
    FAILS("train --data-parallel opencl:0,opencl:9", 2, "entry 2 of 'opencl:0,opencl:9'", "'opencl:9' does not exist");
    FAILS("train --data-parallel opencl:1,opencl:1", 2, "lists opencl:1 twice");
    FAILS("train --data-parallel opencl:0,cpu", 2, "'opencl:0,cpu' mixes device types (opencl:0 and cpu)");
    FAILS("train --data-parallel opencl,opencl:1", 2, "'opencl' (every device of the type) stands alone");
    FAILS("train --device opencl:1 --data-parallel opencl:0,opencl:1", 2,
          "--device opencl:1 conflicts with --data-parallel 'opencl:0,opencl:1'", "first device opencl:0");
    FAILS("train --device cpu --data-parallel opencl", 2, "--device cpu conflicts with --data-parallel 'opencl'");
}

static void bad_data_fails_with_a_message(void **state)
{
    (void)state;
    char path[] = "/tmp/ctorch_train_data_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, "1,2,0\n3,x,1\n", 12) == 12);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "train --device cpu --data %s", path);
    FAILS(args, 2, path, "line 2");
    /* Three features cannot be a square image. */
    assert_int_equal(truncate(path, 0), 0);
    FILE *f = fopen(path, "w");
    fputs("1,2,3,0\n4,5,6,1\n7,8,9,0\n1,1,1,1\n2,2,2,0\n", f);
    fclose(f);
    snprintf(args, sizeof args, "train --device cpu --model cnn --data %s", path);
    FAILS(args, 2, "the cnn reads each sample as a square image", "3 features");
    unlink(path);
}

static void bad_eval_options_fail_with_a_message(void **state)
{
    (void)state;
    FAILS("eval", 2, "--checkpoint FILE is required");
    FAILS("eval --checkpoint", 2, "--checkpoint needs a value");
    FAILS("eval --checkpoint /nonexistent/model.safetensors", 2, "'/nonexistent/model.safetensors'",
          "No such file");
    FAILS("eval --checkpoint " CTORCH_DIGITS_PATH " --device gpu", 2, "--device", "gpu");
    FAILS("eval --checkpoint " CTORCH_DIGITS_PATH " --best", 2, "unknown option '--best'", "--map-location");
}

static void bad_checkpoints_fail_cleanly(void **state)
{
    (void)state;
    /* Not a safetensors file at all. */
    FAILS("eval --device cpu --checkpoint " CTORCH_DIGITS_PATH, 1, "loading the checkpoint", CTORCH_DIGITS_PATH);
    /* A good safetensors file that `ctorch train` did not write. */
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_train_test_");
    ct_state_dict *sd = ct_state_dict_create();
    ct_tensor *t = ct_zeros((int64_t[]){2, 2}, 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_add(sd, "weight", t), CT_OK);
    assert_int_equal(ct_save(sd, path), CT_OK);
    char args[512];
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s", path);
    FAILS(args, 1, path, "ctorch.train.model");
    /* The metadata of an mlp, the tensors of something else: the strict load names them. */
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.model", "mlp"), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.features", "64"), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.classes", "10"), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.split_seed", "0"), CT_OK);
    assert_int_equal(ct_save(sd, path), CT_OK);
    FAILS(args, 1, "does not fit the mlp model", "Missing key(s)", "0.weight", "Unexpected key(s)");
    ct_release(t);
    ct_state_dict_free(sd);
    unlink(path);
}

static void a_short_run_prints_plain_lines(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("train --device cpu --epochs 2", &status);
    if (status != 0) fail_msg("status %d: %s", status, out);
    const char *parts[] = {"Using CPU\n", "Training mlp", "epoch 1/2  loss ", "epoch 2/2  loss ", "samples/s",
                           "Test accuracy: ", "Time: "};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strstr(out, parts[i])) fail_msg("the output lacks '%s': %s", parts[i], out);
    assert_null(strchr(out, '\r')); /* no progress bar when the output is not a terminal */
    free(out);
}

static void a_short_run_ends_with_the_json_summary(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("train --device cpu --epochs 1 --json --seed 3", &status);
    if (status != 0) fail_msg("status %d: %s", status, out);
    cJSON *epoch = cJSON_Parse(out); /* the first line (cJSON stops after one value): epoch 1 */
    if (!epoch) fail_msg("the first line is not JSON: %s", out);
    assert_int_equal((int)number(epoch, "epoch"), 1);
    assert_true(number(epoch, "samples_per_second") > 0);
    cJSON_Delete(epoch);
    cJSON *summary = last_json_line(out);
    assert_string_equal(string(summary, "device"), "cpu");
    assert_string_equal(string(summary, "model"), "mlp");
    assert_int_equal((int)number(summary, "epochs"), 1);
    double loss = number(summary, "final_loss"), accuracy = number(summary, "test_accuracy");
    if (!(loss > 0 && loss < log(10.0))) fail_msg("final_loss %g (chance is log 10)", loss);
    if (!(accuracy > 0.5 && accuracy <= 1)) fail_msg("test_accuracy %g (chance is 0.1)", accuracy);
    assert_true(number(summary, "seconds") > 0);
    assert_true(number(summary, "samples_per_second") > 0);
    assert_int_equal((int)number(summary, "world_size"), 1); /* one process: no mpirun */
    assert_true(number(summary, "feature_scale") == 1.0 / 16); /* the shipped digits' default */
    assert_int_equal(cJSON_GetArraySize(summary), 9);
    cJSON_Delete(summary);
    free(out);
}

/* --tf32 allows TF32 for float32 products on CUDA only: on the CPU (OpenBLAS has no TF32) a run
 * with it gives the same numbers as one without. */
static void tf32_leaves_a_cpu_run_as_it_was(void **state)
{
    (void)state;
    double loss[2], accuracy[2];
    for (int tf32 = 0; tf32 < 2; tf32++) {
        int status;
        char *out = run_tool(tf32 ? "train --device cpu --epochs 1 --json --seed 3 --tf32"
                                  : "train --device cpu --epochs 1 --json --seed 3", &status);
        if (status != 0) fail_msg("status %d: %s", status, out);
        cJSON *summary = last_json_line(out);
        loss[tf32] = number(summary, "final_loss");
        accuracy[tf32] = number(summary, "test_accuracy");
        cJSON_Delete(summary);
        free(out);
    }
    assert_true(loss[0] == loss[1]);
    assert_true(accuracy[0] == accuracy[1]);
}

/* Trains model for epochs with seed, saving to path; returns the test accuracy train reported. */
static double train_and_save(const char *model, int epochs, int seed, const char *path)
{
    char args[512];
    snprintf(args, sizeof args, "train --device cpu --model %s --epochs %d --seed %d --json --save %s", model,
             epochs, seed, path);
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("ctorch %s: status %d: %s", args, status, out);
    cJSON *summary = last_json_line(out);
    double accuracy = number(summary, "test_accuracy");
    cJSON_Delete(summary);
    free(out);
    return accuracy;
}

static double eval_accuracy(const char *path, const char *extra, const char *model)
{
    char args[512];
    snprintf(args, sizeof args, "eval --checkpoint %s --json %s", path, extra);
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("ctorch %s: status %d: %s", args, status, out);
    cJSON *summary = last_json_line(out);
    assert_string_equal(string(summary, "model"), model);
    double accuracy = number(summary, "test_accuracy");
    assert_int_equal((int)number(summary, "test_samples"), 360);
    cJSON_Delete(summary);
    free(out);
    return accuracy;
}

static void eval_tests_a_saved_model_to_the_same_accuracy(void **state)
{
    (void)state;
    const char *models[] = {"mlp", "cnn"};
    for (int i = 0; i < 2; i++) {
        char path[256];
        ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_train_test_");
        double trained = train_and_save(models[i], 2, 5 + i, path); /* eval must find the split's seed */
        double tested = eval_accuracy(path, "--device cpu", models[i]);
        if (tested != trained) fail_msg("%s: train said %g, eval %g", models[i], trained, tested);
        int status;
        char args[512];
        snprintf(args, sizeof args, "eval --device cpu --checkpoint %s", path);
        char *out = run_tool(args, &status);
        assert_int_equal(status, 0);
        if (!strstr(out, "Using CPU\n") || !strstr(out, "Test accuracy of the ")) fail_msg("%s", out);
        free(out);
        snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --map-location bogus", path);
        FAILS(args, 2, "map_location 'bogus'", "expected 'cpu'");
        unlink(path);
    }
}

static void a_module_prefixed_checkpoint_evaluates_too(void **state)
{
    (void)state;
    char path[256], prefixed[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_train_test_");
    ct_test_fresh_checkpoint_path(prefixed, sizeof prefixed, "ctorch_train_test_");
    double trained = train_and_save("mlp", 1, 0, path);
    ct_state_dict *sd = ct_load(path, "cpu");
    assert_non_null(sd);
    assert_int_equal(ct_state_dict_add_prefix(sd, "module."), CT_OK);
    assert_true(ct_state_dict_contains(sd, "module.0.weight"));
    assert_int_equal(ct_save(sd, prefixed), CT_OK);
    ct_state_dict_free(sd);
    double tested = eval_accuracy(prefixed, "--device cpu --map-location cpu", "mlp");
    if (tested != trained) fail_msg("train said %g, eval of the module. checkpoint %g", trained, tested);
    unlink(path);
    unlink(prefixed);
}

static void a_data_parallel_run_learns_and_saves_plain_names(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 2) skip();
    char path[256], args[512];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_train_test_");
    /* --device may name the list's first device; "opencl" is every OpenCL device. */
    snprintf(args, sizeof args, "train --device opencl:0 --data-parallel opencl --epochs 2 --save %s", path);
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("status %d: %s", status, out);
    const char *parts[] = {"Using DataParallel over opencl:0, opencl:1 (", "batch 32 split over 2 devices",
                           "epoch 2/2  loss ", "Test accuracy: ", "Saved the model to "};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strstr(out, parts[i])) fail_msg("the output lacks '%s': %s", parts[i], out);
    free(out);

    /* The checkpoint holds the model's own names, on the first device. */
    ct_state_dict *sd = ct_load(path, NULL);
    assert_non_null(sd);
    assert_true(ct_state_dict_contains(sd, "0.weight"));
    assert_int_equal(checkpoint_model_entries(sd), 4); /* two linear layers */
    assert_string_equal(ct_state_dict_metadata(sd, "ctorch.device.0.weight"), "opencl:0");
    ct_state_dict_free(sd);
    unlink(path);

    /* The JSON summary names the devices, and the model learns (chance is 0.1). */
    out = run_tool("train --data-parallel opencl:1,opencl:0 --epochs 2 --json", &status);
    if (status != 0) fail_msg("status %d: %s", status, out);
    cJSON *summary = last_json_line(out);
    assert_string_equal(string(summary, "device"), "opencl:1");
    cJSON *devices = cJSON_GetObjectItem(summary, "data_parallel");
    assert_int_equal(cJSON_GetArraySize(devices), 2);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(devices, 0)), "opencl:1");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(devices, 1)), "opencl:0");
    double accuracy = number(summary, "test_accuracy");
    if (!(accuracy > 0.8 && accuracy <= 1)) fail_msg("test_accuracy %g under DataParallel", accuracy);
    cJSON_Delete(summary);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_train_options_fail_with_a_message),
        cmocka_unit_test(bad_save_paths_fail_before_training),
        cmocka_unit_test(bad_data_parallel_lists_fail_with_a_message),
        cmocka_unit_test(bad_data_fails_with_a_message),
        cmocka_unit_test(bad_eval_options_fail_with_a_message),
        cmocka_unit_test(bad_checkpoints_fail_cleanly),
        cmocka_unit_test(a_short_run_prints_plain_lines),
        cmocka_unit_test(a_short_run_ends_with_the_json_summary),
        cmocka_unit_test(tf32_leaves_a_cpu_run_as_it_was),
        cmocka_unit_test(eval_tests_a_saved_model_to_the_same_accuracy),
        cmocka_unit_test(a_module_prefixed_checkpoint_evaluates_too),
        cmocka_unit_test(a_data_parallel_run_learns_and_saves_plain_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
