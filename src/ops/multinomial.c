/* multinomial: int64 draws of categories from rows of non-negative weights, with the device's
 * generator (ct_manual_seed), as torch.multinomial. With replacement each draw is a uniform
 * number searched in the row's running sums (kernels/rows.ct). Without replacement the draws
 * are an exponential race: category c's key is log(u_c) / w_c (u_c uniform), and the largest
 * num_samples keys win; that is the law of drawing one category at a time in proportion to the
 * weights left, without the sequential loop. Weights are checked on the host first (one read
 * back), as PyTorch's CPU path does. */
#include <math.h>

#include "ops/ops_internal.h"

static ct_status read_scalar(ct_tensor *t, double *value)
{
    ct_status status = t ? ct_item(t, value) : ct_last_error();
    ct_release(t);
    return status;
}

/* PyTorch's checks of the weights w (float64 [N, C]). */
static ct_status check_weights(const char *function, const ct_tensor *w, int64_t num_samples,
                               bool replacement)
{
    int last = 1;
    double total = 0, smallest = 0, smallest_row = 0;
    ct_status status = read_scalar(ct_sum(w, NULL, 0, false), &total);
    if (status == CT_OK) status = read_scalar(ct_min(w, NULL, 0, false), &smallest);
    if (status != CT_OK) return status;
    /* a NaN or an infinity anywhere makes the total NaN or infinite */
    if (!isfinite(total) || smallest < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: probs contains inf, NaN or an element < 0 "
                        "(probability tensor contains either `inf`, `nan` or element < 0)", function);
    ct_tensor *sums = ct_sum(w, &last, 1, false);
    status = read_scalar(sums ? ct_min(sums, NULL, 0, false) : NULL, &smallest_row);
    ct_release(sums);
    if (status != CT_OK) return status;
    if (smallest_row <= 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: a row of probs sums to 0; every row needs a "
                        "positive weight (invalid multinomial distribution (sum of probabilities "
                        "<= 0))", function);
    if (replacement) return CT_OK;
    ct_tensor *nonzero = ct_ne_scalar(w, 0);
    ct_tensor *counts = nonzero ? ct_sum(nonzero, &last, 1, false) : NULL;
    double fewest = 0;
    status = read_scalar(counts ? ct_min(counts, NULL, 0, false) : NULL, &fewest);
    ct_release(counts);
    ct_release(nonzero);
    if (status != CT_OK) return status;
    if (fewest < (double)num_samples)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: num_samples is %lld without replacement, but "
                        "a row of probs has only %.0f nonzero categories (invalid multinomial "
                        "distribution (with replacement=False, not enough non-negative category "
                        "to sample)); draw at most that many or set replacement", function,
                        (long long)num_samples, fewest);
    return CT_OK;
}

/* Draws with replacement from w (float64 [N, C]): int64 [N, num_samples]. */
static ct_tensor *draw_with_replacement(const char *function, const ct_tensor *w, int64_t num_samples)
{
    ct_device device = w->storage->device;
    int64_t shape[2] = {w->shape[0], num_samples};
    ct_tensor *cdf = ct_cumsum(w, 1);
    ct_tensor *u = cdf ? ct_rand(shape, 2, CT_F64, device) : NULL;
    ct_tensor *out = u ? ct_tensor_alloc(function, device, CT_I64, shape, 2) : NULL;
    if (out) {
        ct_kparams p = {0};
        p.n = shape[0] * shape[1];
        p.l[0] = w->shape[1];
        p.l[1] = num_samples;
        void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(cdf),
                                                ct_tensor_handle(u)};
        long steps = 1;
        while ((1L << steps) < p.l[0]) steps++;
        if (ct_backend_launch(device, CT_K_multinomial_search_f64, buffers, &p, 2 * steps) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(u);
    ct_release(cdf);
    return out;
}

/* Draws without replacement: the num_samples largest keys log(u) / w of each row. */
static ct_tensor *draw_without_replacement(const ct_tensor *w, int64_t num_samples)
{
    ct_tensor *u = ct_rand(w->shape, 2, CT_F64, w->storage->device);
    ct_tensor *logs = u ? ct_log(u) : NULL;
    ct_tensor *keys = logs ? ct_div(logs, w) : NULL;
    ct_tensor *indices = NULL;
    ct_tensor *values = keys ? ct_topk(keys, num_samples, 1, true, true, &indices) : NULL;
    ct_release(values);
    ct_release(keys);
    ct_release(logs);
    ct_release(u);
    return indices;
}

static ct_tensor *multinomial(const ct_tensor *probs, int64_t num_samples, bool replacement)
{
    const char *function = "ct_multinomial";
    if (!probs) return ct_null_argument(function, "probs");
    if (!ct_dtype_is_floating(probs->dtype))
        return ct_error_null(CT_ERR_DTYPE, "%s: probs is %s; it must be a floating dtype (convert "
                             "with ct_to_dtype first)", function, ct_dtype_name(probs->dtype));
    if (probs->ndim != 1 && probs->ndim != 2)
        return ct_error_null(CT_ERR_SHAPE, "%s: probs has %d dims; it must be [C] or [N, C] "
                             "(rows of category weights)", function, probs->ndim);
    int64_t categories = probs->shape[probs->ndim - 1];
    if (categories == 0)
        return ct_error_null(CT_ERR_SHAPE, "%s: probs has no categories (its last dim is 0)", function);
    if (num_samples <= 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: num_samples is %lld; it must be positive",
                             function, (long long)num_samples);
    if (!replacement && num_samples > categories)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: num_samples is %lld without replacement, "
                             "more than the %lld categories (cannot sample n_sample > "
                             "prob_dist.size(-1) samples without replacement)", function,
                             (long long)num_samples, (long long)categories);
    int64_t rows_shape[2] = {probs->ndim == 2 ? probs->shape[0] : 1, categories};
    ct_tensor *as_float64 = ct_to_dtype(probs, CT_F64);
    ct_tensor *w = as_float64 ? ct_reshape(as_float64, rows_shape, 2) : NULL;
    ct_release(as_float64);
    if (!w) return NULL;
    ct_tensor *out = NULL;
    if (rows_shape[0] > 0 && check_weights(function, w, num_samples, replacement) == CT_OK)
        out = replacement ? draw_with_replacement(function, w, num_samples)
                          : draw_without_replacement(w, num_samples);
    else if (rows_shape[0] == 0)
        out = ct_tensor_alloc(function, probs->storage->device, CT_I64, (int64_t[2]){0, num_samples}, 2);
    ct_release(w);
    if (out && probs->ndim == 1) {
        ct_tensor *flat = ct_reshape(out, &num_samples, 1);
        ct_release(out);
        out = flat;
    }
    return out;
}

ct_tensor *ct_multinomial(const ct_tensor *probs, int64_t num_samples, bool replacement)
{
    CT_API_ENTER;
    return ct_api_return(multinomial(probs, num_samples, replacement));
}
