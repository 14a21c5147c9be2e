/* The losses of one value per element (torch.nn.functional's binary_cross_entropy,
 * binary_cross_entropy_with_logits, l1_loss, smooth_l1_loss, huber_loss, kl_div) with a reduction,
 * composed of differentiable ops so that they run and backpropagate on every device. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/loss_internal.h"
#include "ops/autocast.h"

ct_status ct_loss_check_reduction(const char *function, ct_reduction reduction, bool batchmean)
{
    if (reduction == CT_REDUCTION_MEAN || reduction == CT_REDUCTION_SUM ||
        reduction == CT_REDUCTION_NONE || (batchmean && reduction == CT_REDUCTION_BATCHMEAN))
        return CT_OK;
    return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: reduction is %d; it must be CT_REDUCTION_MEAN, "
                    "CT_REDUCTION_SUM or CT_REDUCTION_NONE%s", function, (int)reduction,
                    batchmean ? " (or CT_REDUCTION_BATCHMEAN)" : "");
}

ct_tensor *ct_loss_reduce(const char *function, const ct_tensor *losses, ct_reduction reduction)
{
    (void)function;
    if (!losses) return NULL;
    switch (reduction) {
    case CT_REDUCTION_NONE: return ct_retain((ct_tensor *)losses);
    case CT_REDUCTION_SUM: return ct_sum(losses, NULL, 0, false);
    case CT_REDUCTION_BATCHMEAN: {
        ct_tensor *total = ct_sum(losses, NULL, 0, false);
        int64_t batch = losses->ndim > 0 ? losses->shape[0] : 1;
        ct_tensor *out = ct_div_scalar(total, (double)batch);
        ct_release(total);
        return out;
    }
    default: return ct_mean(losses, NULL, 0, false);
    }
}

/* input and target: one device, floating, the same shape. */
static ct_status check_pair(const char *function, const ct_tensor *input, const ct_tensor *target)
{
    if (!input) return ct_null_argument(function, "input"), ct_last_error();
    if (!target) return ct_null_argument(function, "target"), ct_last_error();
    if (ct_check_same_device(function, input, target) != CT_OK) return ct_last_error();
    char a[256], b[256];
    if (input->ndim != target->ndim ||
        memcmp(input->shape, target->shape, sizeof(int64_t) * (size_t)input->ndim))
        return ct_error(CT_ERR_SHAPE, "%s: input has shape %s and target %s; they must be equal",
                        function, ct_shape_format(input->shape, input->ndim, a, sizeof a),
                        ct_shape_format(target->shape, target->ndim, b, sizeof b));
    if (!ct_dtype_is_floating(input->dtype) || !ct_dtype_is_floating(target->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: input is %s and target %s; both must be floating "
                        "(float32, float64, float16 or bfloat16)", function,
                        ct_dtype_name(input->dtype), ct_dtype_name(target->dtype));
    return CT_OK;
}

/* An optional weight: on input's device, floating, broadcastable to input's shape. */
static ct_status check_weight(const char *function, const char *name, const ct_tensor *weight,
                              const ct_tensor *input)
{
    if (!weight) return CT_OK;
    if (ct_check_same_device(function, input, weight) != CT_OK) return ct_last_error();
    if (!ct_dtype_is_floating(weight->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: %s is %s; it must be floating", function, name,
                        ct_dtype_name(weight->dtype));
    char a[256], b[256];
    bool fits = weight->ndim <= input->ndim;
    for (int i = 0; fits && i < weight->ndim; i++) {
        int64_t w = weight->shape[weight->ndim - 1 - i], x = input->shape[input->ndim - 1 - i];
        fits = w == 1 || w == x;
    }
    if (!fits)
        return ct_error(CT_ERR_SHAPE, "%s: %s has shape %s, which does not broadcast to the "
                        "input's %s", function, name,
                        ct_shape_format(weight->shape, weight->ndim, a, sizeof a),
                        ct_shape_format(input->shape, input->ndim, b, sizeof b));
    return CT_OK;
}

/* input * weight when there is a weight, else input retained. */
static ct_tensor *weighted(ct_tensor *losses, const ct_tensor *weight)
{
    if (!losses || !weight) return losses ? ct_retain(losses) : NULL;
    return ct_mul(losses, weight);
}

ct_tensor *ct_binary_cross_entropy(const ct_tensor *input, const ct_tensor *target,
                                   const ct_tensor *weight, ct_reduction reduction)
{
    CT_API_ENTER;
    const char *function = "ct_binary_cross_entropy";
    if (check_pair(function, input, target) != CT_OK ||
        check_weight(function, "weight", weight, input) != CT_OK ||
        ct_loss_check_reduction(function, reduction, false) != CT_OK)
        return ct_api_return(NULL);
    if (ct_numel(input) > 0) {
        /* PyTorch's CPU check: a probability out of [0, 1] (or NaN) is a mistake, not a loss */
        ct_tensor *lo = ct_min(input, NULL, 0, false), *hi = ct_max(input, NULL, 0, false);
        double low = 0, high = 0;
        ct_status status = lo && hi ? ct_item(lo, &low) : ct_last_error();
        if (status == CT_OK) status = ct_item(hi, &high);
        ct_release(lo);
        ct_release(hi);
        if (status != CT_OK) return ct_api_return(NULL);
        if (!(low >= 0.0 && high <= 1.0))
            return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: input holds values in "
                                               "[%g, %g]; all elements of input must be "
                                               "probabilities between 0 and 1 (for scores use "
                                               "ct_binary_cross_entropy_with_logits)", function,
                                               low, high));
    }
    ct_loss_temps t = {0};
    /* log x and log(1 - x), clamped at -100 so that a 0 or 1 gives a finite loss, as PyTorch */
    ct_tensor *log_x = ct_loss_temp(&t, ct_clamp_min(ct_loss_temp(&t, ct_log(input)), -100.0));
    ct_tensor *one_minus_x = ct_loss_temp(&t, ct_add_scalar(ct_loss_temp(&t, ct_neg(input)), 1.0));
    ct_tensor *log_1mx = ct_loss_temp(&t, ct_clamp_min(ct_loss_temp(&t, ct_log(one_minus_x)), -100.0));
    ct_tensor *one_minus_y = ct_loss_temp(&t, ct_add_scalar(ct_loss_temp(&t, ct_neg(target)), 1.0));
    ct_tensor *positive = ct_loss_temp(&t, ct_mul(target, log_x));
    ct_tensor *negative = ct_loss_temp(&t, ct_mul(one_minus_y, log_1mx));
    ct_tensor *sum = ct_loss_temp(&t, ct_add(positive, negative));
    ct_tensor *losses = ct_loss_temp(&t, ct_neg(sum));
    ct_tensor *w = ct_loss_temp(&t, weighted(losses, weight));
    ct_tensor *out = ct_loss_reduce(function, w, reduction);
    ct_loss_temps_release(&t);
    return ct_api_return(out);
}

ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *input, const ct_tensor *target,
                                               const ct_tensor *weight, const ct_tensor *pos_weight,
                                               ct_reduction reduction)
{
    CT_API_ENTER;
    const char *function = "ct_binary_cross_entropy_with_logits";
    if (check_pair(function, input, target) != CT_OK ||
        check_weight(function, "weight", weight, input) != CT_OK ||
        check_weight(function, "pos_weight", pos_weight, input) != CT_OK ||
        ct_loss_check_reduction(function, reduction, false) != CT_OK)
        return ct_api_return(NULL);
    ct_loss_temps t = {0};
    /* (1 - y) x + l softplus(-x), l = 1 + (p - 1) y: softplus is linear past 20, so no overflow */
    ct_tensor *one_minus_y = ct_loss_temp(&t, ct_add_scalar(ct_loss_temp(&t, ct_neg(target)), 1.0));
    ct_tensor *linear = ct_loss_temp(&t, ct_mul(one_minus_y, input));
    ct_tensor *soft = ct_loss_temp(&t, ct_softplus(ct_loss_temp(&t, ct_neg(input)), 1.0, 20.0));
    if (pos_weight) {
        ct_tensor *p_minus_1 = ct_loss_temp(&t, ct_sub_scalar(pos_weight, 1.0));
        ct_tensor *scaled = ct_loss_temp(&t, ct_mul(p_minus_1, target));
        ct_tensor *l = ct_loss_temp(&t, ct_add_scalar(scaled, 1.0));
        soft = ct_loss_temp(&t, ct_mul(l, soft));
    }
    ct_tensor *losses = ct_loss_temp(&t, ct_add(linear, soft));
    ct_tensor *w = ct_loss_temp(&t, weighted(losses, weight));
    ct_tensor *out = ct_loss_reduce(function, w, reduction);
    ct_loss_temps_release(&t);
    return ct_api_return(out);
}

