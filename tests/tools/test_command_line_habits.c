/* What a PyTorch user types first: --version and every command's --help exit 0, stray arguments
 * and a bench FILTER that matches nothing exit 2 with a message, a --map-location naming a device
 * that is not here exits 2 as other bad options do; --json lines are valid JSON when a number is
 * not finite (null, and "<name>_nonfinite"); training that diverges stops with exit 1 naming the
 * epoch and saves nothing, unless --allow-nonfinite; a misspelt option names the one meant, in
 * every command, and lists them all only when none is near. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "support/fresh_path.h"
#include "support/run_command.h"
#include "test_common.h"

/* Runs the tool with args; stdout alone, or with stderr joined (both). */
static char *run_tool(const char *args, bool both, int *exit_status)
{
    char command[2048];
    snprintf(command, sizeof command, "'%s' %s %s", CTORCH_TOOL_PATH, args, both ? "2>&1" : "2>/dev/null");
    return ct_test_run_command(command, exit_status);
}

static void expect(const char *args, int status, const char *part)
{
    int got;
    char *out = run_tool(args, true, &got);
    if (got != status) fail_msg("ctorch %s: status %d, want %d: %s", args, got, status, out);
    if (part && !strstr(out, part)) fail_msg("ctorch %s: the output lacks '%s': %s", args, part, out);
    free(out);
}

static void version_and_help_exit_zero(void **state)
{
    (void)state;
    expect("--version", 0, "ctorch " CT_VERSION_STRING);
    expect("version", 0, "ctorch " CT_VERSION_STRING);
    expect("--help", 0, "usage: ctorch");
    expect("info --help", 0, "usage: ctorch info");
    expect("bench --help", 0, "usage: ctorch bench");
    expect("train --help", 0, "usage: ctorch train");
    expect("eval --help", 0, "usage: ctorch eval");
    expect("train --model gpt --help", 0, "usage: ctorch train --model gpt");
    expect("generate --help", 0, "usage: ctorch generate");
}

static void stray_arguments_and_empty_filters_exit_two(void **state)
{
    (void)state;
    expect("version extra", 2, "takes no arguments, not 'extra'");
    expect("train --model gpt --epochs 3", 2, "unknown option '--epochs' for --model gpt");
    expect("generate --prompt hi", 2, "--checkpoint FILE is needed");
    expect("--version extra", 2, "takes no arguments");
    expect("bench --quick no_such_benchmark_anywhere", 2, "FILTER 'no_such_benchmark_anywhere' matched no benchmark");
    expect("bench --json --quick '^nothing$,also_nothing'", 2, "matched no benchmark");
}

static void a_map_location_to_a_missing_device_exits_two(void **state)
{
    (void)state;
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_habits_test_");
    char args[512];
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --save %s", path);
    expect(args, 0, NULL);
    /* cuda:7 is not here (no CUDA, or fewer GPUs); opencl:9 neither. */
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --map-location cpu=cuda:7", path);
    expect(args, 2, "cuda:7");
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --map-location opencl:0=cuda:7", path);
    expect(args, 2, "map_location 'opencl:0=cuda:7'");
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s --map-location cpu=opencl:9", path);
    expect(args, 2, "opencl:9");
    unlink(path);
}

/* A CSV of 4 features and 2 classes whose values (1e30) make SGD with a large step diverge in its
 * first epoch: the loss becomes inf or nan. */
static void write_diverging_csv(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int row = 0; row < 64; row++)
        fprintf(f, "%g,%g,%g,%g,%d\n", row % 2 ? 1e30 : -1e30, row % 3 ? 1e30 : -2e30, 3e30, row % 5 ? -1e30 : 1e30,
                row % 2);
    fclose(f);
}

/* Every line of out is JSON; the epoch lines' loss is null with loss_nonfinite set. Returns the
 * number of epoch lines. */
