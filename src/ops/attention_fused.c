/* The fused attention path: kernels/attention.ct's forward, recorded as one node whose backward
 * runs the FlashAttention-2 backward: delta = rowsum(dout * out) by the ops, then one kernel that
 * owns dk and dv per key tile and one that owns dq per query tile. What is kept for the backward
 * grows linearly in T: q, k, v, the output and one log-sum-exp per query row. A backend with an
 * attention of its own (the CPU's for float32, over its BLAS: backend/cpu/cpu_attention.c) runs
 * the forward and the backward's two kernels instead, with the same operands. */
#include <string.h>

#include "ops/attention_internal.h"
#include "ops/work_split.h"

static const ct_kernel_id forward_kernels[CT_DTYPE_COUNT] =
    CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(attention_forward);
static const ct_kernel_id backward_kv_kernels[CT_DTYPE_COUNT] =
    CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(attention_backward_kv);
static const ct_kernel_id backward_q_kernels[CT_DTYPE_COUNT] =
    CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(attention_backward_q);

/* The dtype the kernels compute in (and keep the log-sum-exp and delta in). */
static ct_dtype real_dtype(ct_dtype dtype)
{
    return dtype == CT_F16 || dtype == CT_BF16 ? CT_F32 : dtype;
}

typedef struct attention_shape {
    long bh, tq, tk, d, dv;
    bool causal;
    double scale;
} attention_shape;

void ct_attention_args_set_operands(ct_attention_args *a, ct_tensor *const *tensors)
{
    void **handles[10] = {&a->q,    &a->k,     &a->v,  &a->out, &a->lse,
                          &a->dout, &a->delta, &a->dq, &a->dk,  &a->dv_grad};
    long *offsets[10] = {&a->q_offset, &a->k_offset, &a->v_offset, &a->out_offset, &a->lse_offset,
                         &a->dout_offset, &a->delta_offset, &a->dq_offset, &a->dk_offset, &a->dv_grad_offset};
    for (int i = 0; i < 10; i++)
        if (tensors[i]) {
            *handles[i] = ct_tensor_handle(tensors[i]);
            *offsets[i] = (long)tensors[i]->offset;
        }
}

/* The backend's attention arguments for contiguous [bh, T, D] operands (NULL where a pass has
 * none). */
static ct_attention_args backend_args(ct_attention_pass pass, const attention_shape *s,
                                      ct_dtype dtype, ct_tensor *const *tensors)
{
    ct_attention_layout queries = {.batch = s->tq * s->d, .row = s->d};
    ct_attention_layout keys = {.batch = s->tk * s->d, .row = s->d};
    ct_attention_layout values = {.batch = s->tk * s->dv, .row = s->dv};
    ct_attention_layout outputs = {.batch = s->tq * s->dv, .row = s->dv};
    ct_attention_args a = {.pass = pass, .dtype = dtype, .bh = s->bh, .tq = s->tq, .tk = s->tk,
                           .d = s->d, .dv = s->dv, .heads = 1, .causal = s->causal,
                           .scale = s->scale, .q_at = queries, .k_at = keys, .v_at = values,
                           .out_at = outputs, .dout_at = outputs, .dq_at = queries, .dk_at = keys,
                           .dv_at = values};
    ct_attention_args_set_operands(&a, tensors);
    return a;
}

static attention_shape shape_of(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                bool is_causal, double scale)
{
    attention_shape s = {.tq = q->shape[q->ndim - 2], .tk = k->shape[k->ndim - 2],
                         .d = q->shape[q->ndim - 1], .dv = v->shape[v->ndim - 1],
                         .causal = is_causal, .scale = scale};
    s.bh = (long)(ct_numel(q) / (s.tq * s.d));
    return s;
}

bool ct_attention_in_backend(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                             bool is_causal, double scale)
{
    attention_shape s = shape_of(q, k, v, is_causal, scale);
    ct_tensor *none[10] = {NULL};
    ct_attention_args a = backend_args(CT_ATTENTION_FORWARD, &s, q->dtype, none);
    return ct_backend_attention_takes(q->storage->device, &a);
}

/* One launch over tiles of `rows` rows per [T, D] matrix; tensors[k] is the table's buffer k. */
static ct_status launch(ct_kernel_id kernel, const attention_shape *s, long rows,
                        ct_tensor *const *tensors, int count)
{
    ct_device device = tensors[0] ? tensors[0]->storage->device : tensors[1]->storage->device;
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    int group = device.type == CT_CPU ? 1 : (shape.group_size < 64 ? shape.group_size : 64);
    long span = device.type == CT_CPU ? CT_ATTENTION_CPU_ROWS : group;
    long tiles = (rows + span - 1) / span;
    void *table[CT_KERNEL_WIDE_BUFFERS] = {NULL};
    ct_kparams p = {0};
    for (int b = 0; b < count; b++) {
        if (!tensors[b]) continue;
        table[b] = ct_tensor_handle(tensors[b]);
        p.stride[b / 8][b % 8] = (long)tensors[b]->offset;
    }
    p.n = s->bh * tiles;
    p.l[0] = s->tq;
    p.l[1] = s->tk;
    p.l[2] = s->d;
    p.l[3] = s->dv;
    p.s[0] = s->scale;
    p.size[0] = s->causal;
    p.size[1] = tiles;
    long other = rows == s->tq ? s->tk : s->tq;
    long work = span * other * (s->d + s->dv) * (s->causal ? 1 : 2);
    return ct_backend_launch_groups(device, kernel, table, &p, work, group);
}

