/* SyncBatchNorm (torch.nn.SyncBatchNorm): a BatchNorm1d/2d module converted in place, whose
 * training statistics cover the batches of every rank together.
 *
 * The forward is written with differentiable ops and one differentiable all-reduce, so autograd
 * gives its backward on every device, and that backward communicates exactly as PyTorch's SyncBN
 * backward does (the gradients of the statistics are summed over the ranks):
 *   1. each rank's count n_r, mean m_r and M2_r = sum (x - m_r)^2 per channel, by the corrected
 *      two-pass formula as ct_batch_norm's kernels: d = x - sum x / n_r, m_r = sum x / n_r +
 *      sum d / n_r and M2_r = sum d^2 - (sum d)^2 / n_r (no cancellation from a large mean, and
 *      the rounding of the first mean cancels);
 *   2. every rank's [n, m, M2] rows in a [world * 3, C] tensor, zero but for this rank's rows,
 *      summed over the ranks: an all-gather done by an all-reduce (its backward is an all-reduce
 *      of the gradient, the rule that makes the sum over ranks of the losses come out right);
 *   3. Chan's parallel combination: n = sum n_k, mean = sum n_k m_k / n,
 *      M2 = sum M2_k + sum n_k (m_k - mean)^2, var = M2 / n (biased, for normalising), with the
 *      same correction: e = sum n_k (m_k - mean) / n (the rounding of sum n_k m_k) moves the
 *      mean by e and takes n e^2 from M2;
 *   4. y = (x - mean) / sqrt(var + eps) * weight + bias, and the running statistics move as
 *      BatchNorm's do, with the unbiased variance of the global count, M2 / (n - 1).
 * In eval mode, without a process group (also in a build without MPI) or with one rank, the
 * module is the BatchNorm layer it was. */
#include <stdlib.h>
#include <string.h>

#include "distributed/dist_autograd.h"
#include "nn/batch_norm_layer.h"
#include "ops/ops_internal.h"

static const char *const KIND = "SyncBatchNorm";

/* The forward's intermediates, released together at its end. */
#define TEMPS_MAX 64
typedef struct temps {
    ct_tensor *items[TEMPS_MAX];
    int count;
} temps;

/* t itself, kept for release (NULL passes through, so chains check once). */
static ct_tensor *keep(temps *t, ct_tensor *x)
{
    if (!x) return NULL;
    if (t->count == TEMPS_MAX) {
        ct_release(x);
        return ct_error_null(CT_ERR_INTERNAL, "%s: more than %d intermediates", KIND, TEMPS_MAX);
    }
    t->items[t->count++] = x;
    return x;
}

static void release_temps(temps *t)
{
    for (int i = 0; i < t->count; i++) ct_release(t->items[i]);
    t->count = 0;
}

/* A [C] tensor as a [C, 1] column, to broadcast against [N, C, inner]. */
static ct_tensor *column(temps *t, const ct_tensor *per_channel)
{
    if (!per_channel) return NULL;
    int64_t shape[2] = {per_channel->shape[0], 1};
    return keep(t, ct_reshape(per_channel, shape, 2));
}

/* Checks what the plain layer's op would check, before any communication: a rank that fails
 * here must still meet the others' all-reduce (with its error). */
