/* Fused optimizer steps, after PyTorch's foreach/fused optimizers and multi_tensor_apply: the
 * parameters of one device and dtype are updated CT_MULTI_MAX_TENSORS to a launch by the
 * multi-tensor kernels of optim.ct, instead of a launch or two per parameter.
 *
 * Why buffers as kernel arguments, and not a table of addresses uploaded to the device: an OpenCL
 * buffer is a handle, not an address (no SVM assumed), so only kernel arguments can name several
 * of them portably; an upload per launch would also cost a copy. Each tensor's offset and size go
 * in the parameter block (optim.ct says where), which bounds a launch at 8 tensors of up to 4
 * roles (32 buffers). A lone tensor of a group goes through them too (Adam: one launch, where
 * the per-parameter kernels take two). The arithmetic per element is the per-parameter kernels'
 * (shared macros), so the results are the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/multi_tensor.h"
#include "optim/optimizer_internal.h"

typedef struct fused_entry {
    ct_param_state *ps;
    ct_tensor *work, *grad; /* contiguous forms (ct_optim_prepare) */
    long first;             /* SGD with momentum: the buffer does not exist yet */
    bool done;
} fused_entry;

void ct_optimizer_set_per_parameter(ct_optimizer *o, bool per_parameter)
{
    if (o) o->per_parameter = per_parameter;
}

ct_status ct_optimizer_set_fused(ct_optimizer *o, bool fused)
{
    if (!o) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_optimizer_set_fused: argument 'optimizer' is NULL");
    o->per_parameter = !fused;
    return CT_OK;
}

/* Entries that may share a launch: one device, dtype, parameter group (the same scalars) and flags. */
static bool same_group(const ct_optimizer *o, const fused_entry *a, const fused_entry *b)
{
    if (!ct_device_equal(a->work->storage->device, b->work->storage->device) ||
        a->work->dtype != b->work->dtype || a->ps->group != b->ps->group)
        return false;
    if (o->kind == CT_OPTIM_SGD) return a->first == b->first;
    /* Adam's bias correction is per step count: the host's, or each record's own */
    return ct_optim_capturable(o) || a->ps->step == b->ps->step;
}

/* One multi-tensor launch (ct_multi_tensor_launch) with the optimizer's scalars: s, 4 of them;
 * more: NULL or 3 more, passed as bits in off (multi_adam_step). */
static ct_status multi_launch(const ct_optimizer *o, ct_kernel_id kernel, ct_tensor *operands[][CT_MULTI_MAX_ROLES],
                              int tensors, int roles, const double *s, const double *more, long flags)
{
    ct_kparams p = {0};
    if (o->unscale != 0.0) { /* a loss scaler's step (optimizer_unscaled.c) */
        flags |= CT_OPTIM_FLAG_UNSCALE;
        memcpy(&p.l[3], &o->unscale, sizeof o->unscale);
    }
    p.l[1] = flags;
    for (int k = 0; k < 4; k++) p.s[k] = s[k];
    if (more) memcpy(p.off, more, 3 * sizeof *more);
    return ct_multi_tensor_launch(kernel, operands, tensors, roles, &p);
}

