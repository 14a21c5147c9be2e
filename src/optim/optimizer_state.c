/* Optimizer state in checkpoints: a state dict with PyTorch's structure flattened to names.
 *     param_groups.<g>.lr, param_groups.<g>.<hyperparameter>   float64 scalars, per group
 *     param_groups.<g>.params                                   int64 [count]: the group's parameters,
 *                                                               numbered in order over the groups
 *     state.<i>.step                                        int64 scalar, for each stepped param
 *     state.<i>.momentum_buffer | exp_avg, exp_avg_sq       the state tensors
 * and the metadata "optimizer" = "SGD" | "Adam" | "AdamW". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/io.h"
#include "device/capture.h"
#include "optim/optimizer_internal.h"

#define METADATA_KIND "optimizer"

typedef struct hyperparameter {
    const char *name;
    double *value;
} hyperparameter;

/* The hyperparameters of kind in group g's options; returns how many. *flag holds a bool field's
 * value as a number (SGD's nesterov, RMSprop's centered). */
static int hyperparameters(ct_optim_kind kind, ct_optim_group *g, hyperparameter *out, double *nesterov)
{
    if (kind == CT_OPTIM_RMSPROP) {
        *nesterov = g->rmsprop.centered ? 1.0 : 0.0;
        out[0] = (hyperparameter){"lr", &g->rmsprop.lr};
        out[1] = (hyperparameter){"alpha", &g->rmsprop.alpha};
        out[2] = (hyperparameter){"eps", &g->rmsprop.eps};
        out[3] = (hyperparameter){"weight_decay", &g->rmsprop.weight_decay};
        out[4] = (hyperparameter){"momentum", &g->rmsprop.momentum};
        out[5] = (hyperparameter){"centered", nesterov};
        return 6;
    }
    if (kind == CT_OPTIM_ADAGRAD) {
        out[0] = (hyperparameter){"lr", &g->adagrad.lr};
        out[1] = (hyperparameter){"lr_decay", &g->adagrad.lr_decay};
        out[2] = (hyperparameter){"weight_decay", &g->adagrad.weight_decay};
        out[3] = (hyperparameter){"initial_accumulator_value", &g->adagrad.initial_accumulator_value};
        out[4] = (hyperparameter){"eps", &g->adagrad.eps};
        return 5;
    }
    if (kind == CT_OPTIM_SGD) {
        *nesterov = g->sgd.nesterov ? 1.0 : 0.0;
        out[0] = (hyperparameter){"lr", &g->sgd.lr};
        out[1] = (hyperparameter){"momentum", &g->sgd.momentum};
        out[2] = (hyperparameter){"dampening", &g->sgd.dampening};
        out[3] = (hyperparameter){"weight_decay", &g->sgd.weight_decay};
        out[4] = (hyperparameter){"nesterov", nesterov};
        return 5;
    }
    out[0] = (hyperparameter){"lr", &g->adam.lr};
    out[1] = (hyperparameter){"beta1", &g->adam.beta1};
    out[2] = (hyperparameter){"beta2", &g->adam.beta2};
    out[3] = (hyperparameter){"eps", &g->adam.eps};
    out[4] = (hyperparameter){"weight_decay", &g->adam.weight_decay};
    return 5;
}

static ct_status add_scalar(ct_state_dict *sd, const char *name, double value, ct_dtype dtype)
{
    ct_tensor *t = ct_full(NULL, 0, value, dtype, CT_DEVICE_CPU);
    ct_status status = t ? ct_state_dict_add(sd, name, t) : ct_last_error();
    ct_release(t);
    return status;
}

