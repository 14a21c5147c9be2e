/* Parameter groups (PyTorch's optimizer.param_groups): the optimizer's parameters in groups, each
 * with its own hyperparameters, a group's unset (NaN) fields taken from the optimizer's options.
 * The parameters of all groups lie in one array, group after group, so that the step loops over
 * parameters as before and reads each one's options through its group. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "optim/optimizer_internal.h"

ct_param_group ct_param_group_of(ct_tensor *const *params, int64_t count)
{
    return (ct_param_group){.params = params, .count = count, .lr = NAN, .weight_decay = NAN,
                            .beta1 = NAN, .beta2 = NAN, .momentum = NAN};
}

/* value where the group set it, else fallback. */
static double or_default(double value, double fallback) { return isnan(value) ? fallback : value; }

/* Group g's options: the optimizer's, with the group's fields where set; checked. */
static ct_status group_options(const char *function, ct_optim_kind kind, const ct_param_group *g, int64_t index,
                               int64_t group_count, const ct_optimizer *o, ct_optim_group *out)
{
    char where[160];
    if (group_count > 1)
        snprintf(where, sizeof where, "%s (param_groups[%lld])", function, (long long)index);
    else
        snprintf(where, sizeof where, "%s", function);
    switch (kind) {
    case CT_OPTIM_SGD:
        out->sgd = o->sgd;
        out->sgd.lr = or_default(g->lr, o->sgd.lr);
        out->sgd.weight_decay = or_default(g->weight_decay, o->sgd.weight_decay);
        out->sgd.momentum = or_default(g->momentum, o->sgd.momentum);
        return ct_sgd_check_options(where, &out->sgd);
    case CT_OPTIM_RMSPROP:
        out->rmsprop = o->rmsprop;
        out->rmsprop.lr = or_default(g->lr, o->rmsprop.lr);
        out->rmsprop.weight_decay = or_default(g->weight_decay, o->rmsprop.weight_decay);
        out->rmsprop.momentum = or_default(g->momentum, o->rmsprop.momentum);
        return ct_rmsprop_check_options(where, &out->rmsprop);
    case CT_OPTIM_ADAGRAD:
        out->adagrad = o->adagrad;
        out->adagrad.lr = or_default(g->lr, o->adagrad.lr);
        out->adagrad.weight_decay = or_default(g->weight_decay, o->adagrad.weight_decay);
        return ct_adagrad_check_options(where, &out->adagrad);
    default:
        out->adam = o->adam;
        out->adam.lr = or_default(g->lr, o->adam.lr);
        out->adam.weight_decay = or_default(g->weight_decay, o->adam.weight_decay);
        out->adam.beta1 = or_default(g->beta1, o->adam.beta1);
        out->adam.beta2 = or_default(g->beta2, o->adam.beta2);
        return ct_adam_check_options(where, &out->adam);
    }
}

/* Every parameter a floating leaf, each in one group only. */
static ct_status check_params(const char *function, const ct_param_group *groups, int64_t group_count,
                              int64_t *total)
{
    *total = 0;
    for (int64_t gi = 0; gi < group_count; gi++) {
        const ct_param_group *g = &groups[gi];
        if (g->count < 0)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: param_groups[%lld] has count %lld; it must not be "
                            "negative", function, (long long)gi, (long long)g->count);
        if (g->count > 0 && !g->params)
            return ct_error(CT_ERR_NULL_ARGUMENT, "%s: param_groups[%lld].params is NULL", function, (long long)gi);
        for (int64_t i = 0; i < g->count; i++) {
            const ct_tensor *t = g->params[i];
            if (!t)
                return ct_error(CT_ERR_NULL_ARGUMENT, "%s: params[%lld] of param_groups[%lld] is NULL", function,
                                (long long)i, (long long)gi);
            if (!ct_dtype_is_floating(t->dtype))
                return ct_error(CT_ERR_DTYPE, "%s: params[%lld] is %s; an optimizer updates floating tensors "
                                "(float32, float64, float16, bfloat16)", function, (long long)(*total + i),
                                ct_dtype_name(t->dtype));
            if (!ct_is_leaf(t))
                return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: params[%lld] was made by %s; an optimizer can only "
                                "optimize leaf tensors", function, (long long)(*total + i), ct_grad_fn_name(t));
            /* PyTorch: "some parameters appear in more than one parameter group" */
            for (int64_t gj = 0, flat = 0; gj <= gi; flat += groups[gj].count, gj++)
                for (int64_t j = 0; j < (gj == gi ? i : groups[gj].count); j++)
                    if (groups[gj].params[j] == t)
                        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: params[%lld] and params[%lld] are the same "
                                        "tensor (of param_groups[%lld] and [%lld]); a parameter may appear once, "
                                        "in one group", function, (long long)(flat + j), (long long)(*total + i),
                                        (long long)gj, (long long)gi);
        }
        *total += g->count;
    }
    return CT_OK;
}