static int check_json_lines(const char *out)
{
    int epochs = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        cJSON *json = cJSON_ParseWithLength(line, length);
        if (!json) fail_msg("not a JSON line: %.*s", (int)length, line);
        if (cJSON_GetObjectItem(json, "epoch")) {
            epochs++;
            const char *flag = cJSON_GetStringValue(cJSON_GetObjectItem(json, "loss_nonfinite"));
            if (!cJSON_IsNull(cJSON_GetObjectItem(json, "loss")) || !flag ||
                (strcmp(flag, "nan") != 0 && strcmp(flag, "inf") != 0))
                fail_msg("the loss is not null with its flag: %.*s", (int)length, line);
        }
        cJSON_Delete(json);
        line += length + (end ? 1 : 0);
    }
    return epochs;
}

static void diverging_training_stops_and_saves_nothing(void **state)
{
    (void)state;
    char csv[] = "/tmp/ctorch-diverging-XXXXXX.csv", path[256], args[1024];
    int fd = mkstemps(csv, 4);
    assert_true(fd >= 0);
    close(fd);
    write_diverging_csv(csv);
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_habits_test_");
    const char *common = "train --device cpu --optimizer sgd --lr 100 --batch-size 4 --epochs 3 --json";
    snprintf(args, sizeof args, "%s --data %s --save %s", common, csv, path);
    int status;
    char *out = run_tool(args, false, &status);
    assert_int_equal(status, 1);
    assert_int_equal(check_json_lines(out), 1); /* the first epoch, then the stop */
    free(out);
    struct stat st;
    if (stat(path, &st) == 0) fail_msg("a diverged model was saved to %s", path);
    expect(args, 1, "epoch 1 of 3: the mean training loss is ");
    expect(args, 1, "--allow-nonfinite");
    /* Asked to go on: every epoch, a valid JSON summary, and the file. */
    snprintf(args, sizeof args, "%s --data %s --save %s --allow-nonfinite", common, csv, path);
    out = run_tool(args, false, &status);
    if (status != 0) fail_msg("status %d: %s", status, out);
    assert_int_equal(check_json_lines(out), 3);
    const char *summary = strstr(out, "{\"device\"");
    if (!summary || !strstr(summary, "\"final_loss\":null,\"final_loss_nonfinite\":")) fail_msg("%s", out);
    free(out);
    assert_int_equal(stat(path, &st), 0);
    unlink(path);
    unlink(csv);
}

/* Exit 2 and "did you mean" the option meant, without the list; out must lack "the options are". */
static void expect_suggestion(const char *args, const char *meant)
{
    int got;
    char *out = run_tool(args, true, &got);
    char want[128];
    snprintf(want, sizeof want, "did you mean %s?", meant);
    if (got != 2) fail_msg("ctorch %s: status %d, want 2: %s", args, got, out);
    if (!strstr(out, want) || strstr(out, "the options are"))
        fail_msg("ctorch %s: want only '%s': %s", args, want, out);
    free(out);
}

static void a_misspelt_option_names_the_one_meant(void **state)
{
    (void)state;
    expect_suggestion("train --lr-schedul cosine", "--lr-schedule");
    expect_suggestion("train --epohcs=3", "--epochs");   /* two letters swapped, with =value */
    expect_suggestion("train --batch 8", "--batch-size"); /* the only option it begins */
    expect_suggestion("train --sacle 1", "--scale");
    expect_suggestion("train --model gpt --step 3", "--steps");
    expect_suggestion("eval --chekpoint x.ct", "--checkpoint");
    expect_suggestion("eval --map_location cpu", "--map-location");
    expect_suggestion("bench --quik", "--quick");
    expect_suggestion("info --jsn", "--json");
    expect_suggestion("generate --top_k 3", "--top-k");
    expect_suggestion("convert --hedas 2 a b", "--heads");
    /* nothing near: every option, as before */
    expect("train --frobnicate", 2, "the options are --model, --epochs");
    expect("train --model gpt --epochs 3", 2, "for --model gpt; the options are --data");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_and_help_exit_zero),
        cmocka_unit_test(stray_arguments_and_empty_filters_exit_two),
        cmocka_unit_test(a_map_location_to_a_missing_device_exits_two),
        cmocka_unit_test(diverging_training_stops_and_saves_nothing),
        cmocka_unit_test(a_misspelt_option_names_the_one_meant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
