/* The optimizer base: the parameters and their state, the step loop, zero_grad, the learning
 * rate. The algorithms are in sgd.c and adam.c. */
#include <stdlib.h>
#include <string.h>

#include "device/capture.h"
#include "optim/optimizer_internal.h"
#include "tensor/tensor_internal.h"

/* The state tensors of each kind, by slot. */
static const char *const state_names[][CT_OPTIM_MAX_STATE] = {
    [CT_OPTIM_SGD] = {"momentum_buffer"},
    [CT_OPTIM_ADAM] = {"exp_avg", "exp_avg_sq"},
    [CT_OPTIM_ADAMW] = {"exp_avg", "exp_avg_sq"},
    [CT_OPTIM_RMSPROP] = {"square_avg", "momentum_buffer", "grad_avg"},
    [CT_OPTIM_ADAGRAD] = {"sum"},
};

int ct_optim_state_count(const ct_optimizer *o)
{
    int n = 0;
    while (n < CT_OPTIM_MAX_STATE && state_names[o->kind][n]) n++;
    return n;
}

const char *ct_optim_state_name(const ct_optimizer *o, int slot) { return state_names[o->kind][slot]; }

void ct_optimizer_free(ct_optimizer *o)
{
    if (!o) return;
    if (--o->refcount > 0) return; /* a scheduler still steers it (lr_scheduler.c) */
    ct_api_enter(); /* the optimizer's references were never in a scope */
    for (int64_t i = 0; i < o->count; i++) {
        ct_release(o->params[i].param);
        for (int k = 0; k < CT_OPTIM_MAX_STATE; k++) ct_release(o->params[i].state[k]);
        ct_release(o->params[i].record);
        ct_replay_counter_release(o->params[i].replays);
    }
    ct_api_return(NULL);
    free(o->params);
    free(o->groups);
    free(o);
}

ct_status ct_optim_state_follow_param(ct_param_state *ps)
{
    ct_to_options options = ct_to_options_default(ps->param->storage->device);
    options.dtype = ps->param->dtype;
    for (int k = 0; k < CT_OPTIM_MAX_STATE; k++) {
        ct_tensor *s = ps->state[k];
        if (!s || (ct_device_equal(s->storage->device, options.device) && s->dtype == ps->param->dtype))
            continue;
        ct_tensor *moved = ct_to_with(s, &options);
        if (!moved) return ct_last_error();
        ct_release(s);
        ps->state[k] = moved;
    }
    if (ps->record && !ct_device_equal(ps->record->storage->device, options.device)) {
        ct_tensor *moved = ct_to(ps->record, options.device); /* float64 wherever it goes */
        if (!moved) return ct_last_error();
        ct_release(ps->record);
        ps->record = moved;
    }
    return CT_OK;
}

ct_status ct_optim_count_step(const ct_optimizer *o, ct_param_state *ps)
{
    ct_device device = ps->param->storage->device;
    if (o->kind != CT_OPTIM_SGD || !ct_capture_joined(device)) {
        ps->step++;
        return CT_OK;
    }
    /* recorded, not run: each replay takes the step (a capturable Adam counts on the device) */
    if (!ps->replays && !(ps->replays = ct_replay_counter_new())) return ct_last_error();
    return ct_capture_count_replays(device, ps->replays);
}

ct_status ct_param_steps(const ct_param_state *ps, int64_t *steps)
{
    *steps = ps->step + (ps->replays ? atomic_load(&ps->replays->count) : 0);
    if (!ps->record) return CT_OK;
    double record[3];
    ct_status status = ct_tensor_to_array(ps->record, record, sizeof record);
    if (status == CT_OK) *steps = (int64_t)record[0];
    return status;
}

ct_status ct_optim_launch(ct_kernel_id kernel, ct_tensor *const *operands, int count,
                          const double *s, long flags)
{
    ct_kparams p = {0};
    p.n = ct_numel(operands[0]);
    if (p.n == 0) return CT_OK;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {0};
    for (int k = 0; k < count; k++) {
        buffers[k] = ct_tensor_handle(operands[k]);
        p.off[k] = operands[k]->offset;
    }
    p.l[0] = flags == 0; /* the branch-free common case (see optim.ct) */
    p.l[1] = flags;
    memcpy(p.s, s, sizeof p.s);
    return ct_backend_launch(operands[0]->storage->device, kernel, buffers, &p, count);
}