ct_tensor *ct_l1_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction)
{
    CT_API_ENTER;
    CT_AUTOCAST2(CT_AUTOCAST_FLOAT32, ct_l1_loss(c_[0], c_[1], reduction), input, target)
    const char *function = "ct_l1_loss";
    if (check_pair(function, input, target) != CT_OK ||
        ct_loss_check_reduction(function, reduction, false) != CT_OK)
        return ct_api_return(NULL);
    ct_loss_temps t = {0};
    ct_tensor *d = ct_loss_temp(&t, ct_sub(input, target));
    ct_tensor *out = ct_loss_reduce(function, ct_loss_temp(&t, ct_abs(d)), reduction);
    ct_loss_temps_release(&t);
    return ct_api_return(out);
}

/* where(|d| < limit, 0.5 d^2 * quadratic, |d| * linear - offset): smooth L1 and Huber. */
static ct_tensor *piecewise(const char *function, const ct_tensor *input, const ct_tensor *target,
                            ct_reduction reduction, double limit, double quadratic, double linear,
                            double offset)
{
    ct_loss_temps t = {0};
    ct_tensor *d = ct_loss_temp(&t, ct_sub(input, target));
    ct_tensor *magnitude = ct_loss_temp(&t, ct_abs(d));
    ct_tensor *losses;
    if (limit == 0.0) {
        /* only the linear part: the quadratic one would divide by zero (and its gradient too) */
        losses = magnitude;
    } else {
        ct_tensor *inside = ct_loss_temp(&t, ct_lt_scalar(magnitude, limit));
        ct_tensor *square = ct_loss_temp(&t, ct_mul(d, d));
        ct_tensor *quad = ct_loss_temp(&t, ct_mul_scalar(square, 0.5 * quadratic));
        ct_tensor *scaled = ct_loss_temp(&t, ct_mul_scalar(magnitude, linear));
        ct_tensor *lin = ct_loss_temp(&t, ct_sub_scalar(scaled, offset));
        losses = ct_loss_temp(&t, ct_where(inside, quad, lin));
    }
    ct_tensor *out = ct_loss_reduce(function, losses, reduction);
    ct_loss_temps_release(&t);
    return out;
}