static ct_status sgd_group(ct_optimizer *o, fused_entry *const *group, int count)
{
    static const ct_kernel_id plain[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(multi_sgd_step);
    static const ct_kernel_id with_momentum[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(multi_sgd_momentum_step);
    const ct_sgd_options *opt = ct_optim_sgd_of(o, group[0]->ps);
    ct_dtype dtype = group[0]->work->dtype;
    long flags = opt->weight_decay != 0.0 ? CT_OPTIM_FLAG_WEIGHT_DECAY : 0;
    ct_tensor *operands[CT_MULTI_MAX_TENSORS][CT_MULTI_MAX_ROLES] = {{0}};
    if (opt->momentum == 0.0) {
        double s[4] = {opt->lr, opt->weight_decay, 0.0, 0.0};
        for (int t = 0; t < count; t++) {
            operands[t][0] = group[t]->work;
            operands[t][1] = group[t]->grad;
        }
        return multi_launch(o, plain[dtype], operands, count, 2, s, NULL, flags);
    }
    for (int t = 0; t < count; t++) {
        ct_param_state *ps = group[t]->ps;
        if (!ps->state[0]) { /* written whole on the first step (buf = g), as in sgd.c */
            ps->state[0] = ct_empty(ps->param->shape, ps->param->ndim, dtype, ps->param->storage->device);
            if (!ps->state[0]) return ct_last_error();
        }
        operands[t][0] = group[t]->work;
        operands[t][1] = group[t]->grad;
        operands[t][2] = ps->state[0];
    }
    if (group[0]->first) flags |= CT_OPTIM_FLAG_FIRST_STEP;
    if (opt->nesterov) flags |= CT_OPTIM_FLAG_NESTEROV;
    double s[4] = {opt->lr, opt->momentum, 1.0 - opt->dampening, opt->weight_decay};
    return multi_launch(o, with_momentum[dtype], operands, count, 3, s, NULL, flags);
}

/* Adam and AdamW in one launch (multi_adam_step), the scalars as adam.c computes them, so that
 * the bits are the same; a capturable step's scalars are its records' (advanced before). */
static ct_status adam_group(ct_optimizer *o, fused_entry *const *group, int count)
{
    static const ct_kernel_id step[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(multi_adam_step);
    const ct_adam_options *opt = ct_optim_adam_of(o, group[0]->ps);
    ct_dtype dtype = group[0]->work->dtype;
    ct_tensor *operands[CT_MULTI_MAX_TENSORS][CT_MULTI_MAX_ROLES] = {{0}};
    for (int t = 0; t < count; t++) {
        ct_param_state *ps = group[t]->ps;
        ct_tensor *roles[5] = {group[t]->work, group[t]->grad, ps->state[0], ps->state[1], ps->record};
        for (int r = 0; r < 5; r++) operands[t][r] = roles[r];
    }
    bool decoupled = o->kind == CT_OPTIM_ADAMW;
    double l2 = decoupled ? 0.0 : opt->weight_decay;
    double decay = decoupled ? 1.0 - opt->lr * opt->weight_decay : 1.0;
    double s[4] = {opt->beta1, opt->beta2, l2, opt->eps};
    double more[3] = {decay, 0.0, 0.0};
    if (!ct_optim_capturable(o)) ct_adam_scalars(opt, group[0]->ps->step + 1, &more[1], &more[2]);
    long flags = (l2 != 0.0 ? CT_OPTIM_FLAG_WEIGHT_DECAY : 0) |
                 (decoupled && opt->weight_decay != 0.0 ? CT_OPTIM_FLAG_DECOUPLED_DECAY : 0) |
                 (ct_optim_capturable(o) ? CT_OPTIM_FLAG_CAPTURABLE : 0);
    return multi_launch(o, step[dtype], operands, count, ct_optim_capturable(o) ? 5 : 4, s, more, flags);
}

/* A capturable step's records advanced to the step about to be taken, 8 a launch per device and
 * parameter group (multi_adam_advance, with the group's lr and betas), before any parameter of the
 * step reads them. */
static ct_status advance_records(ct_optimizer *o, fused_entry *entries, int64_t count)
{
    bool *advanced = calloc(count > 0 ? (size_t)count : 1, sizeof *advanced);
    if (!advanced) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_optimizer_step: no host memory");
    int most = o->per_parameter ? 1 : CT_MULTI_MAX_TENSORS;
    ct_status status = CT_OK;
    for (int64_t i = 0; status == CT_OK && i < count; i++) {
        if (advanced[i]) continue;
        const ct_adam_options *opt = ct_optim_adam_of(o, entries[i].ps);
        double s[4] = {opt->lr, opt->beta1, opt->beta2, 0.0};
        ct_tensor *operands[CT_MULTI_MAX_TENSORS][CT_MULTI_MAX_ROLES] = {{0}};
        int size = 0;
        for (int64_t j = i; j < count && size < most; j++)
            if (!advanced[j] && entries[i].ps->group == entries[j].ps->group &&
                ct_device_equal(entries[i].work->storage->device, entries[j].work->storage->device)) {
                operands[size++][0] = entries[j].ps->record;
                advanced[j] = true;
            }
        status = multi_launch(o, CT_K_multi_adam_advance_f64, operands, size, 1, s, NULL, 0);
    }
    free(advanced);
    return status;
}

/* Updates each entry not yet done, with the next ones of its group. */
static ct_status run_groups(ct_optimizer *o, fused_entry *entries, int64_t count)
{
    for (int64_t i = 0; o->kind != CT_OPTIM_SGD && i < count; i++) {
        ct_status status = ct_adam_state(o, entries[i].ps);
        if (status != CT_OK) return status;
    }
    if (ct_optim_capturable(o)) {
        ct_status status = advance_records(o, entries, count);
        if (status != CT_OK) return status;
    }
    /* A capturable Adam's fifth role (its record) leaves room for 6 tensors in a launch. */
    int most = o->per_parameter ? 1 : ct_optim_capturable(o) ? CT_KERNEL_WIDE_BUFFERS / 5 : CT_MULTI_MAX_TENSORS;
    for (int64_t i = 0; i < count; i++) {
        if (entries[i].done) continue;
        fused_entry *group[CT_MULTI_MAX_TENSORS] = {NULL}; /* entries[i] comes first */
        int size = 0;
        for (int64_t j = i; j < count && size < most; j++)
            if (!entries[j].done && same_group(o, &entries[i], &entries[j])) group[size++] = &entries[j];
        ct_status status = o->kind == CT_OPTIM_SGD ? sgd_group(o, group, size) : adam_group(o, group, size);
        if (status != CT_OK) return status;
        for (int k = 0; k < size; k++) {
            group[k]->done = true;
            status = ct_optim_count_step(o, group[k]->ps);
            if (status != CT_OK) return status;
        }
    }
    return CT_OK;
}

ct_status ct_optimizer_step_fused(ct_optimizer *o)
{
    fused_entry *entries = calloc(o->count > 0 ? (size_t)o->count : 1, sizeof *entries);
    if (!entries) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_optimizer_step: no host memory");
    int64_t count = 0;
    ct_status status = CT_OK;
    /* Every gradient is checked before any parameter changes. */
    for (int64_t i = 0; status == CT_OK && i < o->count; i++) {
        fused_entry *e = &entries[count];
        status = ct_optim_prepare(o, i, &e->work, &e->grad);
        if (status != CT_OK || !e->grad) continue;
        e->ps = &o->params[i];
        e->first = o->kind == CT_OPTIM_SGD && ct_optim_sgd_of(o, e->ps)->momentum != 0.0 && !e->ps->state[0];
        count++;
    }
    if (status == CT_OK) status = run_groups(o, entries, count);
    for (int64_t i = 0; i < count; i++) {
        if (status == CT_OK && entries[i].work != entries[i].ps->param)
            status = ct_copy_(entries[i].ps->param, entries[i].work);
        ct_tensor *grad = entries[i].ps->param->grad; /* unscaled in a contiguous copy: back */
        if (status == CT_OK && o->unscale != 0.0 && entries[i].grad != grad) status = ct_copy_(grad, entries[i].grad);
        ct_release(entries[i].grad);
        ct_release(entries[i].work);
    }
    free(entries);
    return status;
}
