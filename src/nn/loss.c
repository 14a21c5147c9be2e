/* Losses (torch.nn.functional's mse_loss, cross_entropy, nll_loss with reduction='mean'). MSE
 * and NLL are composed of differentiable ops, so that they run and backpropagate on every
 * device; cross-entropy, in every training step, is one fused op with its own kernels
 * (ops/cross_entropy.c).
 *
 * NLL picks the target classes with a one-hot matrix rather than a gather: -sum(q * log_p) / N
 * with q the one-hot targets, which needs only the backward of mul and sum. */
#include <stdio.h>
#include <string.h>

#include "nn/module_internal.h"
#include "ops/nn_internal.h"
#include "ops/autocast.h"

ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target)
{
    CT_API_ENTER;
    CT_AUTOCAST2(CT_AUTOCAST_FLOAT32, ct_mse_loss(c_[0], c_[1]), input, target)
    const char *function = "ct_mse_loss";
    if (!input) return ct_api_return(ct_null_argument(function, "input"));
    if (!target) return ct_api_return(ct_null_argument(function, "target"));
    if (ct_check_same_device(function, input, target) != CT_OK) return ct_api_return(NULL);
    char a[256], b[256];
    if (input->ndim != target->ndim ||
        memcmp(input->shape, target->shape, sizeof(int64_t) * (size_t)input->ndim))
        return ct_api_return(ct_error_null(CT_ERR_SHAPE, "%s: input has shape %s and target %s; they "
                                           "must be equal", function,
                                           ct_shape_format(input->shape, input->ndim, a, sizeof a),
                                           ct_shape_format(target->shape, target->ndim, b, sizeof b)));
    if (!ct_dtype_is_floating(input->dtype) || !ct_dtype_is_floating(target->dtype))
        return ct_api_return(ct_error_null(CT_ERR_DTYPE, "%s: input is %s and target %s; both must be "
                                           "float32 or float64", function, ct_dtype_name(input->dtype),
                                           ct_dtype_name(target->dtype)));
    ct_tensor *diff = ct_sub(input, target);
    ct_tensor *squared = ct_mul(diff, diff);
    ct_tensor *loss = ct_mean(squared, NULL, 0, false);
    ct_release(diff);
    ct_release(squared);
    return ct_api_return(loss);
}

/* The checks shared by the class-index losses: scores [N, C] floating, target int64 [N]. */
static ct_status check_class_inputs(const char *function, const char *scores_name,
                                    const ct_tensor *scores, const ct_tensor *target)
{
    if (ct_check_same_device(function, scores, target) != CT_OK) return ct_last_error();
    char a[256], b[256];
    if (scores->ndim != 2)
        return ct_error(CT_ERR_SHAPE, "%s: %s has shape %s; it must be [N, C] (a batch of class "
                        "scores)", function, scores_name,
                        ct_shape_format(scores->shape, scores->ndim, a, sizeof a));
    if (!ct_dtype_is_floating(scores->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: %s is %s; it must be floating (float32, float64, "
                        "float16 or bfloat16)", function,
                        scores_name, ct_dtype_name(scores->dtype));
    if (target->dtype != CT_I64)
        return ct_error(CT_ERR_DTYPE, "%s: target is %s; class indices must be int64 (convert with "
                        "ct_to_dtype)", function, ct_dtype_name(target->dtype));
    if (target->ndim != 1 || target->shape[0] != scores->shape[0])
        return ct_error(CT_ERR_SHAPE, "%s: %s has shape %s and target %s; target must be [%lld], "
                        "one class index per row", function, scores_name,
                        ct_shape_format(scores->shape, scores->ndim, a, sizeof a),
                        ct_shape_format(target->shape, target->ndim, b, sizeof b),
                        (long long)scores->shape[0]);
    return CT_OK;
}

/* -sum(one_hot(target) * log_probs) / N. */
static ct_tensor *picked_nll(const char *function, const ct_tensor *log_probs, const ct_tensor *target)
{
    int64_t n = log_probs->shape[0], classes = log_probs->shape[1];
    ct_tensor *one_hot = ct_one_hot(target, classes);
    if (!one_hot) {
        /* ct_one_hot names itself; the caller should see its own name and what was wrong. */
        char message[512];
        snprintf(message, sizeof message, "%s", ct_last_error_message());
        const char *detail = strncmp(message, "ct_one_hot: ", 12) ? message : message + 12;
        return ct_error_null(ct_last_error(), "%s: target: %s", function, detail);
    }
    ct_tensor *q = ct_to_dtype(one_hot, log_probs->dtype);
    ct_release(one_hot);
    ct_tensor *picked = ct_mul(q, log_probs);
    ct_tensor *total = ct_sum(picked, NULL, 0, false);
    /* N = 0 gives 0 * (-1/0) = NaN, the mean of nothing, as PyTorch does. */
    ct_tensor *loss = ct_mul_scalar(total, -1.0 / (double)n);
    ct_release(q);
    ct_release(picked);
    ct_release(total);
    return loss;
}

ct_tensor *ct_cross_entropy(const ct_tensor *logits, const ct_tensor *target, double label_smoothing)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_cross_entropy(c_[0], target, label_smoothing), logits)
    const char *function = "ct_cross_entropy";
    if (!logits) return ct_api_return(ct_null_argument(function, "logits"));
    if (!target) return ct_api_return(ct_null_argument(function, "target"));
    if (check_class_inputs(function, "logits", logits, target) != CT_OK) return ct_api_return(NULL);
    if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
        return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: label_smoothing is %g; it "
                                           "must be between 0.0 and 1.0", function, label_smoothing));
    return ct_api_return(ct_softmax_cross_entropy(function, logits, target, label_smoothing));
}

ct_tensor *ct_nll_loss(const ct_tensor *log_probs, const ct_tensor *target)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_nll_loss(c_[0], target), log_probs)
    const char *function = "ct_nll_loss";
    if (!log_probs) return ct_api_return(ct_null_argument(function, "log_probs"));
    if (!target) return ct_api_return(ct_null_argument(function, "target"));
    if (check_class_inputs(function, "log_probs", log_probs, target) != CT_OK) return ct_api_return(NULL);
    return ct_api_return(picked_nll(function, log_probs, target));
}
