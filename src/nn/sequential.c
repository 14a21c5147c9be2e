/* nn.Sequential (children called in order) and nn.ModuleList (children that are not called
 * together), both naming their children "0", "1", ...; nn.ModuleDict (children named by the
 * caller, not called together). */
#include <stdio.h>

#include "nn/module_internal.h"

static ct_tensor *sequential_forward(ct_module *self, const ct_tensor *x)
{
    /* Runs at the caller's API depth, as the children are called: a custom child's results land
     * in the caller's scope, and each intermediate is released as soon as the next is made. */
    ct_tensor *current = NULL;
    for (int i = 0; i < self->child_count; i++) {
        ct_module *child = self->children[i];
        const ct_tensor *input = current ? current : x;
        /* A Linear then a ReLU: one op (ops/linear_relu.c), the ReLU's launches folded in. */
        bool fold = i + 1 < self->child_count && ct_module_is_linear(child) &&
                    ct_module_is_relu(self->children[i + 1]);
        ct_tensor *next = fold ? ct_linear_relu_forward(child, input) : ct_module_forward(child, input);
        i += fold;
        ct_release(current);
        if (!next) return NULL;
        current = next;
    }
    return current ? current : ct_retain((ct_tensor *)x); /* an empty Sequential is the identity */
}

ct_status ct_sequential_append(ct_module *sequential, ct_module *module)
{
    if (!sequential) return ct_null_argument("ct_sequential_append", "sequential"), ct_last_error();
    if (!module) return ct_null_argument("ct_sequential_append", "module"), ct_last_error();
    char name[32];
    snprintf(name, sizeof name, "%d", sequential->child_count);
    return ct_module_register_module(sequential, name, module);
}

/* Takes over the references in modules, also on failure (then they are released). */
static ct_module *make(const char *function, const char *kind, ct_module_forward_fn forward,
                       ct_module *const *modules, int count)
{
    if (count < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: count is %d; it must not be negative",
                             function, count);
    if (count > 0 && !modules) return ct_null_argument(function, "modules");
    ct_module *m = NULL;
    int missing = -1;
    for (int i = 0; i < count && missing < 0; i++)
        if (!modules[i]) missing = i;
    if (missing >= 0) {
        if (ct_last_error() == CT_OK) /* otherwise a constructor in the list failed: keep its error */
            ct_error(CT_ERR_NULL_ARGUMENT, "%s: modules[%d] is NULL", function, missing);
    } else {
        m = ct_module_create(kind, forward, NULL, NULL);
        for (int i = 0; m && i < count; i++)
            if (ct_sequential_append(m, modules[i]) != CT_OK) {
                ct_module_release(m);
                m = NULL;
            }
    }
    for (int i = 0; i < count; i++) ct_module_release(modules[i]);
    return m;
}

ct_module *ct_sequential(ct_module *const *modules, int count)
{
    return make("ct_sequential", "Sequential", sequential_forward, modules, count);
}

ct_module *ct_module_list(ct_module *const *modules, int count)
{
    return make("ct_module_list", "ModuleList", NULL, modules, count);
}

/* nn.ModuleDict: like make(), children named by the caller; takes over the references. */
ct_module *ct_module_dict(const char *const *names, ct_module *const *modules, int count)
{
    static const char *FN = "ct_module_dict";
    ct_module *m = NULL;
    if (count < 0) {
        ct_error(CT_ERR_INVALID_ARGUMENT, "%s: count is %d; it must not be negative", FN, count);
        count = 0;
    } else if (count > 0 && (!modules || !names)) {
        ct_null_argument(FN, !modules ? "modules" : "names");
        if (!modules) count = 0;
    } else {
        m = ct_module_create("ModuleDict", NULL, NULL, NULL);
        for (int i = 0; m && i < count; i++) {
            ct_status status = CT_OK;
            if (!modules[i]) {
                if (ct_last_error() == CT_OK) ct_error(CT_ERR_NULL_ARGUMENT, "%s: modules[%d] is NULL", FN, i);
                status = ct_last_error();
            } else if (!names[i]) {
                status = ct_error(CT_ERR_NULL_ARGUMENT, "%s: names[%d] is NULL", FN, i);
            } else {
                status = ct_module_register_module(m, names[i], modules[i]);
            }
            if (status != CT_OK) {
                ct_module_release(m);
                m = NULL;
            }
        }
    }
    for (int i = 0; i < count; i++) ct_module_release(modules[i]);
    return m;
}
