/* A step with loss scaling joined in (ct_optimizer_step_unscaled, optim.h): the check for infs
 * and NaNs in the unscaled gradients as partial sums of g * inv_scale * 0 (multi_power_sum, a
 * launch per 8 gradients and one read per device and dtype), then, when every gradient is
 * finite, the fused step with the unscaling in its own launches (CT_OPTIM_FLAG_UNSCALE). */
#include <math.h>
#include <stdlib.h>

#include "ops/multi_tensor.h"
#include "optim/optimizer_internal.h"

ct_status ct_optimizer_step_unscaled(ct_optimizer *o, double inv_scale, bool *found_inf)
{
    const char *function = "ct_optimizer_step_unscaled";
    if (!o) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument 'optimizer' is NULL", function);
    if (!found_inf) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument 'found_inf' is NULL", function);
    *found_inf = false;
    if (!(inv_scale > 0.0) || isinf(inv_scale))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: inv_scale is %g; it must be a finite number > 0 "
                        "(1 / the loss scale)", function, inv_scale);
    int64_t n = 0;
    ct_tensor **grads = ct_optim_gradients(function, o, &n);
    if (!grads) return ct_last_error();
    ct_api_enter();
    ct_no_grad_push();
    double check = 0.0;
    ct_status status = ct_multi_tensor_power_sum(grads, n, CT_MULTI_SUM_TIMES_ZERO, inv_scale, &check);
    *found_inf = status == CT_OK && isnan(check);
    if (status == CT_OK && !*found_inf) {
        /* the tests' reference, and the optimizers without multi-tensor kernels: unscaled first */
        if ((o->per_parameter || !ct_optim_fusable(o)) && inv_scale != 1.0)
            status = ct_multi_tensor_scale_(grads, n, inv_scale, NULL);
        else if (inv_scale != 1.0)
            o->unscale = inv_scale;
        if (status == CT_OK) status = ct_optimizer_step_all(o);
        o->unscale = 0.0;
    }
    ct_no_grad_pop();
    ct_api_return(NULL);
    free(grads);
    return status;
}
