/* Causal self-attention straight from one Linear's output, as nanoGPT's CausalSelfAttention
 * computes it: qkv [B, T, 3C] holds q, k and v side by side, H heads of D = C / H each; the
 * result [B, T, C] has the heads joined, ready for c_proj. One node, whose backward writes
 * d(qkv) [B, T, 3C] directly: the device's fused attention reads and writes every operand where
 * it lies (ct_attention_args' layouts).
 *
 * Composed of split, views and ct_scaled_dot_product_attention, the same attention moved every
 * activation several times more: q, k and v made contiguous, the heads joined for c_proj, the
 * gradient made contiguous again, and each part's split backward a zero-filled [B, T, 3C], copied
 * into and summed with the others. In a small transformer block's training step (C 128, T 64,
 * B 32, 2 cores) those copies, fills and sums were about a tenth of the step's time. */
#include <math.h>

#include "ops/attention_internal.h"

typedef struct packed_shape {
    long batch, t, c, heads, d;
} packed_shape;

static packed_shape shape_of(const ct_tensor *qkv, int64_t heads)
{
    packed_shape s = {.batch = (long)qkv->shape[0], .t = (long)qkv->shape[1],
                      .c = (long)(qkv->shape[2] / 3), .heads = (long)heads};
    s.d = s.c / s.heads;
    return s;
}

/* The arguments of one pass, its operands in the order of ct_attention_args_set_operands: q, k
 * and v side by side in qkv, out (and dout) as [B, T, C]; dq, dk and dv (the backward's) side by
 * side in d(qkv). */
static ct_attention_args args_of(ct_attention_pass pass, const packed_shape *s, ct_dtype dtype,
                                 ct_tensor *const *tensors)
{
    ct_attention_layout in = {.batch = s->t * 3 * s->c, .head = s->d, .row = 3 * s->c};
    ct_attention_layout joined = {.batch = s->t * s->c, .head = s->d, .row = s->c};
    ct_attention_args a = {.pass = pass, .dtype = dtype, .bh = s->batch * s->heads, .tq = s->t,
                           .tk = s->t, .d = s->d, .dv = s->d, .heads = s->heads, .causal = true,
                           .scale = 1.0 / sqrt((double)s->d), .q_at = in, .k_at = in, .v_at = in,
                           .out_at = joined, .dout_at = joined, .dq_at = in, .dk_at = in, .dv_at = in};
    ct_attention_args_set_operands(&a, tensors);
    a.k_offset += s->c;
    a.v_offset += 2 * s->c;
    a.dk_offset += s->c;
    a.dv_grad_offset += 2 * s->c;
    return a;
}

bool ct_attention_packed_takes(const ct_tensor *qkv, int64_t heads)
{
    if (!qkv || qkv->ndim != 3 || heads < 1 || qkv->shape[2] % (3 * heads) != 0 ||
        qkv->shape[2] == 0 || qkv->shape[0] == 0 || qkv->shape[1] == 0 || !ct_is_contiguous(qkv))
        return false;
    packed_shape s = shape_of(qkv, heads);
    ct_tensor *in = (ct_tensor *)qkv, *operands[10] = {in, in, in};
    ct_attention_args a = args_of(CT_ATTENTION_FORWARD, &s, qkv->dtype, operands);
    return ct_backend_attention_takes(qkv->storage->device, &a);
}

static ct_status packed_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *qkv = node->saved[0], *out = node->saved[1], *lse = node->saved[2];
    packed_shape s = shape_of(qkv, node->ints[0]);
    ct_tensor *g = ct_contiguous(grad);
    /* delta [B, H, T] = the sum over each head's D columns of dout * out, as the kernels want it:
     * contiguous, one row of T per (batch, head) */
    ct_tensor *product = g ? ct_mul(g, out) : NULL;
    int64_t split[4] = {s.batch, s.t, s.heads, s.d};
    ct_tensor *heads = product ? ct_reshape(product, split, 4) : NULL;
    ct_tensor *per_row = heads ? ct_sum(heads, (const int[]){3}, 1, false) : NULL;
    ct_tensor *by_head = per_row ? ct_transpose(per_row, 1, 2) : NULL;
    ct_tensor *delta = by_head ? ct_contiguous(by_head) : NULL;
    ct_release(product);
    ct_release(heads);
    ct_release(per_row);
    ct_release(by_head);
    ct_tensor *dqkv = delta ? ct_tensor_alloc("AttentionPackedBackward", qkv->storage->device,
                                              qkv->dtype, qkv->shape, 3)
                            : NULL;
    ct_status status = dqkv ? CT_OK : ct_last_error();
    if (status == CT_OK) {
        ct_tensor *operands[10] = {qkv, qkv, qkv, NULL, lse, g, delta, dqkv, dqkv, dqkv};
        ct_attention_args a = args_of(CT_ATTENTION_BACKWARD, &s, qkv->dtype, operands);
        status = ct_backend_attention(qkv->storage->device, &a);
    }
    ct_release(g);
    ct_release(delta);
    if (status != CT_OK) {
        ct_release(dqkv);
        return status;
    }
    grads[0] = dqkv;
    return CT_OK;
}

ct_tensor *ct_attention_packed(const ct_tensor *qkv, int64_t heads)
{
    if (!ct_attention_packed_takes(qkv, heads))
        return ct_error_null(CT_ERR_INTERNAL, "ct_attention_packed: qkv of these sizes, dtype or "
                             "device is not taken (check ct_attention_packed_takes first)");
    packed_shape s = shape_of(qkv, heads);
    ct_device device = qkv->storage->device;
    int64_t joined[3] = {s.batch, s.t, s.c}, rows[2] = {s.batch * s.heads, s.t};
    ct_tensor *out = ct_tensor_alloc("ct_attention_packed", device, qkv->dtype, joined, 3);
    ct_tensor *lse = out ? ct_tensor_alloc("ct_attention_packed", device, qkv->dtype, rows, 2) : NULL;
    ct_status status = lse ? CT_OK : ct_last_error();
    if (status == CT_OK) {
        ct_tensor *in = (ct_tensor *)qkv, *operands[10] = {in, in, in, out, lse};
        ct_attention_args a = args_of(CT_ATTENTION_FORWARD, &s, qkv->dtype, operands);
        status = ct_backend_attention(device, &a);
    }
    if (status != CT_OK) {
        ct_release(out);
        ct_release(lse);
        return NULL;
    }
    const ct_tensor *inputs[1] = {qkv};
    ct_node *node;
    out = ct_record(out, "AttentionPackedBackward", packed_backward, inputs, 1, &node);
    if (node) {
        node->ints[0] = heads;
        const ct_tensor *keep[3] = {qkv, out, lse};
        for (int i = 0; i < 3 && out; i++)
            if (ct_node_save(node, keep[i]) != CT_OK) {
                ct_release(out);
                out = NULL;
            }
    }
    ct_release(lse);
    return out;
}
