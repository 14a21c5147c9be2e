/* What the tests of the `ctorch` command share: running it, reading its JSON lines and its
 * checkpoints, and recording every step's loss of its training code. */
#ifndef CT_TOOL_TEST_H
#define CT_TOOL_TEST_H

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "support/run_command.h"
#include "test_common.h"

/* Runs the tool with args, stderr joined to stdout; returns the output (malloc'ed) and the
 * exit status. */
static inline char *run_tool(const char *args, int *exit_status)
{
    char command[2048];
    snprintf(command, sizeof command, "'%s' %s 2>&1", CTORCH_TOOL_PATH, args);
    return ct_test_run_command(command, exit_status);
}

/* The last line of out parsed as JSON (the caller deletes it). */
static inline cJSON *last_json_line(const char *out)
{
    size_t length = strlen(out);
    while (length > 0 && out[length - 1] == '\n') length--;
    size_t start = length;
    while (start > 0 && out[start - 1] != '\n') start--;
    cJSON *json = cJSON_ParseWithLength(out + start, length - start);
    if (!json) fail_msg("the last line is not JSON: %s", out);
    return json;
}

static inline double number(const cJSON *json, const char *key)
{
    cJSON *item = cJSON_GetObjectItem(json, key);
    if (!cJSON_IsNumber(item)) fail_msg("'%s' is not a number", key);
    return cJSON_GetNumberValue(item);
}

static inline const char *string(const cJSON *json, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(json, key));
    if (!s) fail_msg("'%s' is not a string", key);
    return s;
}

/* The entries of a `ctorch train --save` file that are the model's (beside the optimizer's and
 * the generators' state); none may carry DataParallel's "module." prefix. */
static inline int64_t checkpoint_model_entries(const ct_state_dict *sd)
{
    int64_t model_entries = 0;
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        assert_null(strstr(name, "module."));
        if (strncmp(name, "optimizer.", 10) && strcmp(name, "ctorch.rng_state")) model_entries++;
    }
    return model_entries;
}

/* Every step's loss of a training run, in order: a ct_train_observer's context for record_loss. */
enum { STEP_LOSSES_CAPACITY = 1024 };
typedef struct step_losses {
    double values[STEP_LOSSES_CAPACITY];
    int64_t count;
} step_losses;

/* A ct_train_observer's on_step: appends the step's loss to the step_losses of context. */
static inline void record_loss(void *context, int epoch, int64_t step, int64_t steps, const ct_tensor *loss)
{
    (void)epoch, (void)step, (void)steps;
    step_losses *losses = context;
    assert_true(losses->count < STEP_LOSSES_CAPACITY);
    assert_int_equal(ct_item(loss, &losses->values[losses->count]), CT_OK);
    losses->count++;
}

#endif
