/* torch.nn.functional.batch_norm over dim 1 (kernels/batch_norm.ct). The input is seen as contiguous
 * [N, C, inner]; a per-channel table `stats` [5, C] (mean, invstd, weight, weight * invstd,
 * bias) is built by a few per-channel kernels, then one elementwise kernel normalises. The
 * backward is the standard formula in two kernels: per-channel sums, then the input's gradient
 * elementwise. The per-channel reductions (the batch statistics, the backward's sums) split each
 * channel's N * inner elements by the device's shape (ops/work_split.c): a group per chunk,
 * several chunks per channel when a channel is long, then a combine pass per channel. For float16
 * and bfloat16 inputs the tables and partial sums are float32 (ct_nn_accumulate_dtype), as
 * PyTorch keeps its half-precision batch statistics; the running statistics, weight and bias
 * keep the input's dtype. */
#include "ops/nn_internal.h"
#include "ops/work_split.h"
#include "ops/autocast.h"

static const char *const FN = "ct_batch_norm";

#define STATS_ROWS 5
#define WORK_ROWS 6

typedef struct bn_shape {
    int64_t n, c, inner;
} bn_shape;

static bn_shape shape_of(const int64_t *shape, int ndim)
{
    bn_shape s = {shape[0], shape[1], 1};
    for (int d = 2; d < ndim; d++) s.inner *= shape[d];
    return s;
}

/* Parameters every batch-norm kernel reads: l[0] = C, l[1] = inner, l[2] = N. */
static ct_kparams bn_params(const bn_shape *s, int64_t n)
{
    ct_kparams p = {0};
    p.n = (long)n;
    p.l[0] = (long)s->c;
    p.l[1] = (long)s->inner;
    p.l[2] = (long)s->n;
    return p;
}

/* Launches kernel over tensors as buffers 0, 1, ... (NULL: none), as p->n independent work items
 * (group_size 0) or p->n groups of group_size. */
static ct_status launch_in_groups(ct_kernel_id kernel, ct_kparams *p, const ct_tensor *const *tensors,
                                  int count, long work, int group_size)
{
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {NULL};
    for (int i = 0; i < count; i++) {
        if (!tensors[i]) continue;
        buffers[i] = ct_tensor_handle(tensors[i]);
        p->off[i] = (long)tensors[i]->offset;
    }
    ct_device device = tensors[0]->storage->device;
    if (group_size > 0) return ct_backend_launch_groups(device, kernel, buffers, p, work, group_size);
    return ct_backend_launch(device, kernel, buffers, p, work);
}

static ct_status launch(ct_kernel_id kernel, ct_kparams *p, const ct_tensor *const *tensors, int count,
                        long work)
{
    return launch_in_groups(kernel, p, tensors, count, work, 0);
}

/* The elementwise kernels (normalising, the input's gradient): a launch over x's elements, l[3]
 * of them per work item: a device's lanes on a GPU (adjacent items take adjacent pieces), a long
 * vector loop on a CPU. */
static ct_status elementwise_params(const ct_tensor *x, const bn_shape *s, ct_kparams *p)
{
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(x->storage->device, &shape);
    if (status != CT_OK) return status;
    int64_t total = s->n * s->c * s->inner;
    long span = shape.lanes_per_item > 0 ? shape.lanes_per_item : 1;
    if (shape.group_size == 1) { /* a CPU: the elements spread over its items */
        span = (long)(total / (shape.target_items > 0 ? shape.target_items : 1));
        if (span < shape.min_per_item) span = shape.min_per_item;
        if (span > shape.max_per_item) span = shape.max_per_item;
    }
    *p = bn_params(s, (total + span - 1) / span);
    p->l[3] = span;
    return CT_OK;
}

/* How the per-channel reductions split: each channel's N * inner elements in split->chunks
 * chunks of split->chunk (see kernels/batch_norm.ct). */
static ct_status channel_split(const ct_tensor *x, const bn_shape *s, ct_reduce_split *split)
{
    return ct_split_rows(x->storage->device, s->c, s->n * s->inner, split);
}

/* ---- checks ---- */

