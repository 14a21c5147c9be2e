/* Optimizer state in checkpoints: a state dict with PyTorch's structure flattened to names.
 *     param_groups.0.lr, param_groups.0.<hyperparameter>   float64 scalars
 *     param_groups.0.params                                 int64 [count]: 0, 1, ... (the order)
 *     state.<i>.step                                        int64 scalar, for each stepped param
 *     state.<i>.momentum_buffer | exp_avg, exp_avg_sq       the state tensors
 * and the metadata "optimizer" = "SGD" | "Adam" | "AdamW". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/io.h"
#include "optim/optimizer_internal.h"

#define METADATA_KIND "optimizer"

typedef struct hyperparameter {
    const char *name;
    double *value;
} hyperparameter;

/* The hyperparameters of o's kind, pointing into o; returns how many. */
static int hyperparameters(ct_optimizer *o, hyperparameter *out, double *nesterov)
{
    if (o->kind == CT_OPTIM_SGD) {
        *nesterov = o->sgd.nesterov ? 1.0 : 0.0;
        out[0] = (hyperparameter){"lr", &o->sgd.lr};
        out[1] = (hyperparameter){"momentum", &o->sgd.momentum};
        out[2] = (hyperparameter){"dampening", &o->sgd.dampening};
        out[3] = (hyperparameter){"weight_decay", &o->sgd.weight_decay};
        out[4] = (hyperparameter){"nesterov", nesterov};
        return 5;
    }
    out[0] = (hyperparameter){"lr", &o->adam.lr};
    out[1] = (hyperparameter){"beta1", &o->adam.beta1};
    out[2] = (hyperparameter){"beta2", &o->adam.beta2};
    out[3] = (hyperparameter){"eps", &o->adam.eps};
    out[4] = (hyperparameter){"weight_decay", &o->adam.weight_decay};
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
    hyperparameter h[8];
    double nesterov;
    int count = hyperparameters(o, h, &nesterov);
    char name[128];
    for (int k = 0; status == CT_OK && k < count; k++) {
        snprintf(name, sizeof name, "param_groups.0.%s", h[k].name);
        status = add_scalar(sd, name, *h[k].value, CT_F64);
    }
    if (status == CT_OK) {
        ct_tensor *order = ct_arange(0, (double)o->count, 1, CT_I64, CT_DEVICE_CPU);
        status = order ? ct_state_dict_add(sd, "param_groups.0.params", order) : ct_last_error();
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

ct_status ct_optimizer_load_state_dict(ct_optimizer *o, const ct_state_dict *sd)
{
    const char *function = "ct_optimizer_load_state_dict";
    if (!o) return ct_null_argument(function, "optimizer"), ct_last_error();
    if (!sd) return ct_null_argument(function, "sd"), ct_last_error();
    const char *kind = ct_state_dict_metadata(sd, METADATA_KIND);
    if (kind && strcmp(kind, ct_optimizer_kind(o)))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the state dict is of a %s optimizer, not %s",
                        function, kind, ct_optimizer_kind(o));
    ct_tensor *order = ct_state_dict_get(sd, "param_groups.0.params");
    if (!order) {
        ct_clear_error();
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the state dict has no 'param_groups.0.params'; "
                        "is it an optimizer's (ct_optimizer_state_dict)?", function);
    }
    int64_t saved_count = ct_numel(order);
    ct_release(order);
    if (saved_count != o->count)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: loaded state dict contains a parameter group that "
                        "doesn't match the size of optimizer's group (%lld saved parameters, %lld here)",
                        function, (long long)saved_count, (long long)o->count);
    hyperparameter h[8];
    double nesterov, values[8];
    int count = hyperparameters(o, h, &nesterov);
    char name[128], a[256], b[256];
    for (int k = 0; k < count; k++) {
        snprintf(name, sizeof name, "param_groups.0.%s", h[k].name);
        ct_status status = read_scalar(function, sd, name, &values[k]);
        if (status != CT_OK) return status;
    }
    /* Every other name must be a state tensor of a parameter here, shaped as the parameter. */
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        const char *entry = ct_state_dict_name_at(sd, i);
        if (!strncmp(entry, "param_groups.0.", 15)) continue;
        int64_t index;
        const char *what;
        int slot = parse_state_name(entry, &index, &what) ? state_slot(o, what) : -1;
        if (slot < 0 || index >= o->count)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: unexpected key '%s' for a %s optimizer of %lld "
                            "parameters", function, entry, ct_optimizer_kind(o), (long long)o->count);
        if (slot == CT_OPTIM_MAX_STATE) continue;
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        const ct_tensor *p = o->params[index].param;
        bool fits = t->ndim == p->ndim && !memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim);
        if (!fits)
            ct_error(CT_ERR_SHAPE, "%s: '%s' has shape %s but parameter %lld has shape %s", function,
                     entry, ct_shape_format(t->shape, t->ndim, a, sizeof a), (long long)index,
                     ct_shape_format(p->shape, p->ndim, b, sizeof b));
        ct_release(t);
        if (!fits) return CT_ERR_SHAPE;
    }

    /* Apply: hyperparameters, then per parameter its step and state (copied to its device and
     * dtype), or no state at all when the state dict has none for it. */
    ct_api_enter();
    ct_no_grad_push();
    ct_status status = CT_OK;
    for (int64_t i = 0; status == CT_OK && i < o->count; i++) {
        ct_param_state *ps = &o->params[i];
        ct_tensor *loaded[CT_OPTIM_MAX_STATE] = {0};
        double step = 0;
        snprintf(name, sizeof name, "state.%lld.step", (long long)i);
        if (ct_state_dict_contains(sd, name)) status = read_scalar(function, sd, name, &step);
        ct_to_options options = ct_to_options_default(ps->param->storage->device);
        options.dtype = ps->param->dtype;
        for (int k = 0; status == CT_OK && k < ct_optim_state_count(o); k++) {
            snprintf(name, sizeof name, "state.%lld.%s", (long long)i, ct_optim_state_name(o, k));
            if (!ct_state_dict_contains(sd, name)) continue;
            ct_tensor *t = ct_state_dict_get(sd, name);
            options.copy = true; /* the optimizer's own tensor, never shared with the state dict */
            loaded[k] = t ? ct_to_with(t, &options) : NULL;
            if (!loaded[k]) status = ct_last_error();
            ct_release(t);
        }
        for (int k = 0; k < CT_OPTIM_MAX_STATE; k++) {
            if (status == CT_OK) {
                ct_release(ps->state[k]);
                ps->state[k] = loaded[k];
            } else {
                ct_release(loaded[k]);
            }
        }
        if (status == CT_OK) {
            ps->step = (int64_t)step;
            ct_release(ps->record); /* remade from the step count at the next step */
            ps->record = NULL;
        }
    }
    if (status == CT_OK) {
        for (int k = 0; k < count; k++) *h[k].value = values[k];
        if (o->kind == CT_OPTIM_SGD) o->sgd.nesterov = nesterov != 0.0;
    }
    ct_no_grad_pop();
    ct_api_return(NULL);
    return status;
}
