/* ct_dist_agree_on_settings: the ranks compare the settings that decide how many collectives they
 * will call, once at the start, so that ranks started differently fail at once, naming the
 * setting and the values, instead of waiting in a collective another rank never calls.
 *
 * The common case costs the collective's usual agreement (every rank is in this call, with the
 * same number of settings) and one MPI_Allreduce of two 62-bit digests per setting (of its name
 * and its value) and their negations under MPI_MAX, as agreement.c does: equal digests on every
 * rank give equal extremes. Only the settings that differ are then gathered, as text, to name
 * them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/dist_internal.h"

#define FN "ct_dist_agree_on_settings"
#define NAMED_MAX 4    /* settings named in one message */
#define VALUES_MAX 4   /* distinct values shown for one setting */
#define RANKS_SHOWN 8  /* ranks listed for one value */

/* FNV-1a over text (cut as it is compared), in 62 bits so that its negation is an int64. */
static int64_t digest(const char *text, uint64_t h)
{
    for (size_t i = 0; text && text[i] && i < CT_DIST_SETTING_VALUE_MAX - 1; i++) {
        h ^= (unsigned char)text[i];
        h *= 1099511628211ULL;
    }
    return (int64_t)(h >> 2);
}

static int64_t setting_digest(const ct_dist_setting *s)
{
    return digest(s->value, (uint64_t)digest(s->name, 14695981039346656037ULL) ^ 0x5bd1e995ULL);
}

static ct_status check_arguments(const ct_dist_setting *settings, int count)
{
    if (count < 0 || count > CT_DIST_SETTINGS_MAX)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": count is %d; give 0 to %d settings", count,
                        CT_DIST_SETTINGS_MAX);
    if (count > 0 && !settings) return ct_null_argument(FN, "settings"), ct_last_error();
    for (int i = 0; i < count; i++)
        if (!settings[i].name || !settings[i].value)
            return ct_error(CT_ERR_NULL_ARGUMENT, FN ": settings[%d] has a NULL %s", i,
                            settings[i].name ? "value" : "name");
    return CT_OK;
}

/* Appends to text which ranks have which value of one setting: "rank 0 has '3', rank 1 has '1'". */
static void describe_values(char *text, size_t size, const char (*values)[CT_DIST_SETTING_VALUE_MAX], int world)
{
    int firsts[VALUES_MAX], distinct = 0, more_values = 0;
    for (int r = 0; r < world; r++) {
        bool seen = false;
        for (int v = 0; v < distinct && !seen; v++) seen = strcmp(values[firsts[v]], values[r]) == 0;
        if (seen) continue;
        if (distinct < VALUES_MAX) firsts[distinct++] = r;
        else more_values++;
    }
    for (int v = 0; v < distinct; v++) {
        int holders = 0;
        for (int r = 0; r < world; r++) holders += strcmp(values[r], values[firsts[v]]) == 0;
        size_t used = strlen(text);
        if (used < size) snprintf(text + used, size - used, "%s%s ", v ? ", " : "", holders == 1 ? "rank" : "ranks");
        for (int r = 0, shown = 0; r < world && shown < RANKS_SHOWN; r++) {
            if (strcmp(values[r], values[firsts[v]]) != 0) continue;
            used = strlen(text);
            if (used < size) snprintf(text + used, size - used, "%s%d", shown ? ", " : "", r);
            shown++;
        }
        used = strlen(text);
        if (holders > RANKS_SHOWN && used < size)
            snprintf(text + used, size - used, " and %d more", holders - RANKS_SHOWN);
        used = strlen(text);
        if (used < size)
            snprintf(text + used, size - used, " %s '%s'", holders == 1 ? "has" : "have", values[firsts[v]]);
    }
    size_t used = strlen(text);
    if (more_values > 0 && used < size) snprintf(text + used, size - used, ", and other ranks have other values");
}