static ct_tensor *contiguous_in(const ct_tensor *t, ct_dtype dtype)
{
    ct_tensor *cast = ct_cast_if_needed(t, dtype);
    ct_tensor *out = cast ? ct_contiguous(cast) : NULL;
    ct_release(cast);
    return out;
}

static ct_status attention_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *q = node->saved[0], *k = node->saved[1], *v = node->saved[2];
    ct_tensor *out = node->saved[3], *lse = node->saved[4];
    attention_shape s = shape_of(q, k, v, node->ints[0] != 0, node->scalars[0]);
    ct_dtype real = real_dtype(q->dtype);
    ct_tensor *g = contiguous_in(grad, q->dtype);
    /* delta_i = sum_c dout[i, c] * out[i, c], in the kernels' dtype */
    ct_tensor *g_real = g ? ct_cast_if_needed(g, real) : NULL;
    ct_tensor *out_real = g_real ? ct_cast_if_needed(out, real) : NULL;
    ct_tensor *product = out_real ? ct_mul(g_real, out_real) : NULL;
    int last = q->ndim - 1;
    ct_tensor *delta = product ? ct_sum(product, &last, 1, false) : NULL;
    ct_release(g_real);
    ct_release(out_real);
    ct_release(product);
    ct_device device = q->storage->device;
    ct_tensor *dq = delta ? ct_tensor_alloc("SdpaBackward", device, q->dtype, q->shape, q->ndim) : NULL;
    ct_tensor *dk = dq ? ct_tensor_alloc("SdpaBackward", device, k->dtype, k->shape, k->ndim) : NULL;
    ct_tensor *dv = dk ? ct_tensor_alloc("SdpaBackward", device, v->dtype, v->shape, v->ndim) : NULL;
    ct_status status = dv ? CT_OK : ct_last_error();
    ct_tensor *operands[10] = {q, k, v, NULL, lse, g, delta, dq, dk, dv};
    ct_attention_args args = backend_args(CT_ATTENTION_BACKWARD, &s, q->dtype, operands);
    ct_tensor *table[9] = {dq, dk, dv, q, k, v, g, lse, delta};
    if (status == CT_OK && ct_backend_attention_takes(device, &args)) {
        status = ct_backend_attention(device, &args);
    } else {
        if (status == CT_OK) status = launch(backward_kv_kernels[q->dtype], &s, s.tk, table, 9);
        if (status == CT_OK) status = launch(backward_q_kernels[q->dtype], &s, s.tq, table, 9);
    }
    ct_release(g);
    ct_release(delta);
    ct_tensor *results[3] = {dq, dk, dv};
    for (int i = 0; i < 3; i++) {
        if (status == CT_OK && ct_node_needs_grad(node, i)) grads[i] = results[i];
        else ct_release(results[i]);
    }
    return status;
}

ct_tensor *ct_attention_fused(const char *function, const ct_tensor *q, const ct_tensor *k,
                              const ct_tensor *v, bool is_causal, double scale)
{
    attention_shape s = shape_of(q, k, v, is_causal, scale);
    ct_device device = q->storage->device;
    bool was_enabled = ct_set_grad_enabled(false); /* the node below records the whole op */
    ct_tensor *qc = ct_contiguous(q), *kc = ct_contiguous(k), *vc = ct_contiguous(v);
    ct_set_grad_enabled(was_enabled);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, q->shape, sizeof(int64_t) * (size_t)q->ndim);
    shape[q->ndim - 1] = s.dv;
    ct_tensor *out = qc && kc && vc ? ct_tensor_alloc(function, device, q->dtype, shape, q->ndim) : NULL;
    ct_tensor *lse = out ? ct_tensor_alloc(function, device, real_dtype(q->dtype), shape, q->ndim - 1) : NULL;
    ct_tensor *table[5] = {out, lse, qc, kc, vc};
    ct_tensor *operands[10] = {qc, kc, vc, out, lse};
    ct_attention_args args = backend_args(CT_ATTENTION_FORWARD, &s, q->dtype, operands);
    bool in_backend = ct_backend_attention_takes(device, &args);
    if (lse && (in_backend ? ct_backend_attention(device, &args)
                           : launch(forward_kernels[q->dtype], &s, s.tq, table, 5)) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    const ct_tensor *inputs[3] = {q, k, v};
    ct_node *node;
    out = ct_record(out, "ScaledDotProductFlashAttentionBackward", attention_backward, inputs, 3, &node);
    if (node) {
        node->ints[0] = is_causal;
        node->scalars[0] = scale;
        const ct_tensor *keep[5] = {qc, kc, vc, out, lse};
        for (int i = 0; i < 5 && out; i++)
            if (ct_node_save(node, keep[i]) != CT_OK) {
                ct_release(out);
                out = NULL;
            }
    }
    ct_release(qc);
    ct_release(kc);
    ct_release(vc);
    ct_release(lse);
    return out;
}
