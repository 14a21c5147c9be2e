/* `ctorch bench optim_step` reports, on the CPU and on an OpenCL device, the digits mlp's Adam
 * step fused against per parameter: 1 launch against 8 (2 per parameter, 4 parameters), and the
 * host's microseconds per step of both. */
#include <stdlib.h>

#include "tool_test.h"

static void expect_rows(const char *device)
{
    char args[256];
    snprintf(args, sizeof args, "bench --json --quick --device %s '^optim_step_launches_mlp$'", device);
    int status = -1;
    char *out = run_tool(args, &status);
    assert_int_equal(status, 0);
    cJSON *row = last_json_line(out);
    assert_string_equal(string(row, "device"), device);
    assert_true(number(row, "value") == 1.0);
    assert_true(number(row, "baseline") == 8.0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(row, "met")));
    cJSON_Delete(row);
    free(out);
    snprintf(args, sizeof args, "bench --json --quick --device %s '^optim_step_host_us_mlp$'", device);
    out = run_tool(args, &status);
    assert_int_equal(status, 0);
    row = last_json_line(out);
    assert_string_equal(string(row, "unit"), "us");
    assert_true(number(row, "value") > 0.0 && number(row, "baseline") > 0.0);
    cJSON_Delete(row);
    free(out);
}

static void on_the_cpu(void **state)
{
    (void)state;
    expect_rows("cpu");
}

static void on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    expect_rows("opencl:0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(on_the_cpu),
        cmocka_unit_test(on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