/* Every rank gathers the values of the settings that differ and records the same message. */
static ct_status explain(ct_dist_group *group, const ct_dist_setting *settings, const int *differing, int named,
                         int count_differing)
{
    size_t record = (size_t)named * CT_DIST_SETTING_VALUE_MAX;
    char *mine = calloc(1, record), *all = calloc((size_t)group->world_size, record);
    if (!mine || !all) {
        free(mine);
        free(all);
        /* Every rank is here; one without memory would leave the others waiting in the gather. */
        MPI_Abort(group->comm, 1);
    }
    for (int k = 0; k < named; k++)
        snprintf(mine + (size_t)k * CT_DIST_SETTING_VALUE_MAX, CT_DIST_SETTING_VALUE_MAX, "%s",
                 settings[differing[k]].value);
    MPI_Request request;
    int code = MPI_Iallgather(mine, (int)record, MPI_BYTE, all, (int)record, MPI_BYTE, group->comm, &request);
    if (code != MPI_SUCCESS) {
        free(mine);
        free(all);
        return ct_dist_mpi_fail(FN, "MPI_Iallgather", code);
    }
    if (ct_dist_wait(group, &request, "MPI_Iallgather") != CT_OK) return ct_last_error(); /* MPI keeps them */
    char text[2048] = "";
    char (*values)[CT_DIST_SETTING_VALUE_MAX] = malloc((size_t)group->world_size * CT_DIST_SETTING_VALUE_MAX);
    for (int k = 0; k < named && values; k++) {
        for (int r = 0; r < group->world_size; r++)
            memcpy(values[r], all + (size_t)r * record + (size_t)k * CT_DIST_SETTING_VALUE_MAX,
                   CT_DIST_SETTING_VALUE_MAX);
        size_t used = strlen(text);
        if (used < sizeof text)
            snprintf(text + used, sizeof text - used, "%s%s differs between the ranks: ", k ? "; " : "",
                     settings[differing[k]].name);
        describe_values(text, sizeof text, (const char (*)[CT_DIST_SETTING_VALUE_MAX])values, group->world_size);
    }
    free(values);
    free(mine);
    free(all);
    size_t used = strlen(text);
    if (count_differing > named && used < sizeof text)
        snprintf(text + used, sizeof text - used, "; and %d more settings", count_differing - named);
    return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s; start every rank with the same settings", text);
}

ct_status ct_dist_agree_on_settings(const ct_dist_setting *settings, int count)
{
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    /* A rank with bad arguments still takes part, so that the others fail with its error. The
     * number of settings is compared as the descriptor's shape. */
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_AGREE_SETTINGS, -1, -1, NULL);
    d.status = check_arguments(settings, count);
    d.ndim = 1;
    d.shape[0] = count;
    ct_status status = ct_dist_agree(group, &d);
    if (status != CT_OK) {
        ct_dist_collective_end(group);
        return status;
    }
    /* Static: after a timeout MPI may still write into it (one collective at a time). */
    static int64_t extremes[2 * CT_DIST_SETTINGS_MAX];
    for (int i = 0; i < count; i++) {
        extremes[i] = setting_digest(&settings[i]);
        extremes[count + i] = -extremes[i];
    }
    MPI_Request request;
    int code = MPI_Iallreduce(MPI_IN_PLACE, extremes, 2 * count, MPI_INT64_T, MPI_MAX, group->comm, &request);
    status = code != MPI_SUCCESS ? ct_dist_mpi_fail(FN, "MPI_Iallreduce", code)
                                 : ct_dist_wait(group, &request, "MPI_Iallreduce");
    if (status == CT_OK) {
        int differing[NAMED_MAX], named = 0, count_differing = 0;
        for (int i = 0; i < count; i++) {
            if (extremes[i] == -extremes[count + i]) continue;
            if (named < NAMED_MAX) differing[named++] = i;
            count_differing++;
        }
        if (count_differing > 0) status = explain(group, settings, differing, named, count_differing);
    }
    ct_dist_collective_end(group);
    return status;
}
