/* Cross-entropy and NLL with PyTorch's options (reduction, ignore_index, class weights, label
 * smoothing) and shapes ([N, C], [N, C, d1, ...], [C]). Where nothing but the batch mean or sum
 * of [N, C] is asked it is ct_cross_entropy's fused op (ops/cross_entropy.c); otherwise it is
 * composed of differentiable ops, with the class dim moved last and flattened to rows:
 *     loss_n = -(w_{y_n} log p_{n, y_n}) (1 - eps) - eps / C sum_c w_c log p_{n, c},  0 if ignored
 *     mean = sum_n loss_n / sum_n w_{y_n} [n not ignored]   (PyTorch's weighted mean) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device/capture.h"
#include "nn/loss_internal.h"
#include "ops/autocast.h"
#include "ops/ops_internal.h"

ct_cross_entropy_options ct_cross_entropy_options_default(void)
{
    return (ct_cross_entropy_options){CT_REDUCTION_MEAN, -100, NULL, 0.0};
}

/* The checks of scores [N, C, d...] / [C], target [N, d...] / [], the options; *classes = C. */
static ct_status check_inputs(const char *function, const char *scores_name, const ct_tensor *scores,
                              const ct_tensor *target, const ct_cross_entropy_options *o,
                              bool smoothing_allowed, int64_t *classes)
{
    if (ct_check_same_device(function, scores, target) != CT_OK) return ct_last_error();
    char a[256], b[256];
    const char *ss = ct_shape_format(scores->shape, scores->ndim, a, sizeof a);
    const char *ts = ct_shape_format(target->shape, target->ndim, b, sizeof b);
    if (!ct_dtype_is_floating(scores->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: %s is %s; it must be floating (float32, float64, "
                        "float16 or bfloat16)", function, scores_name, ct_dtype_name(scores->dtype));
    if (target->dtype != CT_I64)
        return ct_error(CT_ERR_DTYPE, "%s: target is %s; class indices must be int64 (convert with "
                        "ct_to_dtype)", function, ct_dtype_name(target->dtype));
    if (scores->ndim == 0)
        return ct_error(CT_ERR_SHAPE, "%s: %s is 0-d; it must be [C], [N, C] or [N, C, d1, ...]",
                        function, scores_name);
    bool fits = target->ndim == scores->ndim - 1;
    if (fits && scores->ndim >= 2) {
        fits = target->shape[0] == scores->shape[0];
        for (int i = 2; fits && i < scores->ndim; i++) fits = target->shape[i - 1] == scores->shape[i];
    }
    if (!fits)
        return ct_error(CT_ERR_SHAPE, "%s: %s has shape %s and target %s; the target must have the "
                        "%s's shape without dim 1 (the classes): [N] for [N, C], [N, d1, ...] for "
                        "[N, C, d1, ...], [] for [C]", function, scores_name, ss, ts, scores_name);
    *classes = scores->ndim == 1 ? scores->shape[0] : scores->shape[1];
    if (ct_loss_check_reduction(function, o->reduction, false) != CT_OK) return ct_last_error();
    if (o->weight) {
        const ct_tensor *w = o->weight;
        if (ct_check_same_device(function, scores, w) != CT_OK) return ct_last_error();
        if (w->ndim != 1 || w->shape[0] != *classes || !ct_dtype_is_floating(w->dtype))
            return ct_error(CT_ERR_SHAPE, "%s: weight is %s %s; class weights must be a floating "
                            "[%lld], one per class", function, ct_dtype_name(w->dtype),
                            ct_shape_format(w->shape, w->ndim, a, sizeof a), (long long)*classes);
    }
    if (!smoothing_allowed && o->label_smoothing != 0.0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: label_smoothing is %g; nll_loss takes none "
                        "(use ct_cross_entropy_ex)", function, o->label_smoothing);
    if (!(o->label_smoothing >= 0.0 && o->label_smoothing <= 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: label_smoothing is %g; it must be between "
                        "0.0 and 1.0", function, o->label_smoothing);
    return CT_OK;
}

/* The target's values that are not ignore_index must be in [0, classes): checked on the host
 * (one read back), as PyTorch's CPU kernels check them. */
static ct_status check_classes(const char *function, const ct_tensor *safe_target, int64_t classes,
                               int64_t ignore_index)
{
    if (ct_numel(safe_target) == 0) return CT_OK;
    int64_t lo = 0, hi = 0;
    if (ct_index_value_range(function, safe_target, &lo, &hi) != CT_OK) return ct_last_error();
    if (lo < 0 || hi >= classes)
        return ct_error(CT_ERR_INDEX, "%s: target: class value %lld is out of range for %lld "
                        "classes (values must be in [0, %lld) or equal ignore_index %lld)", function,
                        (long long)(lo < 0 ? lo : hi), (long long)classes, (long long)classes,
                        (long long)ignore_index);
    return CT_OK;
}

/* scores as rows [M, C] (the class dim moved last) and target as [M]: new references. */
static ct_status as_rows(const ct_tensor *scores, const ct_tensor *target, int64_t classes,
                         ct_loss_temps *t, ct_tensor **rows, ct_tensor **flat_target)
{
    int64_t m = ct_numel(target);
    const ct_tensor *moved = scores;
    if (scores->ndim > 2) {
        int order[CT_MAX_DIMS];
        order[0] = 0;
        for (int i = 2; i < scores->ndim; i++) order[i - 1] = i;
        order[scores->ndim - 1] = 1;
        moved = ct_loss_temp(t, ct_permute(scores, order, scores->ndim));
    }
    *rows = ct_loss_temp(t, ct_reshape(moved, (int64_t[]){m, classes}, 2));
    *flat_target = ct_loss_temp(t, ct_reshape(target, &m, 1));
    return *rows && *flat_target ? CT_OK : ct_last_error();
}

static ct_tensor *class_loss(const char *function, const ct_tensor *scores, const ct_tensor *target,
                             const ct_cross_entropy_options *o, int64_t classes, bool from_logits)
{
    ct_loss_temps t = {0};
    ct_tensor *rows = NULL, *flat = NULL, *out = NULL;
    if (as_rows(scores, target, classes, &t, &rows, &flat) != CT_OK) goto done;
    ct_tensor *ignored = ct_loss_temp(&t, ct_eq_scalar(flat, (double)o->ignore_index));
    ct_tensor *safe = ct_loss_temp(&t, ct_masked_fill(flat, ignored, 0.0));
    if (!safe || check_classes(function, safe, classes, o->ignore_index) != CT_OK) goto done;
    ct_dtype dtype = scores->dtype;
    ct_tensor *log_p = from_logits ? ct_loss_temp(&t, ct_log_softmax(rows, 1)) : rows;
    ct_tensor *q = ct_loss_temp(&t, ct_to_dtype(ct_loss_temp(&t, ct_one_hot(safe, classes)), dtype));
    ct_tensor *kept = ct_loss_temp(&t, ct_to_dtype(ct_loss_temp(&t, ct_ne_scalar(flat, (double)o->ignore_index)), dtype));
    ct_tensor *weight = o->weight ? ct_loss_temp(&t, ct_to_dtype(o->weight, dtype)) : NULL;
    ct_tensor *wq = weight ? ct_loss_temp(&t, ct_mul(q, weight)) : q;
    int dim1 = 1;
    ct_tensor *picked = ct_loss_temp(&t, ct_sum(ct_loss_temp(&t, ct_mul(wq, log_p)), &dim1, 1, false));
    ct_tensor *per_row = ct_loss_temp(&t, ct_mul_scalar(picked, -(1.0 - o->label_smoothing)));
    if (o->label_smoothing > 0.0) {
        ct_tensor *wl = weight ? ct_loss_temp(&t, ct_mul(log_p, weight)) : log_p;
        ct_tensor *all = ct_loss_temp(&t, ct_sum(wl, &dim1, 1, false));
        ct_tensor *smooth = ct_loss_temp(&t, ct_mul_scalar(all, -o->label_smoothing / (double)classes));
        per_row = ct_loss_temp(&t, ct_add(per_row, smooth));
    }
    ct_tensor *losses = ct_loss_temp(&t, ct_mul(per_row, kept));
    switch (o->reduction) {
    case CT_REDUCTION_NONE: out = ct_reshape(losses, target->shape, target->ndim); break;
    case CT_REDUCTION_SUM: out = ct_sum(losses, NULL, 0, false); break;
    default: {
        ct_tensor *w_rows = weight ? ct_loss_temp(&t, ct_sum(wq, &dim1, 1, false)) : NULL;
        ct_tensor *counted = w_rows ? ct_loss_temp(&t, ct_mul(w_rows, kept)) : kept;
        ct_tensor *total = ct_loss_temp(&t, ct_sum(losses, NULL, 0, false));
        /* all ignored: 0 / 0 = NaN, as PyTorch */
        out = ct_div(total, ct_loss_temp(&t, ct_sum(counted, NULL, 0, false)));
        break;
    }
    }
done:
    ct_loss_temps_release(&t);
    return out;
}

/* The fused op serves the batch mean or sum of [N, C] without class weights whose targets are
 * all classes (none ignored): one read back of the targets' range decides (none under capture). */
static bool fused_serves(const ct_tensor *logits, const ct_tensor *target,
                         const ct_cross_entropy_options *o, int64_t classes)
{
    if (logits->ndim != 2 || o->weight || o->reduction == CT_REDUCTION_NONE) return false;
    if (ct_numel(target) == 0) return o->reduction == CT_REDUCTION_MEAN;
    if (ct_capture_joined(target->storage->device)) return true;
    int64_t lo = 0, hi = 0;
    if (ct_index_value_range("ct_cross_entropy_ex", target, &lo, &hi) != CT_OK) {
        ct_clear_error();
        return false;
    }
    return lo >= 0 && hi < classes && (o->ignore_index < lo || o->ignore_index > hi);
}

ct_tensor *ct_cross_entropy_ex(const ct_tensor *logits, const ct_tensor *target,
                               const ct_cross_entropy_options *options)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_cross_entropy_ex(c_[0], target, options), logits)
    const char *function = "ct_cross_entropy_ex";
    if (!logits) return ct_api_return(ct_null_argument(function, "logits"));
    if (!target) return ct_api_return(ct_null_argument(function, "target"));
    ct_cross_entropy_options o = options ? *options : ct_cross_entropy_options_default();
    int64_t classes = 0;
    if (check_inputs(function, "logits", logits, target, &o, true, &classes) != CT_OK)
        return ct_api_return(NULL);
    if (fused_serves(logits, target, &o, classes)) {
        ct_tensor *mean = ct_softmax_cross_entropy(function, logits, target, o.label_smoothing);
        if (o.reduction == CT_REDUCTION_MEAN || !mean) return ct_api_return(mean);
        ct_tensor *sum = ct_mul_scalar(mean, (double)logits->shape[0]);
        ct_release(mean);
        return ct_api_return(sum);
    }
    return ct_api_return(class_loss(function, logits, target, &o, classes, true));
}

ct_tensor *ct_nll_loss_ex(const ct_tensor *log_probs, const ct_tensor *target,
                          const ct_cross_entropy_options *options)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_nll_loss_ex(c_[0], target, options), log_probs)
    const char *function = "ct_nll_loss_ex";
    if (!log_probs) return ct_api_return(ct_null_argument(function, "log_probs"));
    if (!target) return ct_api_return(ct_null_argument(function, "target"));
    ct_cross_entropy_options o = options ? *options : ct_cross_entropy_options_default();
    int64_t classes = 0;
    if (check_inputs(function, "log_probs", log_probs, target, &o, false, &classes) != CT_OK)
        return ct_api_return(NULL);
    return ct_api_return(class_loss(function, log_probs, target, &o, classes, false));
}
