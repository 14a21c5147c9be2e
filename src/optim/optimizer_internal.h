/* The optimizer record, shared by the optimizer base (optimizer.c), the algorithms (sgd.c,
 * adam.c) and checkpoints of optimizer state (optimizer_state.c). */
#ifndef CT_OPTIM_OPTIMIZER_INTERNAL_H
#define CT_OPTIM_OPTIMIZER_INTERNAL_H

#include "ctorch/autograd.h"
#include "ctorch/optim.h"
#include "ctorch/ops.h"
#include "kernels/kernel_ids.h"
#include "tensor/tensor_internal.h"

typedef enum ct_optim_kind { CT_OPTIM_SGD, CT_OPTIM_ADAM, CT_OPTIM_ADAMW } ct_optim_kind;

#define CT_OPTIM_MAX_STATE 2

/* One parameter and its state. State tensors are made at the parameter's first step. */
typedef struct ct_param_state {
    ct_tensor *param;
    ct_tensor *state[CT_OPTIM_MAX_STATE];
    int64_t step;
} ct_param_state;

struct ct_optimizer {
    ct_optim_kind kind;
    ct_sgd_options sgd;
    ct_adam_options adam;
    int64_t count;
    ct_param_state *params;
};

/* The names of a kind's state tensors ("momentum_buffer"; "exp_avg", "exp_avg_sq"). A slot may
 * stay NULL (SGD without momentum has no buffer). */
int ct_optim_state_count(const ct_optimizer *o);
const char *ct_optim_state_name(const ct_optimizer *o, int slot);

/* A new optimizer over params (validated: floating leaves, made to require grad). */
ct_optimizer *ct_optimizer_new(const char *function, ct_optim_kind kind, ct_tensor *const *params,
                               int64_t count);
/* The parameters of a module, in ct_module_named_parameters' order, into a new optimizer. */
ct_optimizer *ct_optimizer_new_for_module(const char *function, ct_optim_kind kind, const ct_module *m);

/* Moves ps's state tensors to its parameter's device (and dtype) where they are not there. */
ct_status ct_optim_state_follow_param(ct_param_state *ps);

/* Launches an optimizer kernel over contiguous operands of one device (operands[0] gives the
 * element count and the device); flags as optim.ct reads them; s holds 4 scalars. */
ct_status ct_optim_launch(ct_kernel_id kernel, ct_tensor *const *operands, int count,
                          const double *s, long flags);

/* One parameter's update (param and grad contiguous, state on the param's device). */
ct_status ct_sgd_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad);
ct_status ct_adam_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad);

/* Option checks, with PyTorch's wording where it has one. */
ct_status ct_sgd_check_options(const char *function, const ct_sgd_options *options);
ct_status ct_adam_check_options(const char *function, const ct_adam_options *options);

#endif
