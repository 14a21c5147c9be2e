/* The optimizer record, shared by the optimizer base (optimizer.c), the algorithms (sgd.c,
 * adam.c) and checkpoints of optimizer state (optimizer_state.c). */
#ifndef CT_OPTIM_OPTIMIZER_INTERNAL_H
#define CT_OPTIM_OPTIMIZER_INTERNAL_H

#include "ctorch/autograd.h"
#include "ctorch/optim.h"
#include "ctorch/ops.h"
#include "kernels/kernel_ids.h"
#include "tensor/tensor_internal.h"

typedef enum ct_optim_kind { CT_OPTIM_SGD, CT_OPTIM_ADAM, CT_OPTIM_ADAMW, CT_OPTIM_RMSPROP, CT_OPTIM_ADAGRAD } ct_optim_kind;

#define CT_OPTIM_MAX_STATE 3

/* One parameter and its state. State tensors are made at the parameter's first step. */
typedef struct ct_param_state {
    ct_tensor *param;
    ct_tensor *state[CT_OPTIM_MAX_STATE];
    /* The steps taken: by the host's count, which a graph's replays do not see; a capturable
     * Adam's own count is the record's (ct_param_steps). */
    int64_t step;
    /* A capturable Adam's step record on the parameter's device: float64 [3], the count t, then
     * step t's lr / (1 - beta1^t) and sqrt(1 - beta2^t) (optim.ct); made with the state. */
    ct_tensor *record;
    /* Its parameter group (o->groups). */
    int64_t group;
    /* SGD's steps taken by a graph's replays (counted on the host by each replay of a graph that
     * captured a step of the parameter); NULL until a step is captured. */
    struct ct_replay_counter *replays;
} ct_param_state;

/* One parameter group (PyTorch's param_groups entry): its own options, every field set (the
 * optimizer's where the group left it NaN), over o->params[first .. first + count). */
typedef struct ct_optim_group {
    ct_sgd_options sgd;
    ct_adam_options adam;
    ct_rmsprop_options rmsprop;
    ct_adagrad_options adagrad;
    int64_t first, count;
} ct_optim_group;

struct ct_optimizer {
    ct_optim_kind kind;
    /* The options the optimizer was made with (capturable is the optimizer's, not a group's);
     * the update reads its group's (ct_optim_sgd_of, ct_optim_adam_of). */
    ct_sgd_options sgd;
    ct_adam_options adam;
    ct_rmsprop_options rmsprop;
    ct_adagrad_options adagrad;
    int64_t count;
    ct_param_state *params;
    int64_t group_count; /* at least 1 */
    ct_optim_group *groups;
    /* References held by schedulers (ct_optimizer_free releases only the last one). */
    int64_t refcount;
    /* Off by default: a step updates the parameters of each device and dtype together, a few
     * tensors per launch (optimizer_fused.c). On: a launch or two per parameter, as before (the
     * tests compare the two). */
    bool per_parameter;
    /* Within ct_optimizer_step_unscaled: the inverse loss scale the fused kernels multiply each
     * gradient by first (CT_OPTIM_FLAG_UNSCALE); 0 otherwise. */
    double unscale;
};

/* The names of a kind's state tensors ("momentum_buffer"; "exp_avg", "exp_avg_sq"). A slot may
 * stay NULL (SGD without momentum has no buffer). */
int ct_optim_state_count(const ct_optimizer *o);
const char *ct_optim_state_name(const ct_optimizer *o, int slot);

/* A new optimizer over the parameters of groups (validated: floating leaves, made to require
 * grad, each once), a group's NaN fields taken from options (the options struct of kind; NULL:
 * the defaults), every group's options checked. */
ct_optimizer *ct_optimizer_new_groups(const char *function, ct_optim_kind kind, const ct_param_group *groups,
                                      int64_t group_count, const void *options);
/* The parameters of a module, in ct_module_named_parameters' order, one group. */
ct_optimizer *ct_optimizer_new_for_module(const char *function, ct_optim_kind kind, const ct_module *m,
                                          const void *options);
/* SGD, Adam and AdamW: the multi-tensor kernels (optimizer_fused.c); the others step a parameter
 * at a time through tensor ops (rmsprop.c, adagrad.c). */
static inline bool ct_optim_fusable(const ct_optimizer *o) { return o->kind <= CT_OPTIM_ADAMW; }