ct_state_dict *ct_optimizer_state_dict(const ct_optimizer *optimizer)
{
    if (!optimizer) return ct_null_argument("ct_optimizer_state_dict", "optimizer");
    ct_optimizer *o = (ct_optimizer *)optimizer;
    ct_api_enter();
    ct_state_dict *sd = ct_state_dict_create();
    ct_status status = sd ? ct_state_dict_set_metadata(sd, METADATA_KIND, ct_optimizer_kind(o)) : ct_last_error();
    char name[128];
    for (int64_t g = 0; status == CT_OK && g < o->group_count; g++) {
        hyperparameter h[8];
        double nesterov;
        int count = hyperparameters(o->kind, &o->groups[g], h, &nesterov);
        for (int k = 0; status == CT_OK && k < count; k++) {
            snprintf(name, sizeof name, "param_groups.%lld.%s", (long long)g, h[k].name);
            status = add_scalar(sd, name, *h[k].value, CT_F64);
        }
        if (status != CT_OK) break;
        const ct_optim_group *group = &o->groups[g];
        ct_tensor *order = ct_arange((double)group->first, (double)(group->first + group->count), 1, CT_I64,
                                     CT_DEVICE_CPU);
        snprintf(name, sizeof name, "param_groups.%lld.params", (long long)g);
        status = order ? ct_state_dict_add(sd, name, order) : ct_last_error();
        ct_release(order);
    }
    for (int64_t i = 0; status == CT_OK && i < o->count; i++) {
        ct_param_state *ps = &o->params[i];
        int64_t steps = 0;
        status = ct_param_steps(ps, &steps); /* a capturable Adam's: its device's count */
        if (status != CT_OK || !steps) continue;
        status = ct_optim_state_follow_param(ps);
        snprintf(name, sizeof name, "state.%lld.step", (long long)i);
        if (status == CT_OK) status = add_scalar(sd, name, (double)steps, CT_I64);
        for (int k = 0; status == CT_OK && k < ct_optim_state_count(o); k++) {
            if (!ps->state[k]) continue;
            snprintf(name, sizeof name, "state.%lld.%s", (long long)i, ct_optim_state_name(o, k));
            ct_tensor *view = ct_detach(ps->state[k]);
            status = view ? ct_state_dict_add(sd, name, view) : ct_last_error();
            ct_release(view);
        }
    }
    ct_api_return(NULL);
    if (status != CT_OK) {
        ct_state_dict_free(sd);
        return NULL;
    }
    return sd;
}

/* ---- loading: everything is checked before anything changes ---- */

static ct_status read_scalar(const char *function, const ct_state_dict *sd, const char *name, double *value)
{
    ct_tensor *t = ct_state_dict_get(sd, name);
    if (!t) {
        ct_clear_error();
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the state dict has no '%s'", function, name);
    }
    ct_status status = ct_numel(t) == 1 ? ct_item(t, value)
                                        : ct_error(CT_ERR_SHAPE, "%s: '%s' must hold one value", function, name);
    ct_release(t);
    return status;
}

/* Parses "state.<i>.<what>" into i and what; false for other names. */
static bool parse_state_name(const char *name, int64_t *index, const char **what)
{
    if (strncmp(name, "state.", 6)) return false;
    char *end = NULL;
    long long i = strtoll(name + 6, &end, 10);
    if (end == name + 6 || *end != '.' || i < 0) return false;
    *index = i;
    *what = end + 1;
    return true;
}

/* Which state slot `what` names (CT_OPTIM_MAX_STATE for "step"), or -1. */
static int state_slot(const ct_optimizer *o, const char *what)
{
    if (!strcmp(what, "step")) return CT_OPTIM_MAX_STATE;
    for (int k = 0; k < ct_optim_state_count(o); k++)
        if (!strcmp(what, ct_optim_state_name(o, k))) return k;
    return -1;
}

/* A saved step count: a whole number from 0 to 2^53 (float64 holds every count to there, and a
 * capturable Adam counts in float64 on the device). */
static ct_status check_step(const char *function, const char *name, double step)
{
    if (!(step >= 0.0 && step <= 9007199254740992.0) || step != floor(step))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' is %g; a step count is a whole number from 0 to "
                        "2^53", function, name, step);
    return CT_OK;
}

/* Group g's hyperparameters from sd into out (a copy of the group's options), and its parameter
 * list checked against the optimizer's group. */
static ct_status read_group(const char *function, const ct_optimizer *o, const ct_state_dict *sd, int64_t g,
                            ct_optim_group *out)
{
    char name[128], where[160];
    snprintf(name, sizeof name, "param_groups.%lld.params", (long long)g);
    ct_tensor *ids = ct_state_dict_get(sd, name);
    if (!ids) return ct_last_error();
    int64_t saved = ct_numel(ids), first = o->groups[g].first;
    ct_status status = CT_OK;
    if (saved != o->groups[g].count)
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: loaded state dict contains a parameter group that doesn't "
                          "match the size of optimizer's group (%lld saved parameters, %lld here) in "
                          "param_groups[%lld]", function, (long long)saved, (long long)o->groups[g].count, (long long)g);
    ct_tensor *flat = status == CT_OK ? ct_reshape(ids, (int64_t[]){-1}, 1) : NULL;
    if (status == CT_OK && !flat) status = ct_last_error();
    for (int64_t i = 0; status == CT_OK && i < saved; i++) {
        double id = 0.0;
        ct_tensor *one = ct_select(flat, 0, i);
        status = one ? ct_item(one, &id) : ct_last_error();
        ct_release(one);
        if (status == CT_OK && id != (double)(first + i))
            status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' holds %g at %lld; the parameters are numbered "
                              "in order over the groups (%lld here)", function, name, id, (long long)i,
                              (long long)(first + i));
    }
    ct_release(flat);
    ct_release(ids);
    if (status != CT_OK) return status;
    hyperparameter h[8];
    double nesterov;
    int count = hyperparameters(o->kind, out, h, &nesterov);
    for (int k = 0; k < count; k++) {
        snprintf(name, sizeof name, "param_groups.%lld.%s", (long long)g, h[k].name);
        status = read_scalar(function, sd, name, h[k].value);
        if (status != CT_OK) return status;
    }
    snprintf(where, sizeof where, "%s (param_groups[%lld])", function, (long long)g);
    if (o->kind == CT_OPTIM_ADAGRAD) return ct_adagrad_check_options(where, &out->adagrad);
    if (o->kind == CT_OPTIM_RMSPROP) {
        if (nesterov != 0.0 && nesterov != 1.0)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: centered is %g; it must be 0 or 1", where, nesterov);
        out->rmsprop.centered = nesterov != 0.0;
        return ct_rmsprop_check_options(where, &out->rmsprop);
    }
    if (o->kind != CT_OPTIM_SGD) return ct_adam_check_options(where, &out->adam);
    if (nesterov != 0.0 && nesterov != 1.0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: nesterov is %g; it must be 0 or 1", where, nesterov);
    out->sgd.nesterov = nesterov != 0.0;
    status = ct_sgd_check_options(where, &out->sgd);
    if (status == CT_OK && !isfinite(out->sgd.dampening))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid dampening value: %g", where, out->sgd.dampening);
    return status;
}

