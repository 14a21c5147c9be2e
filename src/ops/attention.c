/* F.scaled_dot_product_attention: softmax(q k^T * scale + mask) v, with dropout on the weights.
 * Two paths, as PyTorch's backends:
 *   fused     kernels/attention.ct (FlashAttention-2): no [Tq, Tk] matrix, the log-sum-exp of
 *             each query row saved for the backward (attention_backward.c). It serves no mask or
 *             is_causal, dropout_p 0, D and Dv up to CT_ATTENTION_MAX_D, the same leading dims.
 *   composed  the ops themselves (matmul, softmax, ...; attention_composed.c): everything else,
 *             and the reference the fused one is tested against.
 * CTORCH_SDPA=math forces the composed path, =fused the fused one (an error where it cannot
 * serve); unset or =auto picks the faster where the fused one serves, measured: on a GPU (and
 * PoCL) the fused kernels; on the CPU the fused path where the backend runs it over its BLAS
 * (float32 and float64: backend/cpu/cpu_attention.c; B 8, H 12, D 64, causal, forward +
 * backward, float32 2-3x the composed path's speed at T 256-4096, docs/cpu-peer-benchmark.md;
 * float64 1.6x at T 256, 1.8x at T 1024), else the composed path: the portable kernels compiled
 * for the CPU ran at half its speed (float32, T 1024: 0.74 against 1.36 seq/s), so the 16-bit
 * dtypes on the CPU take the composed path unless CTORCH_SDPA=fused asks for memory linear in T. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/nn_functional.h"
#include "ops/attention_internal.h"
#include "ops/autocast.h"

static ct_attention_path path_asked(void)
{
    const char *mode = getenv("CTORCH_SDPA");
    if (mode && strcmp(mode, "math") == 0) return CT_ATTENTION_COMPOSED;
    if (mode && strcmp(mode, "fused") == 0) return CT_ATTENTION_FUSED;
    return CT_ATTENTION_AUTO;
}

/* Why the fused path cannot take these arguments (NULL when it can). */
static const char *fused_refusal(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                 const ct_tensor *attn_mask, double dropout_p)
{
    if (attn_mask) return "an attn_mask is given (only is_causal fuses)";
    if (dropout_p > 0) return "dropout_p > 0";
    if (q->shape[q->ndim - 1] > CT_ATTENTION_MAX_D || v->shape[v->ndim - 1] > CT_ATTENTION_MAX_D)
        return "the head size is over " CT_ATTENTION_MAX_D_TEXT;
    if (q->ndim != k->ndim || q->ndim != v->ndim) return "q, k and v differ in ndim";
    for (int d = 0; d < q->ndim - 2; d++)
        if (q->shape[d] != k->shape[d] || q->shape[d] != v->shape[d])
            return "the leading dims of q, k and v differ (broadcast)";
    if (ct_numel(q) == 0 || ct_numel(k) == 0 || ct_numel(v) == 0) return "a tensor is empty";
    return NULL;
}

static ct_status check_arguments(const char *fn, const ct_tensor *q, const ct_tensor *k,
                                 const ct_tensor *v, const ct_tensor *attn_mask, double dropout_p,
                                 bool is_causal, double scale)
{
    const ct_tensor *operands[4] = {q, k, v, attn_mask};
    const char *names[4] = {"q", "k", "v", "attn_mask"};
    ct_status status = ct_check_operands(fn, operands, names, attn_mask ? 4 : 3);
    if (status != CT_OK) return status;
    if (!ct_dtype_is_floating(q->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: q is %s; attention needs a floating dtype (float32, "
                        "float64, float16 or bfloat16)", fn, ct_dtype_name(q->dtype));
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: q, k and v must have one dtype; got %s, %s and %s", fn,
                        ct_dtype_name(q->dtype), ct_dtype_name(k->dtype), ct_dtype_name(v->dtype));
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return ct_error(CT_ERR_SHAPE, "%s: q, k and v need at least 2 dims ([..., T, D]); got "
                        "%d, %d and %d", fn, q->ndim, k->ndim, v->ndim);
    if (q->shape[q->ndim - 1] != k->shape[k->ndim - 1])
        return ct_error(CT_ERR_SHAPE, "%s: q's last dim (%lld) must equal k's (%lld)", fn,
                        (long long)q->shape[q->ndim - 1], (long long)k->shape[k->ndim - 1]);
    if (k->shape[k->ndim - 2] != v->shape[v->ndim - 2])
        return ct_error(CT_ERR_SHAPE, "%s: k and v must have the same sequence length (dim -2); "
                        "got %lld and %lld", fn, (long long)k->shape[k->ndim - 2],
                        (long long)v->shape[v->ndim - 2]);
    if (!(dropout_p >= 0.0 && dropout_p < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: dropout_p must be in [0, 1); got %g", fn,
                        dropout_p);
    if (!(scale >= 0.0) || isinf(scale))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: scale must be finite and >= 0 (0 means "
                        "1 / sqrt(D)); got %g", fn, scale);
    if (attn_mask && is_causal)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: is_causal and an attn_mask cannot both be "
                        "given (as PyTorch): put the causal mask into attn_mask", fn);
    if (attn_mask && attn_mask->dtype != CT_BOOL && attn_mask->dtype != q->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: attn_mask must be bool or q's dtype (%s); got %s", fn,
                        ct_dtype_name(q->dtype), ct_dtype_name(attn_mask->dtype));
    return CT_OK;
}

ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k,
                                           const ct_tensor *v, const ct_tensor *attn_mask,
                                           double dropout_p, bool is_causal, double scale)
{
    const char *fn = "ct_scaled_dot_product_attention";
    CT_API_ENTER;
    CT_AUTOCAST3(CT_AUTOCAST_LOWER,
                 ct_scaled_dot_product_attention(c_[0], c_[1], c_[2], attn_mask, dropout_p,
                                                 is_causal, scale),
                 q, k, v)
    if (check_arguments(fn, q, k, v, attn_mask, dropout_p, is_causal, scale) != CT_OK)
        return ct_api_return(NULL);
    if (scale == 0.0) scale = 1.0 / sqrt((double)q->shape[q->ndim - 1]);
    ct_attention_path asked = path_asked();
    const char *refusal = fused_refusal(q, k, v, attn_mask, dropout_p);
    if (asked == CT_ATTENTION_FUSED && refusal)
        return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: CTORCH_SDPA=fused, but "
                                           "the fused path cannot serve: %s", fn, refusal));
    bool slower = asked == CT_ATTENTION_AUTO && q->storage->device.type == CT_CPU &&
                  !ct_attention_in_backend(q, k, v, is_causal, scale);
    if (asked == CT_ATTENTION_COMPOSED || refusal || slower)
        return ct_api_return(
            ct_attention_composed(q, k, v, attn_mask, dropout_p, is_causal, scale));
    return ct_api_return(ct_attention_fused(fn, q, k, v, is_causal, scale));
}
