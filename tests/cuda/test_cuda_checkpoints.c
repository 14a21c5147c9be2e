/* A checkpoint saved on cuda:0 (`ctorch train --device cuda:0 --save`, on the stand-in driver):
 * it loads back onto cuda:0 and tests to the accuracy training reported; on a machine without
 * CUDA (the driver library missing) loading fails with a message naming the tensor, cuda:0 and
 * the map that would work, and with that map (--map-location cpu) it tests to the same accuracy
 * on the CPU. In process, ct_save of cuda tensors and ct_load keep the values and the devices. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "standin_test.h"
#include "support/fresh_path.h"
#include "support/run_command.h"

/* The test accuracy of the last JSON line holding one, in the output of a --json run. */
static double test_accuracy(const char *out)
{
    double accuracy = -1;
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        cJSON *json = cJSON_ParseWithLength(line, end ? (size_t)(end - line) : strlen(line));
        cJSON *item = json ? cJSON_GetObjectItem(json, "test_accuracy") : NULL;
        if (cJSON_IsNumber(item)) accuracy = cJSON_GetNumberValue(item);
        cJSON_Delete(json);
    }
    if (accuracy < 0) fail_msg("no test_accuracy in: %s", out);
    return accuracy;
}

static void test_a_checkpoint_saved_on_cuda_loads_there_and_elsewhere_through_a_map(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    char path[256], command[1024];
    int status;
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_cuda_checkpoint_");

    snprintf(command, sizeof command, "'%s' train --device cuda:0 --epochs 2 --json --save '%s' 2>&1",
             CTORCH_TOOL_PATH, path);
    char *trained = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("status %d: %s", status, trained);
    double accuracy = test_accuracy(trained);

    snprintf(command, sizeof command, "'%s' eval --device cuda:0 --json --checkpoint '%s' 2>&1", CTORCH_TOOL_PATH,
             path);
    char *on_cuda = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("status %d: %s", status, on_cuda);
    if (test_accuracy(on_cuda) != accuracy) fail_msg("on cuda:0 again: %s; when trained: %s", on_cuda, trained);

    /* Without CUDA: the driver library is not there. */
    snprintf(command, sizeof command, "CTORCH_CUDA_DRIVER=/nonexistent '%s' eval --json --checkpoint '%s' 2>&1",
             CTORCH_TOOL_PATH, path);
    char *refused = ct_test_run_command(command, &status);
    if (status == 0 || !strstr(refused, "was saved on cuda:0, which this machine does not have") ||
        !strstr(refused, "cuda:0=cpu"))
        fail_msg("status %d: loading without CUDA should fail naming cuda:0 and a map: %s", status, refused);

    snprintf(command, sizeof command,
             "CTORCH_CUDA_DRIVER=/nonexistent '%s' eval --device cpu --map-location cpu --json --checkpoint '%s' 2>&1",
             CTORCH_TOOL_PATH, path);
    char *mapped = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("status %d: %s", status, mapped);
    /* The CPU's sums round otherwise than cuda's: one of the 360 test samples may change sides. */
    if (!(fabs(test_accuracy(mapped) - accuracy) <= 100.0 / 360 + 1e-9))
        fail_msg("on the cpu: %s; when trained on cuda:0: %s", mapped, trained);

    unlink(path);
    free(trained);
    free(on_cuda);
    free(refused);
    free(mapped);
}

static void test_save_and_load_keep_cuda_tensors_values_and_devices(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_cuda_tensors_");
    int64_t shape[2] = {3, 5};
    ct_manual_seed(3);
    ct_tensor *w = ct_randn(shape, 2, CT_F32, CUDA0);
    assert_non_null(w);
    ct_state_dict *saved = ct_state_dict_create();
    assert_int_equal(ct_state_dict_set(saved, "w", w), CT_OK);
    assert_int_equal(ct_save(saved, path), CT_OK);

    ct_state_dict *loaded = ct_load(path, NULL);
    assert_non_null(loaded);
    ct_tensor *back = ct_state_dict_get(loaded, "w");
    assert_non_null(back);
    assert_true(ct_device_equal(ct_tensor_device(back), CUDA0));
    float want[15], got[15];
    assert_int_equal(ct_tensor_to_array(w, want, sizeof want), CT_OK);
    assert_int_equal(ct_tensor_to_array(back, got, sizeof got), CT_OK);
    assert_memory_equal(got, want, sizeof want);

    ct_state_dict *on_cpu = ct_load(path, "cuda:0=cpu");
    assert_non_null(on_cpu);
    ct_tensor *mapped = ct_state_dict_get(on_cpu, "w");
    assert_true(ct_device_equal(ct_tensor_device(mapped), CT_DEVICE_CPU));
    assert_int_equal(ct_tensor_to_array(mapped, got, sizeof got), CT_OK);
    assert_memory_equal(got, want, sizeof want);

    ct_release(mapped);
    ct_release(back);
    ct_state_dict_free(on_cpu);
    ct_state_dict_free(loaded);
    ct_state_dict_free(saved);
    ct_release(w);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_and_load_keep_cuda_tensors_values_and_devices),
        cmocka_unit_test(test_a_checkpoint_saved_on_cuda_loads_there_and_elsewhere_through_a_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