static ct_status check_channel_tensor(const ct_tensor *input, const ct_tensor *t, const char *name)
{
    if (!t) return CT_OK;
    char si[256], st[256];
    if (t->ndim != 1 || t->shape[0] != input->shape[1])
        return ct_error(CT_ERR_SHAPE, "%s: expected %s of shape [%lld] (one per channel of input "
                        "%s), but got %s of shape %s", FN, name, (long long)input->shape[1],
                        ct_shape_format(input->shape, input->ndim, si, sizeof si), name,
                        ct_shape_format(t->shape, t->ndim, st, sizeof st));
    if (t->dtype != input->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: input is %s but %s is %s; they must have the same dtype "
                        "(convert one with ct_to_dtype)", FN, ct_dtype_name(input->dtype), name,
                        ct_dtype_name(t->dtype));
    return CT_OK;
}

static const char *const operand_names[5] = {"input", "running_mean", "running_var", "weight", "bias"};

ct_status ct_batch_norm_check_devices(const char *function, const ct_tensor *input,
                                      const ct_tensor *running_mean, const ct_tensor *running_var,
                                      const ct_tensor *weight, const ct_tensor *bias)
{
    const ct_tensor *all[5] = {input, running_mean, running_var, weight, bias};
    const ct_tensor *given[5];
    const char *given_names[5];
    int count = 0;
    for (int i = 0; i < 5; i++)
        if (all[i]) {
            given[count] = all[i];
            given_names[count++] = operand_names[i];
        }
    return ct_check_operands(function, given, given_names, count);
}

static ct_status check_arguments(const ct_tensor *input, const ct_tensor *running_mean,
                                 const ct_tensor *running_var, const ct_tensor *weight,
                                 const ct_tensor *bias, bool training)
{
    if (!input) return ct_null_argument(FN, "input"), ct_last_error();
    const ct_tensor *all[5] = {input, running_mean, running_var, weight, bias};
    ct_status status = ct_batch_norm_check_devices(FN, input, running_mean, running_var, weight, bias);
    if (status != CT_OK) return status;
    char si[256];
    ct_shape_format(input->shape, input->ndim, si, sizeof si);
    if (input->ndim < 2)
        return ct_error(CT_ERR_SHAPE, "%s: expected input [N, C] or [N, C, ...] (2 or more dims), "
                        "but got input of shape %s", FN, si);
    if (!ct_dtype_is_floating(input->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: input has dtype %s; batch normalisation needs a "
                        "floating dtype (float32, float64, float16 or bfloat16)", FN,
                        ct_dtype_name(input->dtype));
    for (int i = 1; i < 5; i++)
        if ((status = check_channel_tensor(input, all[i], operand_names[i])) != CT_OK) return status;
    if (!running_mean != !running_var)
        return ct_error(CT_ERR_NULL_ARGUMENT, "%s: %s is given but %s is NULL; give both running "
                        "statistics or neither", FN, running_mean ? "running_mean" : "running_var",
                        running_mean ? "running_var" : "running_mean");
    if (!training && !running_mean)
        return ct_error(CT_ERR_NULL_ARGUMENT, "%s: running_mean and running_var must be given "
                        "when not training (evaluation normalises with them)", FN);
    bn_shape s = shape_of(input->shape, input->ndim);
    if (training && s.n * s.inner == 1)
        return ct_error(CT_ERR_SHAPE, "%s: expected more than 1 value per channel when training, "
                        "but got input of shape %s", FN, si);
    return CT_OK;
}

/* ---- the forward ---- */

/* stats rows 0-1: the batch's mean and biased variance (zeros for an empty batch), and the
 * running statistics moved towards them. */
static ct_status batch_statistics(const ct_tensor *x, ct_tensor *stats, ct_tensor *running_mean,
                                  ct_tensor *running_var, const bn_shape *s, double momentum)
{
    static const ct_kernel_id stats_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_stats);
    static const ct_kernel_id combine_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_stats_combine);
    static const ct_kernel_id update_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_update_running);
    int64_t m = s->n * s->inner;
    if (m == 0) return ct_tensor_fill(stats, 0.0);
    ct_reduce_split split;
    ct_status status = channel_split(x, s, &split);
    if (status != CT_OK) return status;
    /* each chunk's (mean, M2) when a channel takes several */
    ct_tensor *partials = NULL;
    if (split.chunks > 1) {
        int64_t partials_shape[1] = {2 * s->c * split.chunks};
        partials = ct_tensor_alloc(FN, x->storage->device, stats->dtype, partials_shape, 1);
        if (!partials) return ct_last_error();
    }
    ct_kparams p = bn_params(s, s->c * split.chunks);
    p.l[3] = split.chunk;
    const ct_tensor *stats_operands[3] = {stats, x, partials};
    status = launch_in_groups(stats_kernels[x->dtype], &p, stats_operands, 3, 2 * split.chunk,
                              split.group_size);
    if (status == CT_OK && partials) {
        p.n = (long)s->c;
        status = launch_in_groups(combine_kernels[x->dtype], &p, stats_operands, 3,
                                  2 * split.chunks, split.combine_group_size);
    }
    ct_release(partials);
    if (status != CT_OK || !running_mean) return status;
    p = bn_params(s, s->c);
    p.stride[0][0] = (long)running_mean->strides[0];
    p.stride[1][0] = (long)running_var->strides[0];
    p.s[0] = momentum;
    p.s[1] = (double)m / (double)(m - 1);
    const ct_tensor *update_operands[3] = {running_mean, running_var, stats};
    return launch(update_kernels[x->dtype], &p, update_operands, 3, 1);
}

