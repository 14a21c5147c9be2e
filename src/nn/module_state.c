/* state_dict and load_state_dict of a module tree.
 *
 * The names and order are PyTorch's: each module's parameters, then its buffers, then each
 * child's, depth first, as dotted names; a tensor reachable under two names appears under both.
 * Loading copies values into the module's existing tensors (on their device, in their dtype), so
 * the module and whoever shares its parameters (an optimizer) keep the same tensor objects. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/io.h"
#include "nn/module_internal.h"

/* ---- the module's entries ---- */

typedef struct entry {
    char *name;
    ct_tensor *tensor; /* borrowed from the module */
    bool is_parameter;
} entry;

typedef struct entries {
    entry *items;
    int64_t count, capacity;
} entries;

static ct_status add_entries(entries *list, const char *prefix, const ct_tensor_slots *slots, bool parameters)
{
    for (int i = 0; i < slots->count; i++) {
        if (list->count == list->capacity) {
            int64_t capacity = list->capacity ? list->capacity * 2 : 16;
            entry *items = realloc(list->items, sizeof *items * (size_t)capacity);
            if (!items) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to list a module's state");
            list->items = items;
            list->capacity = capacity;
        }
        size_t length = strlen(prefix) + strlen(slots->names[i]) + 1;
        char *name = malloc(length);
        if (!name) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to list a module's state");
        snprintf(name, length, "%s%s", prefix, slots->names[i]);
        list->items[list->count++] = (entry){name, slots->tensors[i], parameters};
    }
    return CT_OK;
}

static ct_status collect(ct_module *m, const char *prefix, void *context)
{
    ct_status status = add_entries(context, prefix, &m->parameters, true);
    return status == CT_OK ? add_entries(context, prefix, &m->buffers, false) : status;
}

static void entries_free(entries *list)
{
    for (int64_t i = 0; i < list->count; i++) free(list->items[i].name);
    free(list->items);
}

/* ---- state_dict ---- */

ct_state_dict *ct_module_state_dict(const ct_module *m, const char *prefix)
{
    const char *function = "ct_module_state_dict";
    if (!m) return ct_null_argument(function, "m");
    entries list = {0};
    ct_state_dict *sd = NULL;
    ct_api_enter();
    ct_status status = ct_module_visit(m, collect, &list);
    if (status == CT_OK) {
        sd = ct_state_dict_create();
        if (!sd) status = ct_last_error();
    }
    for (int64_t i = 0; status == CT_OK && i < list.count; i++) {
        /* Detached views, as PyTorch's state_dict holds t.detach(): the same data, no graph. */
        ct_tensor *view = ct_detach(list.items[i].tensor);
        status = view ? ct_state_dict_add(sd, list.items[i].name, view) : ct_last_error();
        ct_release(view);
    }
    if (status == CT_OK && prefix && *prefix) status = ct_state_dict_add_prefix(sd, prefix);
    ct_api_return(NULL);
    entries_free(&list);
    if (status != CT_OK) {
        ct_state_dict_free(sd);
        return NULL;
    }
    return sd;
}

/* ---- load_state_dict ---- */

/* A one-line report that keeps to a fixed buffer: names beyond the room are counted. */
typedef struct report {
    char text[CT_LOAD_REPORT_MAX];
    size_t length;
    int64_t dropped; /* names left out for lack of room */
} report;

static void report_add(report *r, const char *fmt, ...) CT_PRINTF(2, 3);

static void report_add(report *r, const char *fmt, ...)
{
    const size_t reserve = 48; /* room for the closing "(and N more)" */
    char piece[512];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(piece, sizeof piece, fmt, args);
    va_end(args);
    if (n < 0 || r->length + (size_t)n + reserve >= sizeof r->text) {
        r->dropped++;
        return;
    }
    memcpy(r->text + r->length, piece, (size_t)n + 1);
    r->length += (size_t)n;
}

static bool same_shape(const ct_tensor *a, const ct_tensor *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

/* Copies src's values into the module's tensor dst, converting device and dtype. */
static ct_status load_into(ct_tensor *dst, const ct_tensor *src)
{
    ct_to_options options = ct_to_options_default(dst->storage->device);
    options.dtype = dst->dtype;
    ct_tensor *converted = ct_to_with(src, &options);
    ct_status status = converted ? ct_copy_(dst, converted) : ct_last_error();
    ct_release(converted);
    return status;
}

/* Do all unexpected names start with "module." and name an expected key without it? That is a
 * checkpoint of a DataParallel/DDP-wrapped model. */
static bool looks_wrapped(const ct_state_dict *sd, const entries *list, const bool *expected)
{
    const char *prefix = "module.";
    int64_t found = 0;
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        if (expected[i]) continue;
        const char *name = ct_state_dict_name_at(sd, i);
        if (strncmp(name, prefix, strlen(prefix))) return false;
        bool known = false;
        for (int64_t k = 0; k < list->count && !known; k++)
            known = !strcmp(list->items[k].name, name + strlen(prefix));
        if (!known) return false;
        found++;
    }
    return found > 0;
}