/* The options of kind from options (NULL: PyTorch's defaults) into o, checked. */
static ct_status optimizer_options(const char *function, ct_optim_kind kind, const void *options, ct_optimizer *o)
{
    switch (kind) {
    case CT_OPTIM_SGD:
        o->sgd = options ? *(const ct_sgd_options *)options : ct_sgd_options_default(1e-3);
        return ct_sgd_check_options(function, &o->sgd);
    case CT_OPTIM_RMSPROP:
        o->rmsprop = options ? *(const ct_rmsprop_options *)options : ct_rmsprop_options_default(1e-2);
        return ct_rmsprop_check_options(function, &o->rmsprop);
    case CT_OPTIM_ADAGRAD:
        o->adagrad = options ? *(const ct_adagrad_options *)options : ct_adagrad_options_default(1e-2);
        return ct_adagrad_check_options(function, &o->adagrad);
    default:
        o->adam = options ? *(const ct_adam_options *)options
                  : kind == CT_OPTIM_ADAMW ? ct_adamw_options_default(1e-3)
                                           : ct_adam_options_default(1e-3);
        return ct_adam_check_options(function, &o->adam);
    }
}

ct_optimizer *ct_optimizer_new_groups(const char *function, ct_optim_kind kind, const ct_param_group *groups,
                                      int64_t group_count, const void *options)
{
    ct_optimizer defaults = {0};
    if (optimizer_options(function, kind, options, &defaults) != CT_OK) return NULL;
    if (group_count < 1)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: group_count is %lld; an optimizer needs at least "
                             "one parameter group", function, (long long)group_count);
    if (!groups) return ct_null_argument(function, "groups");
    int64_t total = 0;
    if (check_params(function, groups, group_count, &total) != CT_OK) return NULL;
    ct_optimizer *o = calloc(1, sizeof *o);
    ct_param_state *states = calloc(total > 0 ? (size_t)total : 1, sizeof *states);
    ct_optim_group *made = calloc((size_t)group_count, sizeof *made);
    if (!o || !states || !made) {
        free(o);
        free(states);
        free(made);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    int64_t first = 0;
    for (int64_t gi = 0; gi < group_count; gi++) {
        if (group_options(function, kind, &groups[gi], gi, group_count, &defaults, &made[gi]) != CT_OK) {
            free(o);
            free(states);
            free(made);
            return NULL;
        }
        made[gi].first = first;
        made[gi].count = groups[gi].count;
        first += groups[gi].count;
    }
    *o = defaults;
    o->kind = kind;
    o->count = total;
    o->params = states;
    o->group_count = group_count;
    o->groups = made;
    o->refcount = 1;
    for (int64_t gi = 0; gi < group_count; gi++)
        for (int64_t i = 0; i < groups[gi].count; i++) {
            ct_tensor *p = groups[gi].params[i];
            ct_param_state *ps = &states[made[gi].first + i];
            ct_requires_grad_(p, true);
            atomic_fetch_add(&p->refcount, 1);
            ps->param = p;
            ps->group = gi;
        }
    return o;
}

ct_optimizer *ct_optimizer_new_for_module(const char *function, ct_optim_kind kind, const ct_module *m,
                                          const void *options)
{
    if (!m) return ct_null_argument(function, "module");
    ct_named_tensors *list = ct_module_named_parameters(m);
    if (!list) return NULL;
    ct_param_group group = ct_param_group_of(list->tensors, list->count);
    ct_optimizer *o = ct_optimizer_new_groups(function, kind, &group, 1, options);
    ct_named_tensors_free(list);
    return o;
}

int64_t ct_optimizer_group_count(const ct_optimizer *o)
{
    if (!o) return ct_null_argument("ct_optimizer_group_count", "optimizer"), 0;
    return o->group_count;
}

static bool check_group(const char *function, const ct_optimizer *o, int64_t group)
{
    if (!o) return ct_null_argument(function, "optimizer"), false;
    if (group < 0 || group >= o->group_count)
        return ct_error(CT_ERR_INDEX, "%s: group %lld is out of range for an optimizer of %lld parameter "
                        "groups", function, (long long)group, (long long)o->group_count), false;
    return true;
}

double ct_optimizer_group_lr(const ct_optimizer *o, int64_t group)
{
    if (!check_group("ct_optimizer_group_lr", o, group)) return NAN;
    return *ct_optim_group_lr_field((ct_optimizer *)o, group);
}

ct_status ct_optimizer_set_group_lr(ct_optimizer *o, int64_t group, double lr)
{
    const char *function = "ct_optimizer_set_group_lr";
    if (!check_group(function, o, group)) return ct_last_error();
    if (!(lr >= 0.0) || isinf(lr))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid learning rate: %g (it must be a finite number >= 0)",
                        function, lr);
    *ct_optim_group_lr_field(o, group) = lr;
    return CT_OK;
}