ct_tensor **ct_optim_gradients(const char *function, const ct_optimizer *o, int64_t *count)
{
    *count = 0;
    ct_tensor **grads = malloc((o->count > 0 ? (size_t)o->count : 1) * sizeof *grads);
    if (!grads) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    for (int64_t i = 0; i < o->count; i++)
        if (o->params[i].param->grad) grads[(*count)++] = o->params[i].param->grad;
    return grads;
}

ct_status ct_optim_prepare(ct_optimizer *o, int64_t index, ct_tensor **work, ct_tensor **grad_out)
{
    const char *function = "ct_optimizer_step";
    ct_param_state *ps = &o->params[index];
    ct_tensor *param = ps->param, *grad = param->grad;
    *work = *grad_out = NULL;
    if (!grad) return CT_OK; /* not part of this backward: PyTorch skips it too */
    char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX], s1[256], s2[256];
    if (!ct_device_equal(grad->storage->device, param->storage->device))
        return ct_error(CT_ERR_DEVICE, "%s: parameter %lld is on %s but its gradient on %s (was the "
                        "module moved between backward and step?)", function, (long long)index,
                        ct_device_format(param->storage->device, a, sizeof a),
                        ct_device_format(grad->storage->device, b, sizeof b));
    if (grad->dtype != param->dtype || grad->ndim != param->ndim ||
        memcmp(grad->shape, param->shape, sizeof(int64_t) * (size_t)param->ndim))
        return ct_error(CT_ERR_SHAPE, "%s: parameter %lld is %s %s but its gradient %s %s", function,
                        (long long)index, ct_dtype_name(param->dtype),
                        ct_shape_format(param->shape, param->ndim, s1, sizeof s1),
                        ct_dtype_name(grad->dtype), ct_shape_format(grad->shape, grad->ndim, s2, sizeof s2));
    ct_status status = ct_optim_state_follow_param(ps);
    if (status != CT_OK) return status;
    ct_tensor *g = ct_contiguous(grad);
    ct_tensor *w = ct_contiguous(param); /* param itself when contiguous */
    if (!g || !w) {
        status = ct_last_error();
        ct_release(g);
        ct_release(w);
        return status;
    }
    *work = w;
    *grad_out = g;
    return CT_OK;
}

/* Runs the algorithm on a contiguous param (a copy written back when param is a strided view). */
static ct_status step_one(ct_optimizer *o, int64_t index)
{
    ct_param_state *ps = &o->params[index];
    ct_tensor *work, *g;
    ct_status status = ct_optim_prepare(o, index, &work, &g);
    if (status != CT_OK || !g) return status;
    switch (o->kind) {
    case CT_OPTIM_SGD: status = ct_sgd_update(o, ps, work, g); break;
    case CT_OPTIM_RMSPROP: status = ct_rmsprop_update(o, ps, work, g); break;
    case CT_OPTIM_ADAGRAD: status = ct_adagrad_update(o, ps, work, g); break;
    default: status = ct_adam_update(o, ps, work, g); break;
    }
    if (status == CT_OK && work != ps->param) status = ct_copy_(ps->param, work);
    ct_release(g);
    ct_release(work);
    return status;
}

ct_status ct_optimizer_step_all(ct_optimizer *o)
{
    /* a capturable Adam's records go through the multi-tensor kernels only (a parameter a launch
     * when not fused) */
    if (ct_optim_fusable(o) && (!o->per_parameter || ct_optim_capturable(o))) return ct_optimizer_step_fused(o);
    ct_status status = CT_OK;
    for (int64_t i = 0; status == CT_OK && i < o->count; i++) status = step_one(o, i);
    return status;
}

/* A step a graph captures replays its host values (graph.h): Adam's bias correction changes every
 * step unless the step is capturable (then the device computes it), and a first step makes state
 * (zero moments, SGD's buf = g) that later steps must not remake. */