ct_status ct_module_load_state_dict(ct_module *m, const ct_state_dict *sd, bool strict,
                                    ct_load_report *out)
{
    const char *function = "ct_module_load_state_dict";
    if (out) memset(out, 0, sizeof *out);
    if (!m) return ct_null_argument(function, "m"), ct_last_error();
    if (!sd) return ct_null_argument(function, "sd"), ct_last_error();
    entries list = {0};
    ct_status status = ct_module_visit(m, collect, &list);
    int64_t sd_count = ct_state_dict_count(sd);
    int64_t *source = malloc(sizeof *source * (size_t)(list.count ? list.count : 1)); /* per entry */
    bool *expected = calloc((size_t)(sd_count ? sd_count : 1), sizeof *expected);     /* per sd name */
    if (status == CT_OK && (!source || !expected))
        status = ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    if (status != CT_OK) {
        free(source);
        free(expected);
        entries_free(&list);
        return status;
    }

    ct_api_enter();
    ct_no_grad_push();
    ct_load_report counts = {0};
    report missing = {0}, unexpected = {0}, mismatched = {0};
    char a[256], b[256];
    for (int64_t k = 0; k < list.count; k++) {
        source[k] = ct_state_dict_find(sd, list.items[k].name);
        if (source[k] < 0) {
            counts.missing++;
            report_add(&missing, "%s\"%s\"", counts.missing > 1 ? ", " : "", list.items[k].name);
            continue;
        }
        expected[source[k]] = true;
        ct_tensor *t = ct_state_dict_tensor_at(sd, source[k]);
        if (!same_shape(t, list.items[k].tensor)) {
            counts.mismatched++;
            report_add(&mismatched, "%ssize mismatch for %s: copying a param with shape %s from "
                       "checkpoint, the shape in current model is %s", counts.mismatched > 1 ? "; " : "",
                       list.items[k].name, ct_shape_format(t->shape, t->ndim, a, sizeof a),
                       ct_shape_format(list.items[k].tensor->shape, list.items[k].tensor->ndim, b, sizeof b));
            source[k] = -1;
        }
        ct_release(t);
    }
    for (int64_t i = 0; i < sd_count; i++)
        if (!expected[i]) {
            counts.unexpected++;
            report_add(&unexpected, "%s\"%s\"", counts.unexpected > 1 ? ", " : "",
                       ct_state_dict_name_at(sd, i));
        }

    /* The one-line message, PyTorch's wording. */
    report message = {0};
    report_add(&message, "Error(s) in loading state_dict for %s:", m->kind);
    if (counts.missing)
        report_add(&message, " Missing key(s) in state_dict: %s%s.", missing.text,
                   missing.dropped ? " (and more)" : "");
    if (counts.unexpected)
        report_add(&message, " Unexpected key(s) in state_dict: %s%s.", unexpected.text,
                   unexpected.dropped ? " (and more)" : "");
    if (counts.mismatched)
        report_add(&message, " %s%s.", mismatched.text, mismatched.dropped ? " (and more)" : "");
    if (counts.unexpected && looks_wrapped(sd, &list, expected))
        report_add(&message, " (The checkpoint's names start with 'module.', as a DataParallel or "
                   "DDP model saves them: ct_state_dict_strip_prefix(sd, \"module.\") removes it.)");
    bool clean = !counts.missing && !counts.unexpected && !counts.mismatched;

    if (strict && !clean) {
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s", function, message.text);
    } else {
        for (int64_t k = 0; status == CT_OK && k < list.count; k++) {
            if (source[k] < 0) continue;
            ct_tensor *t = ct_state_dict_tensor_at(sd, source[k]);
            status = t ? load_into(list.items[k].tensor, t) : ct_last_error();
            ct_release(t);
            if (status == CT_OK) counts.loaded++;
        }
        if (status == CT_OK && !clean)
            ct_log_message(CT_LOG_WARN, "%s (strict=false): loaded %lld of %lld tensors. %s", function,
                           (long long)counts.loaded, (long long)list.count, message.text);
    }
    if (!clean) snprintf(counts.message, sizeof counts.message, "%s", message.text);
    ct_no_grad_pop();
    ct_api_return(NULL);
    if (out) *out = counts;
    free(source);
    free(expected);
    entries_free(&list);
    return status;
}
