/* Forwards of several inputs and outputs, and walking a module tree: apply(fn) and
 * named_modules(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module_internal.h"

ct_module *ct_module_create_many(const char *kind, ct_module_forward_many_fn forward, void *data,
                                 void (*free_data)(void *data))
{
    if (!forward) return ct_null_argument("ct_module_create_many", "forward");
    ct_module *m = ct_module_create(kind, NULL, data, free_data);
    if (m) m->forward_many = forward;
    return m;
}

ct_status ct_module_forward_many(ct_module *m, const ct_tensor *const *inputs, int num_inputs, ct_tensor **outputs,
                                 int num_outputs)
{
    /* No CT_API_ENTER: as ct_module_forward, a custom forward's results belong to the caller's scope. */
    static const char *FN = "ct_module_forward_many";
    if (!outputs) return ct_null_argument(FN, "outputs"), ct_last_error();
    for (int k = 0; k < num_outputs; k++) outputs[k] = NULL;
    if (!m) return ct_null_argument(FN, "m"), ct_last_error();
    if (num_inputs < 0 || num_outputs < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %d inputs and %d outputs; a forward takes >= 0 inputs and "
                        "gives >= 1 output", FN, num_inputs, num_outputs);
    if (num_inputs > 0 && !inputs) return ct_null_argument(FN, "inputs"), ct_last_error();
    if (m->forward_many) {
        ct_status status = m->forward_many(m, inputs, num_inputs, outputs, num_outputs);
        if (status == CT_OK) return CT_OK;
        if (ct_last_error() == CT_OK)
            ct_error(status, "%s: the forward of a %s failed with %s and recorded no message", FN, m->kind,
                     ct_status_name(status));
        for (int k = 0; k < num_outputs; k++) {
            ct_release(outputs[k]);
            outputs[k] = NULL;
        }
        return ct_last_error();
    }
    if (!m->forward)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: a %s has no forward of its own; call its children", FN,
                        m->kind);
    if (num_inputs != 1 || num_outputs != 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: a %s takes one input and gives one output; it was given %d "
                        "inputs and asked for %d outputs", FN, m->kind, num_inputs, num_outputs);
    if (!inputs[0]) return ct_null_argument(FN, "inputs[0]"), ct_last_error();
    outputs[0] = m->forward(m, inputs[0]);
    return outputs[0] ? CT_OK : ct_last_error();
}

ct_tensor *ct_module_forward_one_of_many(ct_module *m, const ct_tensor *input)
{
    ct_tensor *output = NULL;
    if (ct_module_forward_many(m, &input, 1, &output, 1) != CT_OK) return NULL;
    if (!output)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_module_forward: the forward of a %s gave no output "
                             "(None) for one input", m->kind);
    return output;
}

/* ---- apply ---- */

/* Modules already visited, so that one reachable twice is visited once. */
typedef struct module_set {
    int64_t count, capacity;
    const ct_module **items;
} module_set;

static bool set_contains(const module_set *set, const ct_module *m)
{
    for (int64_t i = 0; i < set->count; i++)
        if (set->items[i] == m) return true;
    return false;
}

static ct_status set_add(module_set *set, const ct_module *m)
{
    if (set->count == set->capacity) {
        int64_t capacity = set->capacity ? 2 * set->capacity : 16;
        const ct_module **items = realloc(set->items, sizeof *items * (size_t)capacity);
        if (!items) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to walk a module tree");
        set->items = items;
        set->capacity = capacity;
    }
    set->items[set->count++] = m;
    return CT_OK;
}

static ct_status apply(ct_module *m, ct_status (*fn)(ct_module *, void *), void *context, module_set *seen)
{
    if (set_contains(seen, m)) return CT_OK;
    ct_status status = set_add(seen, m);
    for (int i = 0; status == CT_OK && i < m->child_count; i++) status = apply(m->children[i], fn, context, seen);
    return status == CT_OK ? fn(m, context) : status;
}

ct_status ct_module_apply(ct_module *m, ct_status (*fn)(ct_module *module, void *context), void *context)
{
    if (!m) return ct_null_argument("ct_module_apply", "m"), ct_last_error();
    if (!fn) return ct_null_argument("ct_module_apply", "fn"), ct_last_error();
    module_set seen = {0};
    ct_status status = apply(m, fn, context, &seen);
    free(seen.items);
    return status;
}

/* ---- named_modules ---- */

typedef struct naming {
    ct_named_modules *list;
    int64_t capacity;
    module_set seen;
} naming;

static ct_status add_named(ct_module *m, const char *prefix, void *context)
{
    naming *n = context;
    if (set_contains(&n->seen, m)) return CT_OK;
    if (set_add(&n->seen, m) != CT_OK) return ct_last_error();
    ct_named_modules *list = n->list;
    if (list->count == n->capacity) {
        int64_t capacity = n->capacity ? 2 * n->capacity : 16;
        char **names = realloc(list->names, sizeof *names * (size_t)capacity);
        if (names) list->names = names;
        ct_module **modules = names ? realloc(list->modules, sizeof *modules * (size_t)capacity) : NULL;
        if (!modules) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_module_named_modules: no host memory");
        list->modules = modules;
        n->capacity = capacity;
    }
    /* the visitor's prefix ends in '.', a name does not */
    size_t length = strlen(prefix);
    char *name = strndup(prefix, length ? length - 1 : 0);
    if (!name) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_module_named_modules: no host memory");
    list->names[list->count] = name;
    list->modules[list->count++] = ct_module_retain(m);
    return CT_OK;
}

ct_named_modules *ct_module_named_modules(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_named_modules", "m");
    naming n = {.list = calloc(1, sizeof(ct_named_modules))};
    if (!n.list) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_module_named_modules: no host memory");
    ct_status status = ct_module_visit(m, add_named, &n);
    free(n.seen.items);
    if (status != CT_OK) {
        ct_named_modules_free(n.list);
        return NULL;
    }
    return n.list;
}

void ct_named_modules_free(ct_named_modules *list)
{
    if (!list) return;
    for (int64_t i = 0; i < list->count; i++) {
        free(list->names[i]);
        ct_module_release(list->modules[i]);
    }
    free(list->names);
    free(list->modules);
    free(list);
}