ct_tensor *ct_smooth_l1_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction,
                             double beta)
{
    CT_API_ENTER;
    CT_AUTOCAST2(CT_AUTOCAST_FLOAT32, ct_smooth_l1_loss(c_[0], c_[1], reduction, beta), input, target)
    const char *function = "ct_smooth_l1_loss";
    if (check_pair(function, input, target) != CT_OK ||
        ct_loss_check_reduction(function, reduction, false) != CT_OK)
        return ct_api_return(NULL);
    if (!(beta >= 0.0) || isinf(beta))
        return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: beta is %g; it must be "
                                           "a finite number >= 0", function, beta));
    return ct_api_return(piecewise(function, input, target, reduction, beta,
                                   beta > 0 ? 1.0 / beta : 0.0, 1.0, 0.5 * beta));
}

ct_tensor *ct_huber_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction,
                         double delta)
{
    CT_API_ENTER;
    CT_AUTOCAST2(CT_AUTOCAST_FLOAT32, ct_huber_loss(c_[0], c_[1], reduction, delta), input, target)
    const char *function = "ct_huber_loss";
    if (check_pair(function, input, target) != CT_OK ||
        ct_loss_check_reduction(function, reduction, false) != CT_OK)
        return ct_api_return(NULL);
    if (!(delta > 0.0) || isinf(delta))
        return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: delta is %g; it must be "
                                           "a finite number > 0", function, delta));
    return ct_api_return(piecewise(function, input, target, reduction, delta, 1.0, delta,
                                   0.5 * delta * delta));
}

ct_tensor *ct_kl_div(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction,
                     bool log_target)
{
    CT_API_ENTER;
    CT_AUTOCAST2(CT_AUTOCAST_FLOAT32, ct_kl_div(c_[0], c_[1], reduction, log_target), input, target)
    const char *function = "ct_kl_div";
    if (check_pair(function, input, target) != CT_OK ||
        ct_loss_check_reduction(function, reduction, true) != CT_OK)
        return ct_api_return(NULL);
    ct_loss_temps t = {0};
    ct_tensor *losses;
    if (log_target) {
        /* exp(t) (t - x) */
        ct_tensor *diff = ct_loss_temp(&t, ct_sub(target, input));
        losses = ct_loss_temp(&t, ct_mul(ct_loss_temp(&t, ct_exp(target)), diff));
    } else {
        /* xlogy(t, t) - t x: t log t is 0 where t is 0 (PyTorch's xlogy), NaN stays NaN */
        ct_tensor *zero = ct_loss_temp(&t, ct_eq_scalar(target, 0.0));
        ct_tensor *log_t = ct_loss_temp(&t, ct_log(target));
        ct_tensor *t_log_t = ct_loss_temp(&t, ct_mul(target, log_t));
        ct_tensor *xlogy = ct_loss_temp(&t, ct_masked_fill(t_log_t, zero, 0.0));
        ct_tensor *tx = ct_loss_temp(&t, ct_mul(target, input));
        losses = ct_loss_temp(&t, ct_sub(xlogy, tx));
    }
    ct_tensor *out = ct_loss_reduce(function, losses, reduction);
    ct_loss_temps_release(&t);
    return ct_api_return(out);
}
