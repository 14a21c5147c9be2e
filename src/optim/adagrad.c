/* torch.optim.Adagrad and its single-tensor arithmetic, through tensor ops on the parameter's
 * device (a few launches per parameter). */
#include <math.h>

#include "optim/optimizer_internal.h"

ct_adagrad_options ct_adagrad_options_default(double lr)
{
    return (ct_adagrad_options){.lr = lr, .lr_decay = 0.0, .weight_decay = 0.0, .initial_accumulator_value = 0.0,
                                .eps = 1e-10};
}

ct_status ct_adagrad_check_options(const char *function, const ct_adagrad_options *o)
{
    /* PyTorch's checks and wording */
    if (!(o->lr >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid learning rate: %g", function, o->lr);
    if (!(o->lr_decay >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid lr_decay value: %g", function, o->lr_decay);
    if (!(o->weight_decay >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid weight_decay value: %g", function, o->weight_decay);
    if (!(o->initial_accumulator_value >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid initial_accumulator_value value: %g", function,
                        o->initial_accumulator_value);
    if (!(o->eps >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid epsilon value: %g", function, o->eps);
    return CT_OK;
}

/* dst = value, in place (value kept in the scratch list). */
static ct_status assign(ct_tensor *dst, const ct_tensor *value)
{
    return value ? ct_copy_(dst, value) : ct_last_error();
}

#define K(call) ct_optim_keep(&scratch, (call))

ct_status ct_adagrad_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad)
{
    const ct_adagrad_options *opt = &o->groups[ps->group].adagrad;
    if (!ps->state[0]) {
        ps->state[0] = ct_full(param->shape, param->ndim, opt->initial_accumulator_value, param->dtype,
                               param->storage->device);
        if (!ps->state[0]) return ct_last_error();
    }
    ct_tensor *sum = ps->state[0];
    int64_t t = ps->step + 1;
    double clr = opt->lr / (1.0 + (double)(t - 1) * opt->lr_decay);
    ct_optim_scratch scratch = {.count = 0};
    /* g = grad + weight_decay p; sum += g g; p -= clr g / (sqrt(sum) + eps) */
    ct_tensor *g = opt->weight_decay != 0.0 ? K(ct_add(grad, K(ct_mul_scalar(param, opt->weight_decay)))) : grad;
    ct_status status = assign(sum, K(ct_add(sum, K(ct_mul(g, g)))));
    ct_tensor *std = K(ct_add_scalar(K(ct_sqrt(sum)), opt->eps));
    if (status == CT_OK) status = assign(param, K(ct_sub(param, K(ct_mul_scalar(K(ct_div(g, std)), clr)))));
    ct_optim_scratch_release(&scratch);
    if (status == CT_OK) ps->step = t;
    return status;
}
