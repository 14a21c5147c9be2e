/* The two paths of ct_scaled_dot_product_attention (attention.c). */
#ifndef CT_OPS_ATTENTION_INTERNAL_H
#define CT_OPS_ATTENTION_INTERNAL_H

#include "ops/ops_autograd.h"

/* The largest head size (D and Dv) the fused kernels take (kernels/attention.ct). */
#define CT_ATTENTION_MAX_D 128
#define CT_ATTENTION_MAX_D_TEXT "128"

typedef enum ct_attention_path {
    CT_ATTENTION_AUTO,
    CT_ATTENTION_COMPOSED,
    CT_ATTENTION_FUSED,
} ct_attention_path;

/* Checked arguments, scale resolved. The composed path: products, softmax, dropout, recorded
 * op by op. */
ct_tensor *ct_attention_composed(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                 const ct_tensor *attn_mask, double dropout_p, bool is_causal,
                                 double scale);
/* The fused path (no mask but is_causal, no dropout, equal leading dims), recorded as one node. */
ct_tensor *ct_attention_fused(const char *function, const ct_tensor *q, const ct_tensor *k,
                              const ct_tensor *v, bool is_causal, double scale);
/* Whether the device runs the fused attention of these operands itself (the CPU's float32 one,
 * backend/cpu/cpu_attention.c) rather than as the portable kernels. */
bool ct_attention_in_backend(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                             bool is_causal, double scale);

/* Sets the handles and offsets of a's operands from tensors, in the order q, k, v, out, lse,
 * dout, delta, dq, dk, dv (NULL: left as they are). */
void ct_attention_args_set_operands(ct_attention_args *a, ct_tensor *const *tensors);

/* Causal self-attention of H heads straight from qkv [B, T, 3C] (q, k and v side by side, as
 * one Linear writes them) to [B, T, C] with the heads joined, scale 1 / sqrt(C / H), no dropout;
 * one node, whose gradient is d(qkv) (attention_packed.c). Only where the device runs the fused
 * attention itself: ct_attention_packed_takes says whether it does for qkv. */
bool ct_attention_packed_takes(const ct_tensor *qkv, int64_t heads);
ct_tensor *ct_attention_packed(const ct_tensor *qkv, int64_t heads);

#endif