static ct_status refuse_capture(const ct_optimizer *o)
{
    for (int64_t i = 0; i < o->count; i++) {
        const ct_param_state *ps = &o->params[i];
        ct_device device = ct_tensor_device(ps->param);
        if (!ct_capture_joined(device)) continue;
        const char *name = o->kind == CT_OPTIM_SGD       ? "ct_optimizer_step (SGD's first step)"
                           : o->kind == CT_OPTIM_ADAM    ? "ct_optimizer_step (Adam)"
                           : o->kind == CT_OPTIM_ADAMW   ? "ct_optimizer_step (AdamW)"
                           : o->kind == CT_OPTIM_RMSPROP ? "ct_optimizer_step (RMSprop)"
                                                         : "ct_optimizer_step (Adagrad)";
        if (!ct_optim_fusable(o))
            return ct_capture_refuse(device, true, name,
                                     "makes its state at a parameter's first step and counts its steps on "
                                     "the host (step it outside the graph)");
        if (o->kind != CT_OPTIM_SGD && !ct_optim_capturable(o))
            return ct_capture_refuse(device, true, name,
                                     "computes its bias correction on the host from the step count, "
                                     "which a replay would not advance (make it with capturable = "
                                     "true, or step it outside the graph)");
        if (o->kind != CT_OPTIM_SGD && ps->param->grad && !ps->record)
            return ct_capture_refuse(device, true, name,
                                     "makes its state (zero moments, the step count on the device) at "
                                     "a parameter's first step, which every replay would redo (take a "
                                     "step before capturing)");
        if (o->kind == CT_OPTIM_SGD && ct_optim_sgd_of(o, ps)->momentum != 0 && !ps->state[0])
            return ct_capture_refuse(device, true, name,
                                     "sets the momentum buffer to the gradient where later steps "
                                     "blend it in (take a step before capturing)");
    }
    return CT_OK;
}

ct_status ct_optimizer_step(ct_optimizer *o)
{
    if (!o) return ct_null_argument("ct_optimizer_step", "optimizer"), ct_last_error();
    ct_status refused = refuse_capture(o);
    if (refused != CT_OK) return refused;
    ct_api_enter();
    ct_no_grad_push(); /* the update is not part of any graph */
    ct_status status = ct_optimizer_step_all(o);
    ct_no_grad_pop();
    ct_api_return(NULL);
    return status;
}

void ct_optimizer_zero_grad(ct_optimizer *o)
{
    if (!o) {
        ct_null_argument("ct_optimizer_zero_grad", "optimizer");
        return;
    }
    for (int64_t i = 0; i < o->count; i++) ct_zero_grad(o->params[i].param);
}

const char *ct_optimizer_kind(const ct_optimizer *o)
{
    if (!o) return ct_null_argument("ct_optimizer_kind", "optimizer");
    static const char *const names[] = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"};
    return names[o->kind];
}

int64_t ct_optimizer_param_count(const ct_optimizer *o)
{
    if (!o) return ct_null_argument("ct_optimizer_param_count", "optimizer"), 0;
    return o->count;
}

ct_tensor *ct_optimizer_param(const ct_optimizer *o, int64_t index)
{
    CT_API_ENTER;
    if (!o) return ct_api_return(ct_null_argument("ct_optimizer_param", "optimizer"));
    if (index < 0 || index >= o->count)
        return ct_api_return(ct_error_null(CT_ERR_INDEX, "ct_optimizer_param: index %lld is out of "
                                           "range for an optimizer of %lld parameters",
                                           (long long)index, (long long)o->count));
    atomic_fetch_add(&o->params[index].param->refcount, 1);
    return ct_api_return(o->params[index].param);
}

int64_t ct_optimizer_steps(const ct_optimizer *o)
{
    int64_t steps = 0;
    if (!o) return ct_null_argument("ct_optimizer_steps", "optimizer"), 0;
    for (int64_t i = 0; i < o->count; i++) {
        int64_t taken = 0;
        if (ct_param_steps(&o->params[i], &taken) != CT_OK) return 0;
        if (taken > steps) steps = taken;
    }
    return steps;
}

ct_tensor *ct_optimizer_state(const ct_optimizer *o, int64_t index, const char *name)
{
    CT_API_ENTER;
    const char *function = "ct_optimizer_state";
    if (!o) return ct_api_return(ct_null_argument(function, "optimizer"));
    if (!name) return ct_api_return(ct_null_argument(function, "name"));
    if (index < 0 || index >= o->count)
        return ct_api_return(ct_error_null(CT_ERR_INDEX, "%s: index %lld is out of range for an "
                                           "optimizer of %lld parameters", function,
                                           (long long)index, (long long)o->count));
    /* State follows its parameter's device on every access, not only at a step. */
    if (ct_optim_state_follow_param(&o->params[index]) != CT_OK) return ct_api_return(NULL);
    for (int k = 0; k < ct_optim_state_count(o); k++)
        if (!strcmp(ct_optim_state_name(o, k), name) && o->params[index].state[k]) {
            atomic_fetch_add(&o->params[index].state[k]->refcount, 1);
            return ct_api_return(o->params[index].state[k]);
        }
    return ct_api_return(ct_error_null(CT_ERR_INDEX, "%s: %s has no state '%s' for parameter %lld%s",
                                       function, ct_optimizer_kind(o), name, (long long)index,
                                       o->params[index].step ? "" : " (it has not taken a step yet)"));
}
