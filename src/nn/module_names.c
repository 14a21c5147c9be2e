/* What a module tree holds: named parameters and buffers, counts, zero_grad, its device and its
 * printout. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module_internal.h"

/* ---- named tensors ---- */

typedef struct collect_context {
    ct_named_tensors *list;
    int64_t capacity;
    bool buffers;
} collect_context;

static bool list_holds(const ct_named_tensors *list, const ct_tensor *t)
{
    for (int64_t i = 0; i < list->count; i++)
        if (list->tensors[i] == t) return true;
    return false;
}

static ct_status collect(ct_module *m, const char *prefix, void *context)
{
    collect_context *c = context;
    const ct_tensor_slots *slots = c->buffers ? &m->buffers : &m->parameters;
    ct_named_tensors *list = c->list;
    for (int i = 0; i < slots->count; i++) {
        if (list_holds(list, slots->tensors[i])) continue; /* shared: listed under its first name */
        if (list->count == c->capacity) {
            int64_t capacity = c->capacity ? c->capacity * 2 : 16;
            char **names = realloc(list->names, sizeof *names * (size_t)capacity);
            if (names) list->names = names;
            ct_tensor **tensors = names ? realloc(list->tensors, sizeof *tensors * (size_t)capacity) : NULL;
            if (!tensors) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to list a module's tensors");
            list->tensors = tensors;
            c->capacity = capacity;
        }
        size_t length = strlen(prefix) + strlen(slots->names[i]) + 1;
        char *name = malloc(length);
        if (!name) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to list a module's tensors");
        snprintf(name, length, "%s%s", prefix, slots->names[i]);
        atomic_fetch_add(&slots->tensors[i]->refcount, 1);
        list->names[list->count] = name;
        list->tensors[list->count++] = slots->tensors[i];
    }
    return CT_OK;
}

static ct_named_tensors *named(const char *function, const ct_module *m, bool buffers)
{
    if (!m) return ct_null_argument(function, "m");
    ct_named_tensors *list = calloc(1, sizeof *list);
    if (!list) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    collect_context context = {list, 0, buffers};
    if (ct_module_visit(m, collect, &context) != CT_OK) {
        ct_named_tensors_free(list);
        return NULL;
    }
    return list;
}

ct_named_tensors *ct_module_named_parameters(const ct_module *m)
{
    return named("ct_module_named_parameters", m, false);
}

ct_named_tensors *ct_module_named_buffers(const ct_module *m)
{
    return named("ct_module_named_buffers", m, true);
}

void ct_named_tensors_free(ct_named_tensors *list)
{
    if (!list) return;
    ct_api_enter(); /* the list's references were never in a scope */
    for (int64_t i = 0; i < list->count; i++) {
        free(list->names[i]);
        ct_release(list->tensors[i]);
    }
    ct_api_return(NULL);
    free(list->names);
    free(list->tensors);
    free(list);
}

int64_t ct_module_parameter_count(const ct_module *m)
{
    ct_named_tensors *list = ct_module_named_parameters(m);
    int64_t count = list ? list->count : 0;
    ct_named_tensors_free(list);
    return count;
}

int64_t ct_module_num_parameters(const ct_module *m)
{
    ct_named_tensors *list = ct_module_named_parameters(m);
    int64_t elements = 0;
    for (int64_t i = 0; list && i < list->count; i++) elements += ct_numel(list->tensors[i]);
    ct_named_tensors_free(list);
    return elements;
}

static ct_status zero_grad(ct_module *m, const char *prefix, void *context)
{
    (void)prefix;
    (void)context;
    for (int i = 0; i < m->parameters.count; i++) ct_zero_grad(m->parameters.tensors[i]);
    return CT_OK;
}

void ct_module_zero_grad(ct_module *m)
{
    if (!m) {
        ct_null_argument("ct_module_zero_grad", "m");
        return;
    }
    ct_module_visit(m, zero_grad, NULL);
}

static ct_status first_device(ct_module *m, const char *prefix, void *context)
{
    (void)prefix;
    ct_tensor *t = m->parameters.count ? m->parameters.tensors[0]
                   : m->buffers.count  ? m->buffers.tensors[0]
                                       : NULL;
    if (!t) return CT_OK;
    *(ct_device *)context = t->storage->device;
    return CT_ERR_INDEX; /* found: stop the walk (not recorded as an error) */
}

ct_device ct_module_device(const ct_module *m)
{
    ct_device device = CT_DEVICE_CPU;
    if (!m) return ct_null_argument("ct_module_device", "m"), device;
    ct_module_visit(m, first_device, &device);
    return device;
}

/* ---- printing ---- */

typedef struct text {
    char *data;
    size_t length, capacity;
    bool failed;
} text;

static void text_append(text *t, const char *fmt, ...) CT_PRINTF(2, 3);

static void text_append(text *t, const char *fmt, ...)
{
    if (t->failed) return;
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(NULL, 0, fmt, args);
    va_end(args);
    if (t->length + (size_t)n + 1 > t->capacity) {
        size_t capacity = (t->length + (size_t)n + 1) * 2;
        char *data = realloc(t->data, capacity);
        if (!data) {
            t->failed = true;
            return;
        }
        t->data = data;
        t->capacity = capacity;
    }
    va_start(args, fmt);
    vsnprintf(t->data + t->length, t->capacity - t->length, fmt, args);
    va_end(args);
    t->length += (size_t)n;
}

static void print_module(text *out, const ct_module *m, int indent)
{
    char *extra = m->describe ? m->describe(m) : NULL;
    text_append(out, "%s(", m->kind);
    if (m->child_count == 0) {
        text_append(out, "%s)", extra ? extra : "");
    } else {
        if (extra && *extra) text_append(out, "\n%*s%s", indent + 2, "", extra);
        for (int i = 0; i < m->child_count; i++) {
            text_append(out, "\n%*s(%s): ", indent + 2, "", m->child_names[i]);
            print_module(out, m->children[i], indent + 2);
        }
        text_append(out, "\n%*s)", indent, "");
    }
    free(extra);
}

char *ct_module_to_string(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_to_string", "m");
    text out = {0};
    print_module(&out, m, 0);
    if (out.failed || !out.data) {
        free(out.data);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_module_to_string: no host memory");
    }
    return out.data;
}