static ct_status check_input(const ct_module *self, const ct_tensor *x)
{
    if (ct_batch_norm_layer_check_input(self, x) != CT_OK) return ct_last_error();
    const ct_tensor *weight = ct_module_own_parameter(self, "weight");
    const ct_tensor *running_mean = ct_module_own_buffer(self, "running_mean");
    ct_status status = ct_batch_norm_check_devices(KIND, x, running_mean, ct_module_own_buffer(self, "running_var"),
                                                   weight, ct_module_own_parameter(self, "bias"));
    if (status != CT_OK) return status;
    const ct_tensor *other = weight ? weight : running_mean;
    if (!ct_dtype_is_floating(x->dtype) || (other && other->dtype != x->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: the input is %s but the layer's tensors are %s; batch "
                        "normalisation needs float32 or float64 input of the layer's dtype "
                        "(ct_module_to_dtype converts the layer)", KIND, ct_dtype_name(x->dtype),
                        other ? ct_dtype_name(other->dtype) : "float32");
    return CT_OK;
}

/* Step 2: this rank's rows [count; mean; M2] at rows [3 rank, 3 rank + 3) of a [world * 3, C]
 * tensor of zeros; x3 is the input as [N, C, inner]. */
static ct_tensor *own_statistics(temps *t, const ct_tensor *x3, int rank, int world)
{
    if (!x3) return NULL;
    int64_t n = x3->shape[0] * x3->shape[2], c = x3->shape[1];
    ct_device device = ct_tensor_device(x3);
    int dims[2] = {0, 2};
    /* an empty batch contributes zeros (and keeps its place in the graph, as the other ranks') */
    double divisor = n > 0 ? (double)n : 1.0;
    ct_tensor *rough = keep(t, ct_div_scalar(keep(t, ct_sum(x3, dims, 2, false)), divisor));
    ct_tensor *centred = keep(t, ct_sub(x3, column(t, rough)));
    ct_tensor *deviation = keep(t, ct_sum(centred, dims, 2, false));
    ct_tensor *mean = keep(t, ct_add(rough, keep(t, ct_div_scalar(deviation, divisor))));
    ct_tensor *squares = keep(t, ct_sum(keep(t, ct_mul(centred, centred)), dims, 2, false));
    ct_tensor *m2 = keep(t, ct_sub(squares, keep(t, ct_div_scalar(keep(t, ct_mul(deviation, deviation)),
                                                                    divisor))));
    ct_tensor *count = keep(t, ct_full(&c, 1, (double)n, x3->dtype, device));
    if (!m2 || !count) return NULL;
    const ct_tensor *rows[3] = {count, mean, m2};
    ct_tensor *own = keep(t, ct_stack(rows, 3, 0));
    int64_t before[2] = {3 * (int64_t)rank, c}, after[2] = {3 * (int64_t)(world - 1 - rank), c};
    ct_tensor *zeros_before = keep(t, ct_zeros(before, 2, x3->dtype, device));
    ct_tensor *zeros_after = keep(t, ct_zeros(after, 2, x3->dtype, device));
    if (!own || !zeros_before || !zeros_after) return NULL;
    const ct_tensor *parts[3] = {zeros_before, own, zeros_after};
    return keep(t, ct_cat(parts, 3, 0));
}

/* Step 3 from the gathered [world * 3, C] rows: the global mean and biased variance ([C] each),
 * and the global count. */
static ct_status combine(temps *t, const ct_tensor *gathered, int world, ct_tensor **mean_out,
                         ct_tensor **var_out, double *count_out)
{
    if (!gathered) return ct_last_error();
    int64_t c = gathered->shape[1], shape[3] = {world, 3, c};
    ct_tensor *g = keep(t, ct_reshape(gathered, shape, 3));
    ct_tensor *counts = keep(t, ct_select(g, 1, 0)); /* [world, C] */
    ct_tensor *means = keep(t, ct_select(g, 1, 1));
    ct_tensor *m2s = keep(t, ct_select(g, 1, 2));
    int over_ranks[1] = {0};
    ct_tensor *count = keep(t, ct_sum(counts, over_ranks, 1, false));
    ct_tensor *weighted = keep(t, ct_sum(keep(t, ct_mul(counts, means)), over_ranks, 1, false));
    ct_tensor *rough = keep(t, ct_div(weighted, count));
    ct_tensor *deviation = keep(t, ct_sub(means, rough));
    ct_tensor *moved = keep(t, ct_mul(counts, deviation)); /* n_k (m_k - mean) */
    ct_tensor *error = keep(t, ct_div(keep(t, ct_sum(moved, over_ranks, 1, false)), count));
    ct_tensor *mean = keep(t, ct_add(rough, error));
    ct_tensor *spread = keep(t, ct_mul(moved, deviation));
    ct_tensor *m2 = keep(t, ct_add(keep(t, ct_sum(m2s, over_ranks, 1, false)),
                                   keep(t, ct_sum(spread, over_ranks, 1, false))));
    m2 = keep(t, ct_sub(m2, keep(t, ct_mul(count, keep(t, ct_mul(error, error))))));
    m2 = keep(t, ct_relu(m2)); /* rounding can leave a spread of 0 a hair below it */
    ct_tensor *var = keep(t, ct_div(m2, count));
    ct_tensor *first = keep(t, ct_select(count, 0, 0));
    if (!var || !first || ct_item(first, count_out) != CT_OK) return ct_last_error();
    *mean_out = mean;
    *var_out = var;
    return CT_OK;
}

/* running = (1 - momentum) running + momentum value, in place and outside the graph. */
static ct_status move_towards(ct_tensor *running, const ct_tensor *value, double momentum)
{
    ct_tensor *old_part = ct_mul_scalar(running, 1.0 - momentum);
    ct_tensor *new_part = ct_mul_scalar(value, momentum);
    ct_tensor *next = ct_add(old_part, new_part);
    ct_status status = next ? ct_copy_(running, next) : ct_last_error();
    ct_release(old_part);
    ct_release(new_part);
    ct_release(next);
    return status;
}

/* Step 4's bookkeeping: num_batches_tracked, running_mean and running_var (unbiased variance
 * from the global count), as BatchNorm updates them. */
static ct_status update_running(ct_module *self, const ct_tensor *mean, const ct_tensor *var, double count)
{
    const ct_batch_norm_layer *bn = self->data;
    ct_tensor *running_mean = ct_module_own_buffer(self, "running_mean");
    ct_tensor *running_var = ct_module_own_buffer(self, "running_var");
    ct_status status = ct_batch_norm_layer_count_batch(self);
    if (status != CT_OK || !running_mean || !running_var) return status;
    ct_no_grad_push();
    double momentum = bn->options.momentum;
    ct_tensor *unbiased = ct_mul_scalar(var, count / (count - 1.0));
    status = move_towards(running_mean, mean, momentum);
    if (status == CT_OK) status = unbiased ? move_towards(running_var, unbiased, momentum) : ct_last_error();
    ct_release(unbiased);
    ct_no_grad_pop();
    return status;
}

/* Training over several ranks: steps 1-4. */
static ct_tensor *synchronised_forward(ct_module *self, const ct_tensor *x)
{
    const ct_batch_norm_layer *bn = self->data;
    temps t = {0};
    ct_tensor *x3 = NULL;
    if (check_input(self, x) == CT_OK) {
        int64_t inner = 1;
        for (int d = 2; d < x->ndim; d++) inner *= x->shape[d];
        int64_t shape[3] = {x->shape[0], x->shape[1], inner};
        x3 = keep(&t, ct_reshape(x, shape, 3));
    }
    int world = ct_dist_world_size(), rank = ct_dist_rank();
    /* NULL (an error above) still meets the other ranks' all-reduce, with the error */
    ct_tensor *gathered = keep(&t, ct_dist_all_reduce_with_grad(own_statistics(&t, x3, rank, world),
                                                                CT_REDUCE_SUM));
    ct_tensor *mean = NULL, *var = NULL, *out = NULL;
    double count = 0;
    ct_status status = combine(&t, gathered, world, &mean, &var, &count);
    if (status == CT_OK && count <= 1.0) {
        char shape[256];
        status = ct_error(CT_ERR_SHAPE, "%s: expected more than 1 value per channel when training, but "
                          "the ranks' batches hold %.0f together (this rank's input has shape %s)", KIND,
                          count, ct_shape_format(x->shape, x->ndim, shape, sizeof shape));
    }
    if (status == CT_OK) status = update_running(self, mean, var, count);
    if (status == CT_OK) {
        ct_tensor *invstd = keep(&t, ct_pow_scalar(keep(&t, ct_add_scalar(var, bn->options.eps)), -0.5));
        const ct_tensor *weight = ct_module_own_parameter(self, "weight");
        const ct_tensor *bias = ct_module_own_parameter(self, "bias");
        ct_tensor *scale = weight ? keep(&t, ct_mul(invstd, weight)) : invstd;
        ct_tensor *y3 = keep(&t, ct_mul(keep(&t, ct_sub(x3, column(&t, mean))), column(&t, scale)));
        if (bias) y3 = keep(&t, ct_add(y3, column(&t, bias)));
        out = y3 ? ct_reshape(y3, x->shape, x->ndim) : NULL;
    }
    release_temps(&t);
    return out;
}

static ct_tensor *sync_batch_norm_forward(ct_module *self, const ct_tensor *x)
{
    /* PyTorch's need_sync: training, a process group, more than one rank. */
    if (!self->training || !ct_dist_is_initialized() || ct_dist_world_size() <= 1)
        return ct_batch_norm_layer_forward(self, x);
    CT_API_ENTER;
    return ct_api_return(synchronised_forward(self, x));
}

/* Converts m when it is a BatchNorm1d/2d layer (one made by ct_batch_norm1d/2d). */
static ct_status convert_one(ct_module *m, const char *prefix, void *context)
{
    (void)prefix;
    if (m->forward != ct_batch_norm_layer_forward) return CT_OK;
    char *kind = strdup(KIND);
    if (!kind) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_convert_sync_batch_norm: no host memory");
    free(m->kind);
    m->kind = kind;
    m->forward = sync_batch_norm_forward; /* the data, settings and printout stay BatchNorm's */
    (*(int *)context)++;
    return CT_OK;
}

ct_status ct_convert_sync_batch_norm(ct_module *module, int *converted)
{
    int count = 0;
    if (converted) *converted = 0;
    if (!module) return ct_null_argument("ct_convert_sync_batch_norm", "module"), ct_last_error();
    ct_status status = ct_module_visit(module, convert_one, &count);
    if (converted) *converted = count;
    return status;
}
