/* The module base: creation, refcounting, registration of parameters, buffers and children,
 * lookups by dotted name, train/eval, forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module_internal.h"

ct_module *ct_module_create(const char *kind, ct_module_forward_fn forward, void *data,
                            void (*free_data)(void *data))
{
    if (!kind) return ct_null_argument("ct_module_create", "kind");
    ct_module *m = calloc(1, sizeof *m);
    char *kind_copy = strdup(kind);
    if (!m || !kind_copy) {
        free(m);
        free(kind_copy);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_module_create: no host memory for a %s", kind);
    }
    atomic_init(&m->refcount, 1);
    m->kind = kind_copy;
    m->forward = forward;
    m->data = data;
    m->free_data = free_data;
    m->training = true; /* modules start in training mode, as in PyTorch */
    return m;
}

ct_module *ct_module_wrap(const char *kind, ct_module_forward_fn forward, void *data, void (*free_data)(void *data),
                          ct_module *module)
{
    ct_module *wrapper = ct_module_create(kind, forward, data, free_data);
    if (!wrapper) {
        if (free_data) free_data(data);
        return NULL;
    }
    wrapper->training = module->training;
    if (ct_module_register_module(wrapper, "module", module) != CT_OK) {
        ct_module_release(wrapper);
        return NULL;
    }
    return wrapper;
}

ct_module *ct_module_retain(ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_retain", "m");
    atomic_fetch_add(&m->refcount, 1);
    return m;
}

static void slots_free(ct_tensor_slots *slots)
{
    for (int i = 0; i < slots->count; i++) {
        free(slots->names[i]);
        ct_release(slots->tensors[i]);
    }
    free(slots->names);
    free(slots->tensors);
}

void ct_module_release(ct_module *m)
{
    if (!m || atomic_fetch_sub(&m->refcount, 1) != 1) return;
    ct_api_enter(); /* the module's references are ctorch's, not entries of the user's scope */
    slots_free(&m->parameters);
    slots_free(&m->buffers);
    ct_api_return(NULL);
    for (int i = 0; i < m->child_count; i++) {
        free(m->child_names[i]);
        ct_module_release(m->children[i]);
    }
    free(m->child_names);
    free(m->children);
    if (m->free_data) m->free_data(m->data);
    free(m->kind);
    free(m);
}

void ct_module_free(ct_module *m) { ct_module_release(m); }

int ct_module_refcount(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_refcount", "m"), 0;
    return atomic_load(&m->refcount);
}

const char *ct_module_kind(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_kind", "m");
    return m->kind;
}

void *ct_module_data(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_data", "m");
    return m->data;
}

ct_status ct_module_set_describe(ct_module *m, char *(*describe)(const ct_module *m))
{
    if (!m) return ct_null_argument("ct_module_set_describe", "m"), ct_last_error();
    m->describe = describe;
    return CT_OK;
}

/* ---- registration ---- */

static int slots_find(const ct_tensor_slots *slots, const char *name)
{
    for (int i = 0; i < slots->count; i++)
        if (!strcmp(slots->names[i], name)) return i;
    return -1;
}

static int child_find(const ct_module *m, const char *name)
{
    for (int i = 0; i < m->child_count; i++)
        if (!strcmp(m->child_names[i], name)) return i;
    return -1;
}

/* A name a module can take: non-empty, no '.', not yet used by a parameter, buffer or child. */
static ct_status check_new_name(const char *function, const ct_module *m, const char *name)
{
    if (!*name) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the name is empty", function);
    if (strchr(name, '.'))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the name '%s' contains '.'; dots separate the "
                        "levels of dotted names, so a name cannot hold one", function, name);
    const char *what = slots_find(&m->parameters, name) >= 0 ? "a parameter"
                       : slots_find(&m->buffers, name) >= 0 ? "a buffer"
                       : child_find(m, name) >= 0           ? "a child module"
                                                            : NULL;
    if (what)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: this %s already has %s named '%s'", function,
                        m->kind, what, name);
    return CT_OK;
}

static ct_status slots_add(const char *function, ct_tensor_slots *slots, const char *name, ct_tensor *t)
{
    if (slots->count == slots->capacity) {
        int capacity = slots->capacity ? slots->capacity * 2 : 4;
        char **names = realloc(slots->names, sizeof *names * (size_t)capacity);
        if (names) slots->names = names;
        ct_tensor **tensors = names ? realloc(slots->tensors, sizeof *tensors * (size_t)capacity) : NULL;
        if (!tensors) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
        slots->tensors = tensors;
        slots->capacity = capacity;
    }
    char *copy = strdup(name);
    if (!copy) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    ct_api_enter(); /* the module's own reference, never recorded in a scope */
    slots->tensors[slots->count] = ct_retain(t);
    ct_api_return(NULL);
    slots->names[slots->count++] = copy;
    return CT_OK;
}

