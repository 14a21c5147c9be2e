/* torch.optim.RMSprop and its single-tensor arithmetic, through tensor ops on the parameter's
 * device (a few launches per parameter): every device runs it as it runs the ops. */
#include <math.h>

#include "optim/optimizer_internal.h"

ct_rmsprop_options ct_rmsprop_options_default(double lr)
{
    return (ct_rmsprop_options){.lr = lr, .alpha = 0.99, .eps = 1e-8, .weight_decay = 0.0, .momentum = 0.0,
                                .centered = false};
}

ct_status ct_rmsprop_check_options(const char *function, const ct_rmsprop_options *o)
{
    /* PyTorch's checks and wording */
    if (!(o->lr >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid learning rate: %g", function, o->lr);
    if (!(o->eps >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid epsilon value: %g", function, o->eps);
    if (!(o->momentum >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid momentum value: %g", function, o->momentum);
    if (!(o->weight_decay >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid weight_decay value: %g", function, o->weight_decay);
    if (!(o->alpha >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid alpha value: %g", function, o->alpha);
    return CT_OK;
}

/* dst = value, in place (value kept in the scratch list). */
static ct_status assign(ct_tensor *dst, const ct_tensor *value)
{
    return value ? ct_copy_(dst, value) : ct_last_error();
}

/* A zero state tensor shaped as param, where slot has none. */
static ct_status zero_state(ct_param_state *ps, int slot, const ct_tensor *param)
{
    if (ps->state[slot]) return CT_OK;
    ps->state[slot] = ct_zeros(param->shape, param->ndim, param->dtype, param->storage->device);
    return ps->state[slot] ? CT_OK : ct_last_error();
}

#define K(call) ct_optim_keep(&scratch, (call))

ct_status ct_rmsprop_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad)
{
    const ct_rmsprop_options *opt = &o->groups[ps->group].rmsprop;
    ct_status status = zero_state(ps, 0, param);
    if (status == CT_OK && opt->momentum > 0.0) status = zero_state(ps, 1, param);
    if (status == CT_OK && opt->centered) status = zero_state(ps, 2, param);
    if (status != CT_OK) return status;
    ct_tensor *square_avg = ps->state[0], *buf = ps->state[1], *grad_avg = ps->state[2];
    ct_optim_scratch scratch = {.count = 0};
    /* g = grad + weight_decay p */
    ct_tensor *g = opt->weight_decay != 0.0 ? K(ct_add(grad, K(ct_mul_scalar(param, opt->weight_decay)))) : grad;
    /* square_avg = alpha square_avg + (1 - alpha) g g */
    status = assign(square_avg, K(ct_add(K(ct_mul_scalar(square_avg, opt->alpha)),
                                         K(ct_mul(K(ct_mul_scalar(g, 1.0 - opt->alpha)), g)))));
    ct_tensor *avg = NULL;
    if (status == CT_OK && opt->centered) {
        /* grad_avg.lerp_(g, 1 - alpha); avg = sqrt(square_avg - grad_avg^2) */
        status = assign(grad_avg, K(ct_add(grad_avg, K(ct_mul_scalar(K(ct_sub(g, grad_avg)), 1.0 - opt->alpha)))));
        avg = K(ct_sqrt(K(ct_sub(square_avg, K(ct_mul(grad_avg, grad_avg))))));
    } else {
        avg = K(ct_sqrt(square_avg));
    }
    avg = K(ct_add_scalar(avg, opt->eps));
    if (status == CT_OK && opt->momentum > 0.0) {
        /* buf = momentum buf + g / avg; p -= lr buf */
        status = assign(buf, K(ct_add(K(ct_mul_scalar(buf, opt->momentum)), K(ct_div(g, avg)))));
        if (status == CT_OK) status = assign(param, K(ct_sub(param, K(ct_mul_scalar(buf, opt->lr)))));
    } else if (status == CT_OK) {
        status = assign(param, K(ct_sub(param, K(ct_mul_scalar(K(ct_div(g, avg)), opt->lr)))));
    }
    ct_optim_scratch_release(&scratch);
    if (status == CT_OK) ps->step++;
    return status;
}