/* "param_groups.<g>.<what>" with g a group here and what a field of kind's groups. */
static bool group_key(const ct_optimizer *o, const char *name)
{
    if (strncmp(name, "param_groups.", 13)) return false;
    char *end = NULL;
    long long g = strtoll(name + 13, &end, 10);
    if (end == name + 13 || *end != '.' || g < 0 || g >= o->group_count) return false;
    ct_optim_group scratch = {0};
    hyperparameter h[8];
    double nesterov;
    int count = hyperparameters(o->kind, &scratch, h, &nesterov);
    if (!strcmp(end + 1, "params")) return true;
    for (int k = 0; k < count; k++)
        if (!strcmp(end + 1, h[k].name)) return true;
    return false;
}

/* Every entry checked: the groups (their count, sizes and hyperparameters, into groups), and
 * every state tensor a parameter's, of its shape, with a valid step, complete. */
static ct_status check_state_dict(const char *function, const ct_optimizer *o, const ct_state_dict *sd,
                                  ct_optim_group *groups)
{
    char name[128], a[256], b[256];
    int64_t saved_groups = 0;
    for (;; saved_groups++) {
        snprintf(name, sizeof name, "param_groups.%lld.params", (long long)saved_groups);
        if (!ct_state_dict_contains(sd, name)) break;
    }
    if (saved_groups == 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the state dict has no 'param_groups.0.params'; is it an "
                        "optimizer's (ct_optimizer_state_dict)?", function);
    if (saved_groups != o->group_count)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: loaded state dict has a different number of parameter "
                        "groups (%lld saved, %lld here)", function, (long long)saved_groups,
                        (long long)o->group_count);
    for (int64_t g = 0; g < o->group_count; g++) {
        ct_status status = read_group(function, o, sd, g, &groups[g]);
        if (status != CT_OK) return status;
    }
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        const char *entry = ct_state_dict_name_at(sd, i);
        if (group_key(o, entry)) continue;
        int64_t index;
        const char *what;
        int slot = parse_state_name(entry, &index, &what) ? state_slot(o, what) : -1;
        if (slot < 0 || index >= o->count)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: unexpected key '%s' for a %s optimizer of %lld "
                            "parameters in %lld groups", function, entry, ct_optimizer_kind(o), (long long)o->count,
                            (long long)o->group_count);
        if (slot == CT_OPTIM_MAX_STATE) {
            double step = 0.0;
            ct_status status = read_scalar(function, sd, entry, &step);
            if (status == CT_OK) status = check_step(function, entry, step);
            if (status != CT_OK) return status;
            continue;
        }
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        const ct_tensor *p = o->params[index].param;
        bool fits = t->ndim == p->ndim && !memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim);
        bool floating = ct_dtype_is_floating(t->dtype);
        if (!fits)
            ct_error(CT_ERR_SHAPE, "%s: '%s' has shape %s but parameter %lld has shape %s", function, entry,
                     ct_shape_format(t->shape, t->ndim, a, sizeof a), (long long)index,
                     ct_shape_format(p->shape, p->ndim, b, sizeof b));
        else if (!floating)
            ct_error(CT_ERR_DTYPE, "%s: '%s' is %s; optimizer state is floating", function, entry,
                     ct_dtype_name(t->dtype));
        ct_release(t);
        if (!fits) return CT_ERR_SHAPE;
        if (!floating) return CT_ERR_DTYPE;
    }
    /* A parameter's state is whole or absent: Adam's step without its moments (or moments
     * without a step) would start the moments at zero mid-run or take the bias correction of
     * step 1; RMSprop's and Adagrad's step goes with square_avg or sum. */
    int parts_count = o->kind == CT_OPTIM_ADAM || o->kind == CT_OPTIM_ADAMW ? 3 : 2;
    for (int64_t i = 0; o->kind != CT_OPTIM_SGD && i < o->count; i++) {
        const char *parts[3] = {"step", ct_optim_state_name(o, 0), parts_count == 3 ? ct_optim_state_name(o, 1) : ""};
        int present = 0;
        for (int k = 0; k < parts_count; k++) {
            snprintf(name, sizeof name, "state.%lld.%s", (long long)i, parts[k]);
            present += ct_state_dict_contains(sd, name);
        }
        for (int k = 0; present > 0 && present < parts_count && k < parts_count; k++) {
            snprintf(name, sizeof name, "state.%lld.%s", (long long)i, parts[k]);
            if (!ct_state_dict_contains(sd, name))
                return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the state dict has state for parameter %lld but "
                                "no '%s' (%s keeps %s together)", function, (long long)i, name,
                                ct_optimizer_kind(o), parts_count == 3 ? "step, exp_avg and exp_avg_sq"
                                                                       : "the step and its state");
        }
    }
    return CT_OK;
}