ct_status ct_module_register_parameter(ct_module *m, const char *name, ct_tensor *parameter)
{
    const char *function = "ct_module_register_parameter";
    if (!m) return ct_null_argument(function, "m"), ct_last_error();
    if (!name) return ct_null_argument(function, "name"), ct_last_error();
    if (!parameter) return ct_null_argument(function, "parameter"), ct_last_error();
    ct_status status = check_new_name(function, m, name);
    if (status != CT_OK) return status;
    if (!ct_is_leaf(parameter))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' was made by %s; a parameter must be a "
                        "leaf (use ct_detach)", function, name, ct_grad_fn_name(parameter));
    if (!ct_dtype_is_floating(parameter->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: '%s' is %s; parameters must be floating (float32, "
                        "float64, float16 or bfloat16; register integer state as a buffer)", function, name,
                        ct_dtype_name(parameter->dtype));
    status = ct_requires_grad_(parameter, true);
    return status == CT_OK ? slots_add(function, &m->parameters, name, parameter) : status;
}

ct_status ct_module_register_buffer(ct_module *m, const char *name, ct_tensor *buffer)
{
    const char *function = "ct_module_register_buffer";
    if (!m) return ct_null_argument(function, "m"), ct_last_error();
    if (!name) return ct_null_argument(function, "name"), ct_last_error();
    if (!buffer) return ct_null_argument(function, "buffer"), ct_last_error();
    ct_status status = check_new_name(function, m, name);
    return status == CT_OK ? slots_add(function, &m->buffers, name, buffer) : status;
}

/* Is target m itself or somewhere below it? */
static bool tree_contains(const ct_module *m, const ct_module *target)
{
    if (m == target) return true;
    for (int i = 0; i < m->child_count; i++)
        if (tree_contains(m->children[i], target)) return true;
    return false;
}

ct_status ct_module_register_module(ct_module *m, const char *name, ct_module *child)
{
    const char *function = "ct_module_register_module";
    if (!m) return ct_null_argument(function, "m"), ct_last_error();
    if (!name) return ct_null_argument(function, "name"), ct_last_error();
    if (!child) return ct_null_argument(function, "child"), ct_last_error();
    ct_status status = check_new_name(function, m, name);
    if (status != CT_OK) return status;
    if (tree_contains(child, m))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: registering this %s as '%s' would make a cycle "
                        "(the module is the child itself or one of its descendants)", function,
                        child->kind, name);
    if (m->child_count == m->child_capacity) {
        int capacity = m->child_capacity ? m->child_capacity * 2 : 4;
        char **names = realloc(m->child_names, sizeof *names * (size_t)capacity);
        if (names) m->child_names = names;
        ct_module **children = names ? realloc(m->children, sizeof *children * (size_t)capacity) : NULL;
        if (!children) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
        m->children = children;
        m->child_capacity = capacity;
    }
    char *copy = strdup(name);
    if (!copy) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    m->child_names[m->child_count] = copy;
    m->children[m->child_count++] = ct_module_retain(child);
    return CT_OK;
}

/* ---- lookups ---- */

ct_tensor *ct_module_own_parameter(const ct_module *m, const char *name)
{
    int i = slots_find(&m->parameters, name);
    return i >= 0 ? m->parameters.tensors[i] : NULL;
}

ct_tensor *ct_module_own_buffer(const ct_module *m, const char *name)
{
    int i = slots_find(&m->buffers, name);
    return i >= 0 ? m->buffers.tensors[i] : NULL;
}

/* Follows the dotted path's module part: the module that holds the last component, which is
 * returned in *last. NULL when a component is not a child. */
static const ct_module *walk(const ct_module *m, const char *path, const char **last)
{
    char part[256];
    for (;;) {
        const char *dot = strchr(path, '.');
        if (!dot) break;
        size_t length = (size_t)(dot - path);
        if (length >= sizeof part) return NULL;
        memcpy(part, path, length);
        part[length] = '\0';
        int i = child_find(m, part);
        if (i < 0) return NULL;
        m = m->children[i];
        path = dot + 1;
    }
    *last = path;
    return m;
}

typedef enum { LOOK_PARAMETER, LOOK_BUFFER } look_kind;

