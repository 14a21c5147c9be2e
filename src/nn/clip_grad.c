/* torch.nn.utils.clip_grad_norm_: the total norm of the gradients, and every gradient scaled in
 * place by min(1, max_norm / (total + 1e-6)). Fused, as PyTorch's foreach path: the sums of
 * |g|^p of up to 8 gradients of a device and dtype in one launch of partial sums. Gradients of one
 * device and dtype (the common case) are then clipped on the device, as PyTorch does, with nothing
 * read back: the partials folded into the norm and the factor there (ct_multi_tensor_clip_record),
 * and the scaling reads the factor, so a captured step can clip; the norm is read only when the
 * caller asks for it. Gradients spread over devices or dtypes: the partials read back once per
 * device and dtype and combined in float64 on the host, and the scaling 8 gradients a launch. */
#include <math.h>
#include <stdlib.h>

#include "ctorch/autograd.h"
#include "ctorch/nn.h"
#include "device/capture.h"
#include "ops/multi_tensor.h"

/* A status-returning function's NULL argument: reported as such even after an earlier failure. */
static ct_status null_argument(const char *function, const char *argument)
{
    return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", function, argument);
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
    ct_tensor **grads = malloc((count > 0 ? (size_t)count : 1) * sizeof *grads);
    if (!grads) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    int64_t n = 0;
    for (int64_t i = 0; i < count; i++)
        if (params[i]->grad) grads[n++] = params[i]->grad;
    ct_api_enter(); /* the temporaries are released here, never left in the caller's scope */
    ct_no_grad_push();
    int mode = isinf(norm_type)      ? CT_MULTI_MAX_ABS
               : norm_type == 2.0 ? CT_MULTI_SUM_SQUARES /* exact where pow(|g|, 2) need not be */
               : norm_type == 1.0 ? CT_MULTI_SUM_ABS
                                  : CT_MULTI_SUM_POW;
    double total = 0.0;
    if (ct_multi_tensor_one_kind(grads, n)) {
        /* refused before anything is queued, naming the argument rather than the read */
        status = total_norm ? ct_capture_refuse(grads[0]->storage->device, true, function,
                                                "reads total_norm back to the host (pass NULL for it: "
                                                "the gradients are clipped all the same)")
                            : CT_OK;
        ct_tensor *record = status == CT_OK ? ct_multi_tensor_clip_record(grads, n, mode, norm_type, max_norm)
                                            : NULL;
        if (status == CT_OK) status = record ? ct_multi_tensor_scale_(grads, n, 0.0, record) : ct_last_error();
        double read[2] = {0.0, 0.0};
        if (status == CT_OK && total_norm) status = ct_tensor_to_array(record, read, sizeof read);
        total = read[0];
        ct_release(record);
    } else {
        status = ct_multi_tensor_power_sum(grads, n, mode, norm_type, &total);
        if (status == CT_OK && mode == CT_MULTI_SUM_SQUARES) total = sqrt(total);
        else if (status == CT_OK && mode == CT_MULTI_SUM_POW) total = pow(total, 1.0 / norm_type);
        /* PyTorch's clamp(coef, max=1): a NaN coefficient stays NaN; 1 (no clipping) changes no bit. */
        double coef = max_norm / (total + 1e-6);
        if (status == CT_OK && !(coef >= 1.0)) status = ct_multi_tensor_scale_(grads, n, coef, NULL);
    }
    ct_no_grad_pop();
    ct_api_return(NULL);
    free(grads);
    if (status == CT_OK && total_norm) *total_norm = total;
    return status;
}

ct_status ct_clip_grad_norm_module(const ct_module *module, double max_norm, double norm_type, double *total_norm)
{
    const char *function = "ct_clip_grad_norm_module";
    if (total_norm) *total_norm = 0.0;
    if (!module) return null_argument(function, "module");
    ct_named_tensors *list = ct_module_named_parameters(module);
    if (!list) return ct_last_error();
    ct_status status = ct_clip_grad_norm_(list->tensors, list->count, max_norm, norm_type, total_norm);
    ct_named_tensors_free(list);
    return status;
}