/* stats rows 0-1 from the running statistics (evaluation). */
static ct_status running_statistics(ct_tensor *stats, const ct_tensor *running_mean,
                                    const ct_tensor *running_var, int64_t c)
{
    int64_t shape[1] = {c}, strides[1] = {1};
    ct_tensor *mean_row = ct_tensor_view_of(stats, 1, shape, strides, stats->offset);
    ct_tensor *var_row = ct_tensor_view_of(stats, 1, shape, strides, stats->offset + c);
    ct_status status = mean_row && var_row ? ct_tensor_copy_into(mean_row, running_mean)
                                           : ct_last_error();
    if (status == CT_OK) status = ct_tensor_copy_into(var_row, running_var);
    ct_release(mean_row);
    ct_release(var_row);
    return status;
}

static ct_tensor *batch_norm_forward(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                                     const ct_tensor *weight, const ct_tensor *bias, bool training,
                                     double momentum, double eps, ct_tensor **stats_out)
{
    static const ct_kernel_id coeff_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_coeffs);
    static const ct_kernel_id apply_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_apply);
    ct_device device = x->storage->device;
    bn_shape s = shape_of(x->shape, x->ndim);
    int64_t stats_shape[2] = {STATS_ROWS, s.c};
    ct_tensor *stats = ct_tensor_alloc(FN, device, ct_nn_accumulate_dtype(x->dtype), stats_shape,
                                       2);
    ct_tensor *out = stats ? ct_tensor_alloc(FN, device, x->dtype, x->shape, x->ndim) : NULL;
    ct_status status = out ? CT_OK : ct_last_error();
    if (status == CT_OK)
        status = training ? batch_statistics(x, stats, running_mean, running_var, &s, momentum)
                          : running_statistics(stats, running_mean, running_var, s.c);
    if (status == CT_OK) {
        ct_kparams p = bn_params(&s, s.c);
        p.l[1] = weight != NULL;
        p.l[2] = bias != NULL;
        p.stride[1][0] = weight ? (long)weight->strides[0] : 0;
        p.stride[2][0] = bias ? (long)bias->strides[0] : 0;
        p.s[0] = eps;
        const ct_tensor *operands[3] = {stats, weight, bias};
        status = launch(coeff_kernels[x->dtype], &p, operands, 3, 1);
    }
    ct_kparams p;
    if (status == CT_OK) status = elementwise_params(x, &s, &p);
    if (status == CT_OK) {
        const ct_tensor *operands[3] = {out, x, stats};
        status = launch(apply_kernels[x->dtype], &p, operands, 3, p.l[3]);
    }
    if (status != CT_OK) {
        ct_release(stats);
        ct_release(out);
        return NULL;
    }
    *stats_out = stats;
    return out;
}

/* ---- the backward ---- */

/* A new [c] tensor of dtype with row `row` of the contiguous table t ([rows, c]). */
static ct_tensor *table_row(const ct_tensor *t, int64_t row, ct_dtype dtype)
{
    int64_t c = t->shape[1], shape[1] = {c}, strides[1] = {1};
    ct_tensor *view = ct_tensor_view_of(t, 1, shape, strides, t->offset + row * c);
    ct_tensor *copy = !view ? NULL : dtype == t->dtype ? ct_clone(view) : ct_to_dtype(view, dtype);
    ct_release(view);
    return copy;
}

