/* `ctorch train --model gpt` from the command line, step for step as llm.c's train_gpt2.c: its
 * tiny checkpoint (--init) on its token file in its sequential order (--data-order sequential),
 * with its AdamW (--lr 1e-4 --betas 0.9,0.999, no weight decay, no clipping, no schedule) and its
 * separate validation file (--val-data, 5 batches every 10 steps), prints the train losses of
 * steps 0..40 and the val losses after steps 10, 20, 30, 40 that train_gpt2.c printed
 * (tests/models/fixtures/llmc_tiny, as tests/models/test_gpt_trains_as_llmc.c checks the library).
 * llm.c prints 6 digits: relative 1e-5 on the CPU, 1e-4 on an OpenCL device. And --betas and
 * --val-data given wrongly exit 2 with a message naming them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_test.h"

#define FIXTURE CTORCH_SOURCE_DIR "/tests/models/fixtures/llmc_tiny"
#define LLMC_RUN                                                                                              \
    "train --model gpt --init '" FIXTURE "/gpt2_tiny.bin' --data '" FIXTURE "/tiny_shakespeare_train.bin' "    \
    "--val-data '" FIXTURE "/tiny_shakespeare_val.bin' --data-order sequential --batch-size 4 --seq-len 64 "   \
    "--steps 41 --lr 1e-4 --betas 0.9,0.999 --weight-decay 0 --clip-grad 0 --lr-schedule none "              \
    "--eval-every 10 --eval-batches 5 --sample 0 --json"

enum { STEPS = 41 };

static cJSON *reference(void)
{
    FILE *f = fopen(FIXTURE "/train_gpt2_losses.json", "rb");
    assert_non_null(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *ref = cJSON_Parse(text);
    assert_non_null(ref);
    return ref;
}

static void check_close(const char *what, int step, double value, double expected, double tolerance,
                        double *worst)
{
    double relative = fabs(value - expected) / fabs(expected);
    if (!(relative <= tolerance))
        fail_msg("%s of step %d: ctorch's %.6f, llm.c's %.6f (relative %.2e, allowed %.0e)", what, step, value,
                 expected, relative, tolerance);
    if (relative > *worst) *worst = relative;
}

/* Runs the command with LLMC_RUN --device device (and extra) and compares its JSON lines with
 * llm.c's losses. */
static void trains_as_llmc(const char *device, const char *extra, double tolerance)
{
    char args[1536];
    snprintf(args, sizeof args, LLMC_RUN " --device %s %s", device, extra);
    int exit_status;
    char *out = run_tool(args, &exit_status);
    if (exit_status != 0) fail_msg("exit %d: %s", exit_status, out);
    cJSON *ref = reference();
    const cJSON *train_losses = cJSON_GetObjectItem(ref, "train_losses"), *val_losses = cJSON_GetObjectItem(ref, "val_losses");
    assert_int_equal(cJSON_GetArraySize(train_losses), STEPS);
    assert_int_equal(cJSON_GetArraySize(val_losses), 5);
    int steps = 0, vals = 0;
    double worst = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *json = cJSON_Parse(line);
        if (!json || !cJSON_GetObjectItem(json, "step")) {
            cJSON_Delete(json);
            continue;
        }
        int step = (int)number(json, "step");
        assert_int_equal(step, steps);
        check_close("the train loss", step, number(json, "loss"),
                    cJSON_GetArrayItem(train_losses, step)->valuedouble, tolerance, &worst);
        assert_true(fabs(number(json, "lr") - 1e-4) < 1e-12);
        /* llm.c's val loss at step s (s = 10, 20, ...) is after s updates: ours after step s - 1 */
        if (cJSON_GetObjectItem(json, "val_loss") && (step + 1) % 10 == 0) {
            check_close("the val loss", step + 1, number(json, "val_loss"),
                        cJSON_GetArrayItem(val_losses, (step + 1) / 10)->valuedouble, tolerance, &worst);
            vals++;
        }
        steps++;
        cJSON_Delete(json);
    }
    assert_int_equal(steps, STEPS);
    assert_int_equal(vals, 4);
    printf("%s: largest relative difference from llm.c %.2e\n", device, worst);
    cJSON_Delete(ref);
    free(out);
}

static void the_command_trains_as_llmc_on_the_cpu(void **state)
{
    (void)state;
    trains_as_llmc("cpu", "", 1e-5);
}

static void the_command_trains_as_llmc_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 1) skip();
    trains_as_llmc("opencl:0", "", 1e-4);
}

static void expect_usage_error(const char *args, const char *needle)
{
    int exit_status;
    char *out = run_tool(args, &exit_status);
    assert_int_equal(exit_status, 2);
    if (!strstr(out, needle)) fail_msg("'%s' is not in: %s", needle, out);
    assert_null(strstr(out, "\"step\""));
    free(out);
}

static void bad_betas_and_val_data_exit_2_naming_them(void **state)
{
    (void)state;
    expect_usage_error("train --model gpt --betas 0.9", "--betas '0.9' is not B1,B2");
    expect_usage_error("train --model gpt --betas 0.9,1", "--betas '0.9,1'");
    expect_usage_error("train --model gpt --betas -0.1,0.99", "--betas '-0.1,0.99'");
    expect_usage_error("train --model gpt --betas 0.9,0.99x", "--betas '0.9,0.99x'");
    expect_usage_error("train --model gpt --val-data '" FIXTURE "/tiny_shakespeare_val.bin' --val-fraction 0.2",
                       "leave out --val-fraction");
    expect_usage_error("train --model gpt --val-data /nonexistent/val.bin", "--val-data");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_command_trains_as_llmc_on_the_cpu),
        cmocka_unit_test(the_command_trains_as_llmc_on_opencl),
        cmocka_unit_test(bad_betas_and_val_data_exit_2_naming_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
