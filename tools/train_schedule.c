/* `--lr-schedule`: the syntax (train.h), and the library's scheduler it makes for a run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

#define SYNTAX "step:STEP[:GAMMA], cosine[:ETA_MIN], onecycle[:MAX_LR] or warmup:N[:START]"

static const char *const kind_names[] = {"none", "step", "cosine", "onecycle", "warmup"};

enum { FIELD_MAX = 64 };

/* The fields of text after the name, split at ':' into at most max (counted in *count); NULL, or
 * what is wrong with them. */
static const char *split_fields(const char *text, char fields[][FIELD_MAX], int max, int *count)
{
    *count = 0;
    const char *colon = strchr(text, ':');
    while (colon) {
        const char *start = colon + 1;
        colon = strchr(start, ':');
        size_t length = colon ? (size_t)(colon - start) : strlen(start);
        if (*count == max) return "has too many fields";
        if (length >= FIELD_MAX) return "has a field of 64 characters or more (no number needs that many)";
        memcpy(fields[*count], start, length);
        fields[(*count)++][length] = '\0';
    }
    return NULL;
}

static bool parse_number(const char *text, double *out)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(value)) return false;
    *out = value;
    return true;
}

static bool parse_count(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (!*text || *end || errno || value < 1 || value > 100000) return false;
    *out = value;
    return true;
}

static bool fail(const char *text, const char *why)
{
    ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--lr-schedule '%s' %s; give " SYNTAX, text, why);
    return false;
}

bool ct_train_schedule_parse(const char *text, ct_train_schedule *out)
{
    *out = (ct_train_schedule){0};
    size_t name_length = strcspn(text, ":");
    int kind = -1;
    for (int i = 0; i < (int)(sizeof kind_names / sizeof *kind_names); i++)
        if (strlen(kind_names[i]) == name_length && !strncmp(text, kind_names[i], name_length)) kind = i;
    if (kind < 0) return fail(text, "is not a schedule");
    char fields[2][FIELD_MAX];
    int count;
    const char *wrong = split_fields(text, fields, 2, &count);
    if (wrong) return fail(text, wrong);
    ct_train_schedule s = {.kind = (ct_train_schedule_kind)kind};
    switch (s.kind) {
    case CT_TRAIN_SCHEDULE_NONE:
        if (count) return fail(text, "takes no values");
        break;
    case CT_TRAIN_SCHEDULE_STEP:
        s.value = 0.1;
        if (count < 1 || !parse_count(fields[0], &s.epochs))
            return fail(text, "needs STEP, the epochs between decays, from 1 to 100000");
        if (count == 2 && (!parse_number(fields[1], &s.value) || !(s.value > 0)))
            return fail(text, "needs GAMMA, the factor of each decay, above 0");
        break;
    case CT_TRAIN_SCHEDULE_COSINE:
        if (count > 1) return fail(text, "has too many fields");
        if (count == 1 && (!parse_number(fields[0], &s.value) || !(s.value >= 0)))
            return fail(text, "needs ETA_MIN, the last learning rate, a number >= 0");
        break;
    case CT_TRAIN_SCHEDULE_ONECYCLE:
        if (count > 1) return fail(text, "has too many fields");
        if (count == 1 && (!parse_number(fields[0], &s.value) || !(s.value > 0)))
            return fail(text, "needs MAX_LR, the peak learning rate, above 0");
        break;
    case CT_TRAIN_SCHEDULE_WARMUP:
        s.value = 1.0 / 3.0; /* LinearLR's default start_factor */
        if (count < 1 || !parse_count(fields[0], &s.epochs))
            return fail(text, "needs N, the warm-up's epochs, from 1 to 100000");
        if (count == 2 && (!parse_number(fields[1], &s.value) || !(s.value > 0 && s.value <= 1)))
            return fail(text, "needs START, the first epoch's fraction of the rate, above 0 and at most 1");
        break;
    }
    *out = s;
    return true;
}

void ct_train_format_number(double value, char *out, size_t size)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, value);
        if (strtod(out, NULL) == value) return;
    }
}

void ct_train_schedule_format(const ct_train_schedule *s, char *out, size_t size)
{
    char value[32];
    ct_train_format_number(s->value, value, sizeof value);
    switch (s->kind) {
    case CT_TRAIN_SCHEDULE_STEP: snprintf(out, size, "step:%lld:%s", (long long)s->epochs, value); break;
    case CT_TRAIN_SCHEDULE_COSINE: snprintf(out, size, "cosine:%s", value); break;
    case CT_TRAIN_SCHEDULE_ONECYCLE: snprintf(out, size, "onecycle:%s", value); break;
    case CT_TRAIN_SCHEDULE_WARMUP: snprintf(out, size, "warmup:%lld:%s", (long long)s->epochs, value); break;
    default: snprintf(out, size, "none"); break;
    }
}

ct_status ct_train_schedule_create(const ct_train_config *config, ct_optimizer *optimizer, int64_t steps_per_epoch,
                                   ct_lr_scheduler **out)
{
    *out = NULL;
    const ct_train_schedule *s = &config->schedule;
    ct_status status = CT_OK;
    switch (s->kind) {
    case CT_TRAIN_SCHEDULE_NONE: return CT_OK;
    case CT_TRAIN_SCHEDULE_STEP: status = ct_lr_scheduler_step_lr(optimizer, s->epochs, s->value, out); break;
    case CT_TRAIN_SCHEDULE_COSINE:
        status = ct_lr_scheduler_cosine_annealing(optimizer, config->epochs, s->value, out);
        break;
    case CT_TRAIN_SCHEDULE_WARMUP: status = ct_lr_scheduler_linear(optimizer, s->value, 1.0, s->epochs, out); break;
    case CT_TRAIN_SCHEDULE_ONECYCLE: {
        ct_one_cycle_options options = ct_one_cycle_options_default();
        double max_lr = s->value > 0 ? s->value : config->lr;
        status = ct_lr_scheduler_one_cycle(optimizer, max_lr, (int64_t)config->epochs * steps_per_epoch, &options,
                                           out);
        break;
    }
    }
    return status == CT_OK ? CT_OK : ct_train_fail_library("--lr-schedule");
}

bool ct_train_schedule_steps_per_batch(const ct_train_schedule *schedule)
{
    return schedule->kind == CT_TRAIN_SCHEDULE_ONECYCLE;
}