double ct_optimizer_lr(const ct_optimizer *o)
{
    if (!o) return ct_null_argument("ct_optimizer_lr", "optimizer"), 0.0;
    return *ct_optim_group_lr_field((ct_optimizer *)o, 0);
}

ct_status ct_optimizer_set_lr(ct_optimizer *o, double lr)
{
    if (!o) return ct_null_argument("ct_optimizer_set_lr", "optimizer"), ct_last_error();
    if (!(lr >= 0.0) || isinf(lr))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_optimizer_set_lr: Invalid learning rate: %g (it must be a "
                        "finite number >= 0)", lr);
    for (int64_t g = 0; g < o->group_count; g++) *ct_optim_group_lr_field(o, g) = lr;
    return CT_OK;
}

/* ---- the constructors ---- */

static ct_param_group one_group(ct_tensor *const *params, int64_t count)
{
    return ct_param_group_of(params, count);
}

ct_optimizer *ct_optim_sgd(const ct_module *module, const ct_sgd_options *options)
{
    return ct_optimizer_new_for_module("ct_optim_sgd", CT_OPTIM_SGD, module, options);
}

ct_optimizer *ct_optim_adam(const ct_module *module, const ct_adam_options *options)
{
    return ct_optimizer_new_for_module("ct_optim_adam", CT_OPTIM_ADAM, module, options);
}

ct_optimizer *ct_optim_adamw(const ct_module *module, const ct_adam_options *options)
{
    return ct_optimizer_new_for_module("ct_optim_adamw", CT_OPTIM_ADAMW, module, options);
}

ct_optimizer *ct_optim_sgd_params(ct_tensor *const *params, int64_t count, const ct_sgd_options *options)
{
    ct_param_group g = one_group(params, count);
    return ct_optimizer_new_groups("ct_optim_sgd_params", CT_OPTIM_SGD, &g, 1, options);
}

ct_optimizer *ct_optim_adam_params(ct_tensor *const *params, int64_t count, const ct_adam_options *options)
{
    ct_param_group g = one_group(params, count);
    return ct_optimizer_new_groups("ct_optim_adam_params", CT_OPTIM_ADAM, &g, 1, options);
}

ct_optimizer *ct_optim_adamw_params(ct_tensor *const *params, int64_t count, const ct_adam_options *options)
{
    ct_param_group g = one_group(params, count);
    return ct_optimizer_new_groups("ct_optim_adamw_params", CT_OPTIM_ADAMW, &g, 1, options);
}

ct_optimizer *ct_optim_sgd_groups(const ct_param_group *groups, int64_t group_count, const ct_sgd_options *options)
{
    return ct_optimizer_new_groups("ct_optim_sgd_groups", CT_OPTIM_SGD, groups, group_count, options);
}

ct_optimizer *ct_optim_adam_groups(const ct_param_group *groups, int64_t group_count, const ct_adam_options *options)
{
    return ct_optimizer_new_groups("ct_optim_adam_groups", CT_OPTIM_ADAM, groups, group_count, options);
}

ct_optimizer *ct_optim_adamw_groups(const ct_param_group *groups, int64_t group_count,
                                    const ct_adam_options *options)
{
    return ct_optimizer_new_groups("ct_optim_adamw_groups", CT_OPTIM_ADAMW, groups, group_count, options);
}

ct_optimizer *ct_optim_rmsprop(const ct_module *module, const ct_rmsprop_options *options)
{
    return ct_optimizer_new_for_module("ct_optim_rmsprop", CT_OPTIM_RMSPROP, module, options);
}

ct_optimizer *ct_optim_adagrad(const ct_module *module, const ct_adagrad_options *options)
{
    return ct_optimizer_new_for_module("ct_optim_adagrad", CT_OPTIM_ADAGRAD, module, options);
}

ct_optimizer *ct_optim_rmsprop_params(ct_tensor *const *params, int64_t count, const ct_rmsprop_options *options)
{
    ct_param_group g = one_group(params, count);
    return ct_optimizer_new_groups("ct_optim_rmsprop_params", CT_OPTIM_RMSPROP, &g, 1, options);
}

ct_optimizer *ct_optim_adagrad_params(ct_tensor *const *params, int64_t count, const ct_adagrad_options *options)
{
    ct_param_group g = one_group(params, count);
    return ct_optimizer_new_groups("ct_optim_adagrad_params", CT_OPTIM_ADAGRAD, &g, 1, options);
}

ct_optimizer *ct_optim_rmsprop_groups(const ct_param_group *groups, int64_t group_count,
                                      const ct_rmsprop_options *options)
{
    return ct_optimizer_new_groups("ct_optim_rmsprop_groups", CT_OPTIM_RMSPROP, groups, group_count, options);
}

ct_optimizer *ct_optim_adagrad_groups(const ct_param_group *groups, int64_t group_count,
                                      const ct_adagrad_options *options)
{
    return ct_optimizer_new_groups("ct_optim_adagrad_groups", CT_OPTIM_ADAGRAD, groups, group_count, options);
}
