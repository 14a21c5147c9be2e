/* Attention composed from ops, as PyTorch's math backend: scores = q k^T * scale, then the mask
 * (bool: false becomes -inf; float: added; is_causal: keys after the query become -inf),
 * softmax over the keys, dropout, and the product with v. Autograd follows the ops. A row whose
 * keys are all masked gets weights 0, hence output 0 (PyTorch's _safe_softmax, which its
 * F.scaled_dot_product_attention has used on the CPU since 2.5; a plain softmax would give NaN). */
#include <math.h>

#include "ops/attention_internal.h"

/* keys j <= query i: [Tq, Tk] bool, on device */
static ct_tensor *causal_allowed(int64_t tq, int64_t tk, ct_device device)
{
    ct_tensor *rows = ct_arange(0, (double)tq, 1, CT_I64, device);
    ct_tensor *cols = ct_arange(0, (double)tk, 1, CT_I64, device);
    int64_t column_shape[2] = {tq, 1};
    ct_tensor *column = rows ? ct_reshape(rows, column_shape, 2) : NULL;
    ct_tensor *allowed = column && cols ? ct_ge(column, cols) : NULL;
    ct_release(rows);
    ct_release(cols);
    ct_release(column);
    return allowed;
}

/* scores where allowed, -inf elsewhere */
static ct_tensor *mask_out(const ct_tensor *scores, const ct_tensor *allowed)
{
    ct_tensor *minus_infinity = ct_full(NULL, 0, -INFINITY, scores->dtype, scores->storage->device);
    ct_tensor *masked = minus_infinity ? ct_where(allowed, scores, minus_infinity) : NULL;
    ct_release(minus_infinity);
    return masked;
}

/* softmax of scores over the keys, 0 in rows whose every score is -inf */
static ct_tensor *safe_softmax(const ct_tensor *scores)
{
    int last = scores->ndim - 1;
    ct_tensor *weights = ct_softmax(scores, -1);
    ct_tensor *top = weights ? ct_max(scores, &last, 1, true) : NULL;
    ct_tensor *hidden = top ? ct_eq_scalar(top, -INFINITY) : NULL;
    ct_tensor *zero = hidden ? ct_zeros(NULL, 0, scores->dtype, scores->storage->device) : NULL;
    ct_tensor *safe = zero ? ct_where(hidden, zero, weights) : NULL;
    ct_release(weights);
    ct_release(top);
    ct_release(hidden);
    ct_release(zero);
    return safe;
}

static ct_tensor *dropped(ct_tensor *weights, double p)
{
    ct_tensor *r = ct_rand(weights->shape, weights->ndim, weights->dtype, weights->storage->device);
    ct_tensor *keep = r ? ct_ge_scalar(r, p) : NULL;
    ct_tensor *keep_float = keep ? ct_to_dtype(keep, weights->dtype) : NULL;
    ct_tensor *scaled = keep_float ? ct_mul_scalar(keep_float, 1.0 / (1.0 - p)) : NULL;
    ct_tensor *out = scaled ? ct_mul(weights, scaled) : NULL;
    ct_release(r);
    ct_release(keep);
    ct_release(keep_float);
    ct_release(scaled);
    return out;
}

ct_tensor *ct_attention_composed(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                 const ct_tensor *attn_mask, double dropout_p, bool is_causal,
                                 double scale)
{
    ct_tensor *kt = ct_transpose(k, -1, -2);
    ct_tensor *products = kt ? ct_matmul(q, kt) : NULL;
    ct_tensor *scores = products ? ct_mul_scalar(products, scale) : NULL;
    ct_release(kt);
    ct_release(products);
    if (scores && is_causal) {
        ct_tensor *allowed = causal_allowed(q->shape[q->ndim - 2], k->shape[k->ndim - 2],
                                            q->storage->device);
        ct_tensor *masked = allowed ? mask_out(scores, allowed) : NULL;
        ct_release(allowed);
        ct_release(scores);
        scores = masked;
    } else if (scores && attn_mask) {
        ct_tensor *masked = attn_mask->dtype == CT_BOOL ? mask_out(scores, attn_mask)
                                                         : ct_add(scores, attn_mask);
        ct_release(scores);
        scores = masked;
    }
    ct_tensor *weights = scores ? (is_causal || attn_mask ? safe_softmax(scores) : ct_softmax(scores, -1)) : NULL;
    ct_release(scores);
    if (weights && dropout_p > 0) {
        ct_tensor *kept = dropped(weights, dropout_p);
        ct_release(weights);
        weights = kept;
    }
    ct_tensor *out = weights ? ct_matmul(weights, v) : NULL;
    ct_release(weights);
    return out;
}
