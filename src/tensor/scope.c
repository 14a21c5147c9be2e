/* Scopes: every tensor reference returned to the user while a scope is open is recorded, and
 * released when the scope is popped. Only the outermost public call records (see
 * tensor_internal.h), so ctorch's internal calls never fill a user's scope. */
#include <stdlib.h>

#include "tensor/tensor_internal.h"

typedef struct scope {
    ct_tensor **items;
    size_t count, capacity;
    struct scope *parent;
} scope;

static _Thread_local scope *current_scope;
static _Thread_local int api_depth;

void ct_api_enter(void) { api_depth++; }

bool ct_api_nested(void) { return api_depth > 0; }

static bool scope_record(scope *s, ct_tensor *t)
{
    if (s->count == s->capacity) {
        size_t capacity = s->capacity ? s->capacity * 2 : 64;
        ct_tensor **items = realloc(s->items, capacity * sizeof *items);
        if (!items) return false;
        s->items = items;
        s->capacity = capacity;
    }
    s->items[s->count++] = t;
    return true;
}

ct_tensor *ct_api_return(ct_tensor *t)
{
    api_depth--;
    if (api_depth == 0 && t && current_scope && !scope_record(current_scope, t)) {
        ct_release(t);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory to record a tensor in its scope");
    }
    return t;
}

/* Removes the most recent record of t from s; false when s does not hold it. */
static bool scope_remove(scope *s, ct_tensor *t)
{
    for (size_t i = s->count; i-- > 0;)
        if (s->items[i] == t) {
            s->items[i] = s->items[--s->count];
            return true;
        }
    return false;
}

void ct_scope_forget(ct_tensor *t)
{
    if (current_scope) scope_remove(current_scope, t);
}

void ct_scope_push(void)
{
    scope *s = calloc(1, sizeof *s);
    if (!s) {
        ct_error(CT_ERR_OUT_OF_MEMORY, "ct_scope_push: no host memory for a scope");
        return;
    }
    s->parent = current_scope;
    current_scope = s;
}

ct_status ct_scope_pop(void)
{
    scope *s = current_scope;
    if (!s) return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_scope_pop: there is no open scope; each "
                            "pop needs a ct_scope_push before it");
    current_scope = s->parent;
    api_depth++; /* releases below are the scope's, not the user's */
    for (size_t i = 0; i < s->count; i++) ct_release(s->items[i]);
    api_depth--;
    free(s->items);
    free(s);
    return CT_OK;
}

ct_tensor *ct_scope_keep(ct_tensor *t)
{
    if (ct_tensor_unusable("ct_scope_keep", "t", t)) return NULL;
    scope *s = current_scope;
    if (!s || !scope_remove(s, t)) return t; /* not recorded: already the caller's */
    if (s->parent && !scope_record(s->parent, t)) {
        scope_record(s, t);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_scope_keep: no host memory to move the "
                             "tensor to the enclosing scope");
    }
    return t;
}
