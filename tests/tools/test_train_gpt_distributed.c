/* `mpirun -np 2 ctorch train --model gpt` (DistributedDataParallel, each rank on its own windows)
 * gives, step for step, the losses and the validation loss of one process with the doubled batch,
 * in the random and the sequential order and with gradient accumulation on the ranks too; rank 0
 * alone prints. The program starts the jobs itself (CTORCH_MPIRUN, from tests/mpi_tests.cmake). */
#include <math.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "tool_test.h"

enum { STEPS = 4 };

#define TINY "train --model gpt --layers 1 --heads 2 --channels 32 --seq-len 16 --eval-batches 2 --steps 4 " \
             "--json --seed 7"

typedef struct gpt_run {
    double loss[STEPS];
    int steps, summaries;
    double val_loss;
} gpt_run;

static gpt_run parse(const char *out)
{
    gpt_run run = {0};
    for (const char *line = out; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        const char *end = strchr(line, '\n');
        cJSON *json = cJSON_ParseWithLength(line, end ? (size_t)(end - line) : strlen(line));
        if (!json) continue;
        if (cJSON_GetObjectItem(json, "step")) {
            if (run.steps >= STEPS) fail_msg("more than %d step lines: %s", STEPS, out);
            run.loss[run.steps++] = number(json, "loss");
        } else if (cJSON_GetObjectItem(json, "val_loss")) {
            run.summaries++;
            run.val_loss = number(json, "val_loss");
        }
        cJSON_Delete(json);
    }
    return run;
}

static gpt_run run_command(const char *command)
{
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s: status %d: %s", command, status, out);
    gpt_run run = parse(out);
    if (run.steps != STEPS || run.summaries != 1) fail_msg("%s: one line per step and one summary: %s", command, out);
    free(out);
    return run;
}

/* 2 ranks with job_args against one process with alone_args. */
static void compare(const char *job_args, const char *alone_args)
{
    char command[2048];
    snprintf(command, sizeof command, "CTORCH_DIST_DEVICE=cpu timeout --kill-after=10 120 %s 2 %s '%s' %s %s 2>&1",
             CTORCH_MPIRUN, CTORCH_MPIRUN_FLAGS, CTORCH_TOOL_PATH, TINY, job_args);
    gpt_run job = run_command(command);
    snprintf(command, sizeof command, "'%s' %s --device cpu %s 2>&1", CTORCH_TOOL_PATH, TINY, alone_args);
    gpt_run alone = run_command(command);
    for (int i = 0; i < STEPS; i++)
        if (!(fabs(job.loss[i] - alone.loss[i]) <= 1e-5 * alone.loss[i]))
            fail_msg("%s: step %d: loss %.9g on 2 ranks, %.9g alone (%s)", job_args, i, job.loss[i], alone.loss[i],
                     alone_args);
    if (!(fabs(job.val_loss - alone.val_loss) <= 1e-5 * alone.val_loss))
        fail_msg("%s: validation loss %.9g on 2 ranks, %.9g alone", job_args, job.val_loss, alone.val_loss);
}

static void two_ranks_equal_one_process_with_the_doubled_batch(void **state)
{
    (void)state;
    compare("--batch-size 4", "--batch-size 8");
}

static void sequential_order_too(void **state)
{
    (void)state;
    compare("--batch-size 4 --data-order sequential", "--batch-size 8 --data-order sequential");
}

static void gradient_accumulation_on_the_ranks_too(void **state)
{
    (void)state;
    compare("--batch-size 2 --grad-accum 2", "--batch-size 8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_equal_one_process_with_the_doubled_batch),
        cmocka_unit_test(sequential_order_too),
        cmocka_unit_test(gradient_accumulation_on_the_ranks_too),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
