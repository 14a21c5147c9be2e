/* `ctorch info --json` prints one JSON object with every backend and device, and the CPU with the
 * kernels its matrix engines chose; `ctorch info` prints the same as a table, and `ctorch bench`
 * the CPU in its header; unknown commands and options fail with usage. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "support/run_command.h"
#include "test_common.h"

/* Runs the tool with args; returns its whole stdout (malloc'ed) and its exit status. */
static char *run_tool(const char *args, int *exit_status)
{
    char command[1024];
    snprintf(command, sizeof command, "'%s' %s 2>/dev/null", CTORCH_TOOL_PATH, args);
    return ct_test_run_command(command, exit_status);
}

static void info_json_lists_backends_and_devices(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("info --json", &status);
    assert_int_equal(status, 0);
    cJSON *root = cJSON_Parse(out);
    if (!root) fail_msg("not JSON: %s", out);
    cJSON *backends = cJSON_GetObjectItem(root, "backends");
    assert_true(cJSON_IsArray(backends));
    assert_int_equal(cJSON_GetArraySize(backends), 3);
    int cpu_backends = 0;
    cJSON *backend;
    cJSON_ArrayForEach(backend, backends) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(backend, "type"));
        assert_non_null(type);
        assert_true(cJSON_IsBool(cJSON_GetObjectItem(backend, "compiled")));
        assert_true(cJSON_IsBool(cJSON_GetObjectItem(backend, "available")));
        assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(backend, "reason")));
        if (strcmp(type, "cpu") == 0) {
            cpu_backends++;
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(backend, "available")));
        }
        if (strcmp(type, "cuda") == 0 && !cJSON_IsTrue(cJSON_GetObjectItem(backend, "compiled")))
            assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(backend, "reason")), "not compiled in");
    }
    assert_int_equal(cpu_backends, 1);
    cJSON *devices = cJSON_GetObjectItem(root, "devices");
    assert_true(cJSON_IsArray(devices));
    cJSON *first = cJSON_GetArrayItem(devices, 0);
    assert_non_null(first);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(first, "device")), "cpu");
    assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(first, "name")));
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(first, "total_memory")) > 0);
    double free_memory = cJSON_GetNumberValue(cJSON_GetObjectItem(first, "free_memory"));
    assert_true(free_memory > 0);
    assert_true(free_memory <= cJSON_GetNumberValue(cJSON_GetObjectItem(first, "total_memory")));
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(first, "compute_units")) >= 1);
    assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(root, "best_device")));
    /* The data set train and eval read by default: here, the source tree's. */
    const char *data = cJSON_GetStringValue(cJSON_GetObjectItem(root, "data_path"));
    if (!data || !strstr(data, "digits.csv.gz")) fail_msg("no data_path: %s", out);
    cJSON_Delete(root);
    free(out);
}

static void info_json_describes_the_cpu_and_its_matrix_engines(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("info --json", &status);
    assert_int_equal(status, 0);
    cJSON *root = cJSON_Parse(out);
    if (!root) fail_msg("not JSON: %s", out);
    cJSON *cpu = cJSON_GetObjectItem(root, "cpu");
    if (!cJSON_IsObject(cpu)) fail_msg("no cpu section: %s", out);
    ct_cpu_info info;
    assert_int_equal(ct_cpu_get_info(&info), CT_OK);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cpu, "model_name")), info.model_name);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(cpu, "model")), info.model);
    /* The extensions as a list: the same words as ct_cpu_get_info's, in its order. */
    cJSON *extensions = cJSON_GetObjectItem(cpu, "extensions"), *extension;
    assert_true(cJSON_IsArray(extensions));
    char joined[256] = "";
    cJSON_ArrayForEach(extension, extensions) {
        if (joined[0]) strcat(joined, " ");
        strncat(joined, cJSON_GetStringValue(extension), sizeof joined - strlen(joined) - 2);
    }
    assert_string_equal(joined, info.extensions);
    assert_true(cJSON_IsBool(cJSON_GetObjectItem(cpu, "amx_permitted")));
    cJSON *engines = cJSON_GetObjectItem(cpu, "engines");
    assert_int_equal(cJSON_GetArraySize(engines), info.engine_count);
    for (int i = 0; i < info.engine_count; i++) {
        cJSON *engine = cJSON_GetArrayItem(engines, i);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(engine, "name")), info.engines[i].name);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(engine, "kernel")), info.engines[i].kernel);
        assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(engine, "version")));
        assert_true(cJSON_IsBool(cJSON_GetObjectItem(engine, "set_by_ctorch")));
        assert_true(cJSON_IsBool(cJSON_GetObjectItem(engine, "below_cpu")));
    }
    cJSON_Delete(root);
    free(out);
}