/* The options of ps's group. */
static inline const ct_sgd_options *ct_optim_sgd_of(const ct_optimizer *o, const ct_param_state *ps)
{
    return &o->groups[ps->group].sgd;
}
static inline const ct_adam_options *ct_optim_adam_of(const ct_optimizer *o, const ct_param_state *ps)
{
    return &o->groups[ps->group].adam;
}
/* A group's learning rate (the field of its kind's options). */
static inline double *ct_optim_group_lr_field(ct_optimizer *o, int64_t group)
{
    switch (o->kind) {
    case CT_OPTIM_SGD: return &o->groups[group].sgd.lr;
    case CT_OPTIM_RMSPROP: return &o->groups[group].rmsprop.lr;
    case CT_OPTIM_ADAGRAD: return &o->groups[group].adagrad.lr;
    default: return &o->groups[group].adam.lr;
    }
}

/* Moves ps's state tensors to its parameter's device (and dtype) where they are not there. */
ct_status ct_optim_state_follow_param(ct_param_state *ps);

/* Launches an optimizer kernel over contiguous operands of one device (operands[0] gives the
 * element count and the device); flags as optim.ct reads them; s holds 4 scalars. */
ct_status ct_optim_launch(ct_kernel_id kernel, ct_tensor *const *operands, int count,
                          const double *s, long flags);

/* Checks parameter index's gradient and brings it and the parameter to the form the kernels
 * take: *grad contiguous on the parameter's device, *work the parameter or, where it is strided,
 * a contiguous copy to write back after the update. Both new references; *grad NULL (and CT_OK)
 * when the parameter has no gradient. */
ct_status ct_optim_prepare(ct_optimizer *o, int64_t index, ct_tensor **work, ct_tensor **grad);
/* The gradients of the parameters that have one, in order (borrowed), into a new array the caller
 * frees; *count how many. NULL with CT_ERR_OUT_OF_MEMORY recorded when the host has no memory. */
ct_tensor **ct_optim_gradients(const char *function, const ct_optimizer *o, int64_t *count);
/* Every parameter with a gradient updated in a few launches: the parameters of one device, dtype
 * (and step, for Adam's bias correction) go CT_MULTI_MAX_TENSORS to a launch. The same bits as
 * a step per parameter. */
ct_status ct_optimizer_step_fused(ct_optimizer *o);
/* The step itself (fused or per parameter), inside ct_api_enter and no-grad mode. */
ct_status ct_optimizer_step_all(ct_optimizer *o);
/* For the tests: a step per parameter (true) or fused (false, the default). */
void ct_optimizer_set_per_parameter(ct_optimizer *o, bool per_parameter);

/* One parameter's update (param and grad contiguous, state on the param's device). */
ct_status ct_sgd_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad);
ct_status ct_adam_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad);
ct_status ct_rmsprop_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad);
ct_status ct_adagrad_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad);

/* An Adam or AdamW made with capturable = true (its step counts on the devices). */
static inline bool ct_optim_capturable(const ct_optimizer *o)
{
    return o->kind != CT_OPTIM_SGD && o->adam.capturable;
}
/* Adam's state, made at a parameter's first step: the moments, zero, and for a capturable
 * optimizer the step record, [t, 0, 0] (the step's advance fills in the scalars). */
ct_status ct_adam_state(const ct_optimizer *o, ct_param_state *ps);
/* Adam's scalars of step t, lr / (1 - beta1^t) and sqrt(1 - beta2^t), computed as a capturable
 * step's kernel computes them (adam_scalars.c). */
void ct_adam_scalars(const ct_adam_options *options, int64_t t, double *step_size, double *root);
/* The steps parameter ps has taken: a capturable Adam's record read back (a wait on its device),
 * else the host's count. */
ct_status ct_param_steps(const ct_param_state *ps, int64_t *steps);

/* Counts a step of ps just taken (or, inside a capture, recorded): the host's count, or for SGD
 * inside a capture, one per replay of the graph (ct_capture_count_replays). */
ct_status ct_optim_count_step(const ct_optimizer *o, ct_param_state *ps);

/* The intermediate tensors of an update through tensor ops (rmsprop.c, adagrad.c), released
 * together: inside the library no op records into a scope. */
typedef struct ct_optim_scratch {
    ct_tensor *items[24];
    int count;
} ct_optim_scratch;
static inline ct_tensor *ct_optim_keep(ct_optim_scratch *s, ct_tensor *t)
{
    if (t && s->count < 24) s->items[s->count++] = t;
    return t;
}
static inline void ct_optim_scratch_release(ct_optim_scratch *s)
{
    for (int i = 0; i < s->count; i++) ct_release(s->items[i]);
    s->count = 0;
}

/* Option checks, with PyTorch's wording where it has one. */
ct_status ct_sgd_check_options(const char *function, const ct_sgd_options *options);
ct_status ct_adam_check_options(const char *function, const ct_adam_options *options);
ct_status ct_rmsprop_check_options(const char *function, const ct_rmsprop_options *options);
ct_status ct_adagrad_check_options(const char *function, const ct_adagrad_options *options);

#endif
