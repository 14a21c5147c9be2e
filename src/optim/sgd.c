/* torch.optim.SGD (momentum, dampening, Nesterov, weight decay) as one kernel per parameter. */
#include "optim/optimizer_internal.h"

ct_sgd_options ct_sgd_options_default(double lr)
{
    return (ct_sgd_options){.lr = lr, .momentum = 0.0, .dampening = 0.0, .weight_decay = 0.0,
                            .nesterov = false};
}

ct_status ct_sgd_check_options(const char *function, const ct_sgd_options *o)
{
    if (!o) return ct_null_argument(function, "options"), ct_last_error();
    if (!(o->lr >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid learning rate: %g", function, o->lr);
    if (!(o->momentum >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid momentum value: %g", function, o->momentum);
    if (!(o->weight_decay >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid weight_decay value: %g", function,
                        o->weight_decay);
    if (o->dampening != o->dampening)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid dampening value: %g", function, o->dampening);
    if (o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Nesterov momentum requires a momentum and zero "
                        "dampening (momentum %g, dampening %g)", function, o->momentum, o->dampening);
    return CT_OK;
}

ct_status ct_sgd_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad)
{
    static const ct_kernel_id plain[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(sgd_step);
    static const ct_kernel_id with_momentum[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(sgd_momentum_step);
    const ct_sgd_options *opt = ct_optim_sgd_of(o, ps);
    long flags = opt->weight_decay != 0.0 ? CT_OPTIM_FLAG_WEIGHT_DECAY : 0;
    ct_status status;
    if (opt->momentum == 0.0) {
        double s[4] = {opt->lr, opt->weight_decay, 0.0, 0.0};
        status = ct_optim_launch(plain[param->dtype], (ct_tensor *[]){param, grad}, 2, s, flags);
    } else {
        if (!ps->state[0]) {
            /* The kernel writes it whole on the first step (buf = g), so it needs no clearing. */
            ps->state[0] = ct_empty(param->shape, param->ndim, param->dtype, param->storage->device);
            if (!ps->state[0]) return ct_last_error();
            flags |= CT_OPTIM_FLAG_FIRST_STEP;
        }
        if (opt->nesterov) flags |= CT_OPTIM_FLAG_NESTEROV;
        double s[4] = {opt->lr, opt->momentum, 1.0 - opt->dampening, opt->weight_decay};
        status = ct_optim_launch(with_momentum[param->dtype], (ct_tensor *[]){param, grad, ps->state[0]},
                                 3, s, flags);
    }
    if (status == CT_OK) status = ct_optim_count_step(o, ps);
    return status;
}