static void bench_names_the_cpu_in_its_header(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("bench --quick '^optim_step_launches_mlp$'", &status);
    assert_int_equal(status, 0);
    if (strncmp(out, "cpu:\n  model ", strlen("cpu:\n  model ")) != 0 || !strstr(out, "  OpenBLAS    "))
        fail_msg("no cpu header: %s", out);
    free(out);
    /* In JSON, the first line, without name and value (bench/peer_compare.py passes it by). */
    out = run_tool("bench --json --quick '^optim_step_launches_mlp$'", &status);
    assert_int_equal(status, 0);
    cJSON *first = cJSON_ParseWithLength(out, strcspn(out, "\n"));
    if (!first || !cJSON_IsObject(cJSON_GetObjectItem(first, "cpu")) || cJSON_GetObjectItem(first, "name"))
        fail_msg("the first line is not the cpu header: %s", out);
    cJSON_Delete(first);
    free(out);
}

static void info_prints_a_table(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("info", &status);
    assert_int_equal(status, 0);
    assert_non_null(strstr(out, "backends:"));
    assert_non_null(strstr(out, "cpu     available, 1 device"));
    if (!ct_backend_is_compiled(CT_CUDA))
        assert_non_null(strstr(out, "cuda    unavailable: not compiled in"));
    else if (!ct_is_available(CT_CUDA)) /* the reason itself: tests/backend/test_cuda_unavailable.c */
        assert_non_null(strstr(out, "cuda    compiled in, unavailable: "));
    assert_non_null(strstr(out, "best device: "));
    assert_non_null(strstr(out, "\ncpu:\n  model       "));
    assert_non_null(strstr(out, "\n  extensions  "));
    assert_non_null(strstr(out, "\n  OpenBLAS    "));
    free(out);
}

static void the_variable_chooses_the_best_device(void **state)
{
    (void)state;
    int status;
    char *out = run_tool("info --json", &status);
    /* PoCL's devices are CPUs: the best device is the CPU, or a CUDA GPU where there is one. */
    const char *best = ct_device_count(CT_CUDA) > 0 ? "cuda:0" : "cpu";
    cJSON *root = cJSON_Parse(out);
    if (!root) fail_msg("not JSON: %s", out);
    const char *printed = cJSON_GetStringValue(cJSON_GetObjectItem(root, "best_device"));
    if (!printed || strcmp(printed, best) != 0) fail_msg("the best device is not %s: %s", best, out);
    cJSON_Delete(root);
    free(out);
    setenv("CTORCH_DEVICE", "gpu:0", 1);
    out = run_tool("info", &status);
    assert_non_null(strstr(out, "best device: error: CTORCH_DEVICE='gpu:0' is not usable here"));
    unsetenv("CTORCH_DEVICE");
    free(out);
}

static void bad_commands_fail_with_usage(void **state)
{
    (void)state;
    int status;
    free(run_tool("frobnicate", &status));
    assert_int_equal(status, 2);
    free(run_tool("info --yaml", &status));
    assert_int_equal(status, 2);
    free(run_tool("", &status));
    assert_int_equal(status, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(info_json_lists_backends_and_devices),
        cmocka_unit_test(info_json_describes_the_cpu_and_its_matrix_engines),
        cmocka_unit_test(bench_names_the_cpu_in_its_header),
        cmocka_unit_test(info_prints_a_table),
        cmocka_unit_test(the_variable_chooses_the_best_device),
        cmocka_unit_test(bad_commands_fail_with_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