static ct_status batch_norm_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id reduce_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_backward_reduce);
    static const ct_kernel_id combine_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_backward_combine);
    static const ct_kernel_id input_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(batch_norm_backward_input);
    const ct_tensor *x = node->saved[0], *stats = node->saved[1];
    bn_shape s = shape_of(x->shape, x->ndim);
    ct_tensor *g = ct_contiguous(grad);
    bool empty = s.n * s.inner == 0; /* no elements: zero sums (the input's gradient is empty) */
    ct_reduce_split split = {.chunks = 1};
    ct_status status = !g ? ct_last_error() : empty ? CT_OK : channel_split(x, &s, &split);
    /* the table's rows, then each chunk's two sums when a channel takes several */
    int64_t work_shape[2] = {WORK_ROWS + (split.chunks > 1 ? 2 * split.chunks : 0), s.c};
    ct_tensor *work = status == CT_OK ? ct_tensor_alloc("NativeBatchNormBackward", x->storage->device,
                                                        stats->dtype, work_shape, 2) : NULL;
    if (status == CT_OK && !work) status = ct_last_error();
    if (status == CT_OK && empty) status = ct_tensor_fill(work, 0.0);
    else if (status == CT_OK) {
        ct_kparams p = bn_params(&s, s.c * split.chunks);
        p.l[3] = split.chunk;
        p.s[0] = node->ints[0]; /* training */
        const ct_tensor *operands[4] = {work, g, x, stats};
        status = launch_in_groups(reduce_kernels[x->dtype], &p, operands, 4, 2 * split.chunk,
                                  split.group_size);
        if (status == CT_OK && split.chunks > 1) {
            p.n = (long)s.c;
            status = launch_in_groups(combine_kernels[x->dtype], &p, operands, 4, 2 * split.chunks,
                                      split.combine_group_size);
        }
    }
    if (status == CT_OK && ct_node_needs_grad(node, 0)) {
        grads[0] = ct_tensor_alloc("NativeBatchNormBackward", x->storage->device, x->dtype, x->shape,
                                   x->ndim);
        ct_kparams p;
        status = grads[0] ? elementwise_params(x, &s, &p) : ct_last_error();
        const ct_tensor *operands[4] = {grads[0], g, x, work};
        if (status == CT_OK) status = launch(input_kernels[x->dtype], &p, operands, 4, p.l[3]);
    }
    if (status == CT_OK && ct_node_needs_grad(node, 1) && !(grads[1] = table_row(work, 1, x->dtype)))
        status = ct_last_error();
    if (status == CT_OK && ct_node_needs_grad(node, 2) && !(grads[2] = table_row(work, 0, x->dtype)))
        status = ct_last_error();
    ct_release(work);
    ct_release(g);
    if (status != CT_OK)
        for (int i = 0; i < 3; i++) {
            ct_release(grads[i]);
            grads[i] = NULL;
        }
    return status;
}

ct_tensor *ct_batch_norm(const ct_tensor *input, ct_tensor *running_mean, ct_tensor *running_var,
                         const ct_tensor *weight, const ct_tensor *bias, bool training,
                         double momentum, double eps)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_batch_norm(c_[0], running_mean, running_var, weight, bias, training, momentum, eps), input)
    if (check_arguments(input, running_mean, running_var, weight, bias, training) != CT_OK)
        return ct_api_return(NULL);
    ct_no_grad_push(); /* the running statistics move outside the graph */
    ct_tensor *x = ct_contiguous(input), *stats = NULL;
    ct_tensor *out = x ? batch_norm_forward(x, running_mean, running_var, weight, bias, training,
                                            momentum, eps, &stats)
                       : NULL;
    ct_no_grad_pop();
    const ct_tensor *inputs[3] = {input, weight, bias};
    ct_node *node;
    out = ct_record(out, "NativeBatchNormBackward", batch_norm_backward, inputs, 3, &node);
    if (node) {
        node->ints[0] = training ? 1 : 0;
        if (ct_node_save(node, x) != CT_OK || ct_node_save(node, stats) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(stats);
    ct_release(x);
    return ct_api_return(out);
}
