/* torch.nn.utils.clip_grad_norm_: the total norm of the gradients, and every gradient scaled in
 * place by min(1, max_norm / (total + 1e-6)). Each gradient's sum of |g|^p is taken on its own
 * device (one value read back per gradient), the total combined in float64 on the host. */
#include <math.h>

#include "ctorch/autograd.h"
#include "ctorch/nn.h"
#include "ctorch/ops.h"
#include "tensor/tensor_internal.h"

/* A status-returning function's NULL argument: reported as such even after an earlier failure. */
static ct_status null_argument(const char *function, const char *argument)
{
    return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", function, argument);
}

/* sum(|g|^p) over g (max |g| when p is infinite), into *out. g is not empty. */
static ct_status power_sum(const ct_tensor *g, double p, double *out)
{
    ct_tensor *abs = NULL, *powered = NULL, *reduced = NULL;
    if (isinf(p)) {
        abs = ct_abs(g);
        reduced = abs ? ct_max(abs, NULL, 0, false) : NULL;
    } else if (p == 2.0) {
        powered = ct_mul(g, g); /* exact where pow(|g|, 2) need not be */
        reduced = powered ? ct_sum(powered, NULL, 0, false) : NULL;
    } else {
        abs = ct_abs(g);
        powered = abs ? (p == 1.0 ? abs : ct_pow_scalar(abs, p)) : NULL;
        reduced = powered ? ct_sum(powered, NULL, 0, false) : NULL;
        if (powered == abs) powered = NULL;
    }
    ct_status status = reduced ? ct_item(reduced, out) : ct_last_error();
    ct_release(abs);
    ct_release(powered);
    ct_release(reduced);
    return status;
}

static ct_status check_arguments(const char *function, ct_tensor *const *params, int64_t count, double max_norm,
                                 double norm_type)
{
    if (count < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: count is %lld; it must not be negative", function,
                        (long long)count);
    if (count > 0 && !params) return null_argument(function, "params");
    for (int64_t i = 0; i < count; i++)
        if (!params[i])
            return ct_error(CT_ERR_NULL_ARGUMENT, "%s: params[%lld] is NULL", function, (long long)i);
    if (!(max_norm >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: max_norm is %g; it must be a number >= 0", function, max_norm);
    if (!(norm_type >= 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: norm_type is %g; give a p >= 1 (2: the Euclidean norm) "
                        "or INFINITY", function, norm_type);
    return CT_OK;
}

ct_status ct_clip_grad_norm_(ct_tensor *const *params, int64_t count, double max_norm, double norm_type,
                             double *total_norm)
{
    const char *function = "ct_clip_grad_norm_";
    if (total_norm) *total_norm = 0.0;
    ct_status status = check_arguments(function, params, count, max_norm, norm_type);
    if (status != CT_OK) return status;
    ct_api_enter(); /* the temporaries below are released here, never left in the caller's scope */
    ct_no_grad_push();
    double total = 0.0;
    for (int64_t i = 0; status == CT_OK && i < count; i++) {
        const ct_tensor *g = params[i]->grad;
        if (!g || ct_numel(g) == 0) continue;
        double part = 0.0;
        status = power_sum(g, norm_type, &part);
        total = isinf(norm_type) ? (part > total || isnan(part) ? part : total) : total + part;
    }
    if (status == CT_OK && !isinf(norm_type)) total = pow(total, 1.0 / norm_type);
    /* PyTorch's clamp(coef, max=1): a NaN coefficient stays NaN; 1 (no clipping) changes no bit. */
    double coef = max_norm / (total + 1e-6);
    for (int64_t i = 0; status == CT_OK && !(coef >= 1.0) && i < count; i++) {
        ct_tensor *g = params[i]->grad;
        if (!g || ct_numel(g) == 0) continue;
        ct_tensor *scaled = ct_mul_scalar(g, coef);
        status = scaled ? ct_copy_(g, scaled) : ct_last_error();
        ct_release(scaled);
    }
    ct_no_grad_pop();
    ct_api_return(NULL);
    if (status == CT_OK && total_norm) *total_norm = total;
    return status;
}
