/* torch.optim.Adam and AdamW: two kernels per parameter, the moments and the update. */
#include "optim/optimizer_internal.h"

ct_adam_options ct_adam_options_default(double lr)
{
    return (ct_adam_options){.lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0};
}

ct_adam_options ct_adamw_options_default(double lr)
{
    ct_adam_options o = ct_adam_options_default(lr);
    o.weight_decay = 1e-2;
    return o;
}

ct_status ct_adam_check_options(const char *function, const ct_adam_options *o)
{
    if (!o) return ct_null_argument(function, "options"), ct_last_error();
    if (!(o->lr >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid learning rate: %g", function, o->lr);
    if (!(o->eps >= 0.0)) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid epsilon value: %g", function, o->eps);
    if (!(o->beta1 >= 0.0 && o->beta1 < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid beta parameter at index 0: %g (it must "
                        "be in [0, 1))", function, o->beta1);
    if (!(o->beta2 >= 0.0 && o->beta2 < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid beta parameter at index 1: %g (it must "
                        "be in [0, 1))", function, o->beta2);
    if (!(o->weight_decay >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Invalid weight_decay value: %g", function,
                        o->weight_decay);
    return CT_OK;
}

ct_status ct_adam_state(const ct_optimizer *o, ct_param_state *ps)
{
    ct_tensor *param = ps->param;
    for (int k = 0; k < 2; k++)
        if (!ps->state[k]) {
            ps->state[k] = ct_zeros(param->shape, param->ndim, param->dtype, param->storage->device);
            if (!ps->state[k]) return ct_last_error();
        }
    if (ct_optim_capturable(o) && !ps->record) {
        double initial[3] = {(double)ps->step, 0.0, 0.0};
        ps->record = ct_tensor_from_data(initial, CT_F64, (const int64_t[]){3}, 1, param->storage->device);
        if (!ps->record) return ct_last_error();
    }
    return CT_OK;
}

ct_status ct_adam_update(ct_optimizer *o, ct_param_state *ps, ct_tensor *param, ct_tensor *grad)
{
    static const ct_kernel_id moments[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(adam_moments);
    static const ct_kernel_id update[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(adam_update);
    const ct_adam_options *opt = ct_optim_adam_of(o, ps);
    ct_status status = ct_adam_state(o, ps);
    if (status != CT_OK) return status;
    bool decoupled = o->kind == CT_OPTIM_ADAMW;
    double l2 = decoupled ? 0.0 : opt->weight_decay;
    double s_moments[4] = {opt->beta1, opt->beta2, l2, 0.0};
    status = ct_optim_launch(moments[param->dtype], (ct_tensor *[]){ps->state[0], ps->state[1], grad, param}, 4,
                             s_moments, l2 != 0.0 ? CT_OPTIM_FLAG_WEIGHT_DECAY : 0);
    if (status != CT_OK) return status;
    int64_t t = ps->step + 1;
    double decay = decoupled ? 1.0 - opt->lr * opt->weight_decay : 1.0;
    double s_update[4] = {decay, 0.0, 0.0, opt->eps};
    ct_adam_scalars(opt, t, &s_update[1], &s_update[2]);
    status = ct_optim_launch(update[param->dtype], (ct_tensor *[]){param, ps->state[0], ps->state[1]}, 3,
                             s_update, decoupled && opt->weight_decay != 0.0 ? CT_OPTIM_FLAG_WEIGHT_DECAY : 0);
    if (status == CT_OK) ps->step = t;
    return status;
}