ct_status ct_optimizer_load_state_dict(ct_optimizer *o, const ct_state_dict *sd)
{
    const char *function = "ct_optimizer_load_state_dict";
    if (!o) return ct_null_argument(function, "optimizer"), ct_last_error();
    if (!sd) return ct_null_argument(function, "sd"), ct_last_error();
    const char *kind = ct_state_dict_metadata(sd, METADATA_KIND);
    if (kind && strcmp(kind, ct_optimizer_kind(o)))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the state dict is of a %s optimizer, not %s",
                        function, kind, ct_optimizer_kind(o));
    ct_optim_group *groups = malloc((size_t)o->group_count * sizeof *groups);
    if (!groups) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    memcpy(groups, o->groups, (size_t)o->group_count * sizeof *groups);
    ct_api_enter();
    ct_status status = check_state_dict(function, o, sd, groups);
    if (status != CT_OK) {
        free(groups);
        ct_api_return(NULL);
        return status;
    }

    /* Apply: per parameter its step and state (copied to its device and dtype), or no state at
     * all when the state dict has none for it; then the groups' hyperparameters. The copies are
     * made before anything is replaced, so a failed copy changes nothing. */
    ct_no_grad_push();
    char name[128];
    ct_tensor **loaded = calloc((size_t)(o->count > 0 ? o->count : 1) * CT_OPTIM_MAX_STATE, sizeof *loaded);
    double *steps = calloc((size_t)(o->count > 0 ? o->count : 1), sizeof *steps);
    if (!loaded || !steps) status = ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    for (int64_t i = 0; status == CT_OK && i < o->count; i++) {
        ct_param_state *ps = &o->params[i];
        snprintf(name, sizeof name, "state.%lld.step", (long long)i);
        if (ct_state_dict_contains(sd, name)) status = read_scalar(function, sd, name, &steps[i]);
        ct_to_options options = ct_to_options_default(ps->param->storage->device);
        options.dtype = ps->param->dtype;
        options.copy = true; /* the optimizer's own tensor, never shared with the state dict */
        for (int k = 0; status == CT_OK && k < ct_optim_state_count(o); k++) {
            snprintf(name, sizeof name, "state.%lld.%s", (long long)i, ct_optim_state_name(o, k));
            if (!ct_state_dict_contains(sd, name)) continue;
            ct_tensor *t = ct_state_dict_get(sd, name);
            ct_tensor **slot = &loaded[i * CT_OPTIM_MAX_STATE + k];
            *slot = t ? ct_to_with(t, &options) : NULL;
            if (!*slot) status = ct_last_error();
            ct_release(t);
        }
    }
    for (int64_t i = 0; i < o->count; i++) {
        ct_param_state *ps = &o->params[i];
        for (int k = 0; loaded && k < CT_OPTIM_MAX_STATE; k++) {
            ct_tensor *t = loaded[i * CT_OPTIM_MAX_STATE + k];
            if (status != CT_OK) {
                ct_release(t);
                continue;
            }
            ct_release(ps->state[k]);
            ps->state[k] = t;
        }
        if (status == CT_OK) {
            ps->step = (int64_t)steps[i];
            ct_replay_counter_release(ps->replays); /* a graph's later replays count from here */
            ps->replays = NULL;
            ct_release(ps->record); /* remade from the step count at the next step */
            ps->record = NULL;
        }
    }
    if (status == CT_OK) memcpy(o->groups, groups, (size_t)o->group_count * sizeof *groups);
    free(loaded);
    free(steps);
    free(groups);
    ct_no_grad_pop();
    ct_api_return(NULL);
    return status;
}