static ct_tensor *look_up(const char *function, const ct_module *m, const char *name, look_kind kind)
{
    if (!m) return ct_null_argument(function, "m");
    if (!name) return ct_null_argument(function, "name");
    const char *last = NULL;
    const ct_module *owner = walk(m, name, &last);
    ct_tensor *t = !owner                   ? NULL
                   : kind == LOOK_PARAMETER ? ct_module_own_parameter(owner, last)
                                            : ct_module_own_buffer(owner, last);
    if (!t)
        return ct_error_null(CT_ERR_INDEX, "%s: this %s has no %s named '%s'", function, m->kind,
                             kind == LOOK_PARAMETER ? "parameter" : "buffer", name);
    atomic_fetch_add(&t->refcount, 1);
    return t;
}

ct_tensor *ct_module_parameter(const ct_module *m, const char *name)
{
    CT_API_ENTER;
    return ct_api_return(look_up("ct_module_parameter", m, name, LOOK_PARAMETER));
}

ct_tensor *ct_module_buffer(const ct_module *m, const char *name)
{
    CT_API_ENTER;
    return ct_api_return(look_up("ct_module_buffer", m, name, LOOK_BUFFER));
}

ct_module *ct_module_child(const ct_module *m, const char *name)
{
    if (!m) return ct_null_argument("ct_module_child", "m");
    if (!name) return ct_null_argument("ct_module_child", "name");
    /* walk() resolves every component but the last; the last names a child too. */
    const char *last = NULL;
    const ct_module *owner = walk(m, name, &last);
    int i = owner ? child_find(owner, last) : -1;
    if (i < 0)
        return ct_error_null(CT_ERR_INDEX, "ct_module_child: this %s has no child module named "
                             "'%s'", m->kind, name);
    return owner->children[i];
}

int ct_module_child_count(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_child_count", "m"), 0;
    return m->child_count;
}

ct_module *ct_module_child_at(const ct_module *m, int index)
{
    if (!m) return ct_null_argument("ct_module_child_at", "m");
    if (index < 0 || index >= m->child_count)
        return ct_error_null(CT_ERR_INDEX, "ct_module_child_at: index %d is out of range for a %s "
                             "with %d children", index, m->kind, m->child_count);
    return m->children[index];
}

/* ---- running ---- */

ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *input)
{
    /* No CT_API_ENTER here: a custom forward is user code, whose results belong to the caller's
     * scope; the built-in layers' forwards enter the API themselves. */
    if (!m) return ct_null_argument("ct_module_forward", "m");
    if (!input) return ct_null_argument("ct_module_forward", "input");
    if (!m->forward && m->forward_many) return ct_module_forward_one_of_many(m, input);
    if (!m->forward)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_module_forward: a %s has no forward of "
                             "its own; call its children", m->kind);
    return m->forward(m, input);
}

void ct_module_train(ct_module *m, bool training)
{
    if (!m) {
        ct_null_argument(training ? "ct_module_train" : "ct_module_eval", "m");
        return;
    }
    m->training = training;
    for (int i = 0; i < m->child_count; i++) ct_module_train(m->children[i], training);
}

void ct_module_eval(ct_module *m) { ct_module_train(m, false); }

bool ct_module_is_training(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_module_is_training", "m"), false;
    return m->training;
}

/* ---- walking the tree ---- */

static ct_status visit(ct_module *m, const char *prefix, ct_module_visit_fn fn, void *context)
{
    ct_status status = fn(m, prefix, context);
    for (int i = 0; status == CT_OK && i < m->child_count; i++) {
        size_t length = strlen(prefix) + strlen(m->child_names[i]) + 2;
        char *child_prefix = malloc(length);
        if (!child_prefix) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to walk a module");
        snprintf(child_prefix, length, "%s%s.", prefix, m->child_names[i]);
        status = visit(m->children[i], child_prefix, fn, context);
        free(child_prefix);
    }
    return status;
}

ct_status ct_module_visit(const ct_module *m, ct_module_visit_fn fn, void *context)
{
    return visit((ct_module *)m, "", fn, context);
}

ct_status ct_module_add_uniform_parameter(ct_module *m, const char *name, const int64_t *shape,
                                          int ndim, double bound)
{
    ct_api_enter(); /* intermediates of a constructor never enter the user's scope */
    ct_tensor *r = ct_rand(shape, ndim, CT_F32, CT_DEVICE_CPU);
    ct_tensor *scaled = ct_mul_scalar(r, 2.0 * bound);
    ct_tensor *w = ct_sub_scalar(scaled, bound); /* U(-bound, bound) */
    ct_release(r);
    ct_release(scaled);
    ct_status status = w ? ct_module_register_parameter(m, name, w) : ct_last_error();
    ct_release(w);
    ct_api_return(NULL);
    return status;
}
