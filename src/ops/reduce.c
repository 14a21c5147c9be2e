/* Reductions over one or more dims: sum, mean, max, min, var, std, argmax, argmin (PyTorch's
 * semantics). The input is seen as M outputs x K reduced elements and reduced by the kernels of
 * kernels/reduce.ct, split by the device's shape (ops/work_split.c), in two passes when an
 * output's elements split into several chunks. */
#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "ops/reduce_backward.h"
#include "ops/work_split.h"
#include "ops/autocast.h"

typedef struct reduce_plan {
    const char *function;      /* the public call, for messages */
    bool reduced[CT_MAX_DIMS]; /* per input dim */
    int64_t out_shape[CT_MAX_DIMS];
    int out_ndim;
    int64_t outputs;       /* M */
    int64_t reduced_count; /* K, elements folded into each output */
    ct_kparams params;     /* kept dims, then reduced dims, input strides in stride[1] */
} reduce_plan;

/* Merges the dims of one group (kept or reduced) and appends them to p's index space. */
static void append_dims(ct_kparams *p, const int64_t *shape, const int64_t *strides, int ndim)
{
    ct_kparams group = {0};
    const int64_t *const group_strides[1] = {strides};
    ct_kparams_index_space(&group, shape, ndim, 1, group_strides);
    for (long d = 0; d < group.ndim; d++) {
        p->size[p->ndim] = group.size[d];
        p->stride[1][p->ndim] = group.stride[0][d];
        p->ndim++;
    }
}

/* Checks dims (negative dims count from the end; ndims 0 means every dim; a dim given twice is
 * an error) and lays out the reduction of a: the output shape, M, K and the index space. */
static ct_status plan_reduction(const char *function, const ct_tensor *a, const int *dims, int ndims,
                                bool keepdim, reduce_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->function = function;
    if (ndims < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: ndims is %d; give the length of dims, or 0 to "
                        "reduce every dim", function, ndims);
    if (ndims > 0 && !dims) return ct_null_argument(function, "dims"), ct_last_error();
    bool *reduced = plan->reduced;
    int given_as[CT_MAX_DIMS] = {0};
    for (int j = 0; j < ndims; j++) {
        int d = 0;
        ct_status status = ct_normalize_dim(function, dims[j], a->ndim, false, &d);
        if (status != CT_OK) return status;
        if (reduced[d])
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: dim %d appears more than once in dims "
                            "(given as %d and %d); list each dim once", function, d, given_as[d],
                            dims[j]);
        reduced[d] = true;
        given_as[d] = dims[j];
    }
    if (ndims == 0)
        for (int d = 0; d < a->ndim; d++) reduced[d] = true;

    int64_t kept_shape[CT_MAX_DIMS], kept_strides[CT_MAX_DIMS];
    int64_t reduced_shape[CT_MAX_DIMS], reduced_strides[CT_MAX_DIMS];
    int kept_ndim = 0, reduced_ndim = 0;
    plan->outputs = 1;
    plan->reduced_count = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (reduced[d]) {
            reduced_shape[reduced_ndim] = a->shape[d];
            reduced_strides[reduced_ndim++] = a->strides[d];
            plan->reduced_count *= a->shape[d];
            if (keepdim) plan->out_shape[plan->out_ndim++] = 1;
        } else {
            kept_shape[kept_ndim] = a->shape[d];
            kept_strides[kept_ndim++] = a->strides[d];
            plan->outputs *= a->shape[d];
            plan->out_shape[plan->out_ndim++] = a->shape[d];
        }
    }
    ct_kparams *p = &plan->params;
    append_dims(p, kept_shape, kept_strides, kept_ndim);
    p->l[0] = p->ndim;
    append_dims(p, reduced_shape, reduced_strides, reduced_ndim);
    p->off[1] = a->offset;
    return CT_OK;
}

/* For the reductions that have no value over nothing: CT_ERR_SHAPE naming an empty reduced dim. */
static ct_status check_not_empty(const char *function, const char *what, const ct_tensor *a,
                                 const reduce_plan *plan)
{
    if (plan->reduced_count > 0) return CT_OK;
    int empty_dim = 0;
    while (empty_dim < a->ndim && !(plan->reduced[empty_dim] && a->shape[empty_dim] == 0)) empty_dim++;
    char shape[256];
    return ct_error(CT_ERR_SHAPE, "%s: cannot compute %s of an empty dim: dim %d of the input of "
                    "shape %s has size 0; reduce over dims that have elements", function, what,
                    empty_dim, ct_shape_format(a->shape, a->ndim, shape, sizeof shape));
}

/* Is this a column reduction (the innermost kept dim contiguous in the input, the reduced
 * elements strided, as a sum over dim 0 of [N, C])? The <op>_tile kernels then read adjacent
 * outputs' elements from contiguous memory. */
static bool is_column_reduction(const reduce_plan *plan)
{
    const ct_kparams *p = &plan->params;
    long kept = p->l[0];
    return kept > 0 && p->ndim > kept && p->stride[1][kept - 1] == 1 && p->stride[1][p->ndim - 1] != 1;
}

typedef struct reduce_kernels {
    ct_kernel_id partial, tile, combine;
} reduce_kernels;

/* Where a reduction's partials go: `count` buffers (values, then for argmax their indices) of
 * the given dtypes, `width` values per partial, from buffer `first_buffer` of the first pass (the
 * second pass reads them from buffer 1 on). */
typedef struct reduce_partials {
    int count;
    ct_dtype dtypes[2];
    int width;
    int first_buffer;
} reduce_partials;

/* Runs a reduction into out: the first pass alone when each output is one chunk, otherwise the
 * first pass into partials and the combine pass. */
static ct_status run_two_pass(const reduce_plan *plan, ct_kparams p, const ct_tensor *a,
                              ct_tensor *out, reduce_kernels kernels, reduce_partials partials)
{
    bool tiled = is_column_reduction(plan);
    ct_device device = a->storage->device;
    ct_reduce_split split;
    ct_status status = (tiled ? ct_split_columns : ct_split_rows)(device, plan->outputs,
                                                                 plan->reduced_count, &split);
    if (status != CT_OK) return status;
    p.l[1] = plan->reduced_count;
    p.l[2] = split.chunks;
    p.l[3] = split.chunk;
    p.off[0] = out->offset;
    if (tiled) {
        int64_t width = p.size[p.l[0] - 1];
        p.n = plan->outputs / width * ((width + split.tile_width - 1) / split.tile_width) * split.chunks;
    } else {
        p.n = plan->outputs * split.chunks;
    }
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(a), NULL, NULL};
    ct_kernel_id first = tiled ? kernels.tile : kernels.partial;
    long work = split.chunk * split.tile_width;
    if (split.chunks == 1) return ct_backend_launch_groups(device, first, buffers, &p, work, split.group_size);

    ct_tensor *held[2] = {NULL, NULL};
    void *combine_buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), NULL, NULL, NULL};
    int64_t shape[1] = {plan->outputs * split.chunks * partials.width};
    for (int k = 0; k < partials.count && status == CT_OK; k++) {
        held[k] = ct_tensor_alloc(plan->function, device, partials.dtypes[k], shape, 1);
        if (!held[k]) status = ct_last_error();
        else {
            buffers[partials.first_buffer + k] = combine_buffers[1 + k] = ct_tensor_handle(held[k]);
            p.off[partials.first_buffer + k] = 0;
        }
    }
    if (status == CT_OK) status = ct_backend_launch_groups(device, first, buffers, &p, work, split.group_size);
    if (status == CT_OK) {
        p.n = plan->outputs;
        p.off[1] = p.off[2] = 0;
        status = ct_backend_launch_groups(device, kernels.combine, combine_buffers, &p,
                                          split.chunks * partials.width, split.combine_group_size);
    }
    for (int k = 0; k < partials.count; k++) ct_release(held[k]);
    return status;
}

static ct_tensor *release_on_error(ct_tensor *out, ct_status status)
{
    if (status == CT_OK) return out;
    ct_release(out);
    return NULL;
}

static ct_tensor *need_floating(const char *function, const char *what, const ct_tensor *a)
{
    return ct_error_null(CT_ERR_DTYPE, "%s: could not infer output dtype: the input is %s and %s "
                         "needs a floating dtype (float32, float64, float16 or bfloat16); convert "
                         "with ct_to_dtype first", function, ct_dtype_name(a->dtype), what);
}

/* ---- sum and mean ---- */

static ct_tensor *sum_or_mean(const char *function, const ct_tensor *a, const int *dims, int ndims,
                              bool keepdim, bool mean)
{
    static const ct_kernel_id partial_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_STORED_DTYPE(sum_partial);
    static const ct_kernel_id tile_kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(sum_tile);
    static const ct_kernel_id combine_kernels[CT_DTYPE_COUNT] = {
        [CT_F32] = CT_K_sum_combine_f32, [CT_F64] = CT_K_sum_combine_f64, [CT_I64] = CT_K_sum_combine_i64,
        [CT_F16] = CT_K_sum_combine_f16, [CT_BF16] = CT_K_sum_combine_bf16};
    if (ct_tensor_unusable(function, "a", a)) return NULL;
    bool floating = ct_dtype_is_floating(a->dtype);
    if (mean && !floating) return need_floating(function, "mean", a);
    reduce_plan plan;
    if (plan_reduction(function, a, dims, ndims, keepdim, &plan) != CT_OK) return NULL;
    /* Floats keep their dtype; integers and bool sum into int64, as in PyTorch. float16 and
     * bfloat16 add in float32 (their partials too) and round the result once. */
    ct_dtype dtype = floating ? a->dtype : CT_I64;
    ct_dtype partial_dtype = dtype == CT_F16 || dtype == CT_BF16 ? CT_F32 : dtype;
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, dtype, plan.out_shape, plan.out_ndim);
    if (!out) return NULL;
    if (plan.outputs > 0 && plan.reduced_count == 0) {
        out = release_on_error(out, ct_tensor_fill(out, mean ? NAN : 0.0));
    } else if (plan.outputs > 0) {
        ct_kparams p = plan.params;
        p.s[0] = mean ? (double)plan.reduced_count : 1.0;
        reduce_kernels kernels = {partial_kernels[a->dtype], tile_kernels[a->dtype], combine_kernels[dtype]};
        reduce_partials partials = {1, {partial_dtype}, 1, 0};
        out = release_on_error(out, run_two_pass(&plan, p, a, out, kernels, partials));
    }
    ct_node *node;
    out = ct_record(out, mean ? "MeanBackward" : "SumBackward", mean ? ct_mean_backward : ct_sum_backward,
                    &a, 1, &node);
    if (node) ct_reduce_node_setup(node, plan.reduced, a->ndim, plan.reduced_count);
    return out;
}

ct_tensor *ct_sum(const ct_tensor *a, const int *dims, int ndims, bool keepdim)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_sum(c_[0], dims, ndims, keepdim), a)
    return ct_api_return(sum_or_mean("ct_sum", a, dims, ndims, keepdim, false));
}

ct_tensor *ct_mean(const ct_tensor *a, const int *dims, int ndims, bool keepdim)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_mean(c_[0], dims, ndims, keepdim), a)
    return ct_api_return(sum_or_mean("ct_mean", a, dims, ndims, keepdim, true));
}

/* ---- max and min (torch.amax / torch.amin) ---- */

static ct_tensor *max_or_min(const char *function, const ct_tensor *a, const int *dims, int ndims,
                             bool keepdim, bool is_max)
{
    static const ct_kernel_id max_partial[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(max_partial);
    static const ct_kernel_id max_tile[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(max_tile);
    static const ct_kernel_id max_combine[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(max_combine);
    static const ct_kernel_id min_partial[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(min_partial);
    static const ct_kernel_id min_tile[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(min_tile);
    static const ct_kernel_id min_combine[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(min_combine);
    if (ct_tensor_unusable(function, "a", a)) return NULL;
    reduce_plan plan;
    if (plan_reduction(function, a, dims, ndims, keepdim, &plan) != CT_OK) return NULL;
    if (check_not_empty(function, is_max ? "max" : "min", a, &plan) != CT_OK) return NULL;
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, a->dtype, plan.out_shape, plan.out_ndim);
    if (out && plan.outputs > 0) {
        reduce_kernels kernels = {(is_max ? max_partial : min_partial)[a->dtype],
                                  (is_max ? max_tile : min_tile)[a->dtype],
                                  (is_max ? max_combine : min_combine)[a->dtype]};
        reduce_partials partials = {1, {a->dtype}, 1, 0};
        out = release_on_error(out, run_two_pass(&plan, plan.params, a, out, kernels, partials));
    }
    ct_node *node;
    out = ct_record(out, is_max ? "AmaxBackward" : "AminBackward", ct_max_min_backward, &a, 1, &node);
    if (node) {
        ct_reduce_node_setup(node, plan.reduced, a->ndim, plan.reduced_count);
        if (ct_node_save(node, a) != CT_OK || ct_node_save(node, out) != CT_OK)
            return release_on_error(out, ct_last_error());
    }
    return out;
}

ct_tensor *ct_max(const ct_tensor *a, const int *dims, int ndims, bool keepdim)
{
    CT_API_ENTER;
    return ct_api_return(max_or_min("ct_max", a, dims, ndims, keepdim, true));
}

ct_tensor *ct_min(const ct_tensor *a, const int *dims, int ndims, bool keepdim)
{
    CT_API_ENTER;
    return ct_api_return(max_or_min("ct_min", a, dims, ndims, keepdim, false));
}

/* ---- var and std ---- */

static ct_tensor *var_or_std(const char *function, const ct_tensor *a, const int *dims, int ndims,
                             int64_t correction, bool keepdim, bool is_std)
{
    static const ct_kernel_id partial_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(var_partial);
    static const ct_kernel_id tile_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(var_tile);
    static const ct_kernel_id combine_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(var_combine);
    if (ct_tensor_unusable(function, "a", a)) return NULL;
    if (!ct_dtype_is_floating(a->dtype)) return need_floating(function, is_std ? "std" : "var", a);
    reduce_plan plan;
    if (plan_reduction(function, a, dims, ndims, keepdim, &plan) != CT_OK) return NULL;
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, a->dtype, plan.out_shape, plan.out_ndim);
    /* PyTorch divides by max(0, K - correction): 0 gives inf, or NaN for a zero sum of squares. */
    double divisor = (double)plan.reduced_count - (double)correction;
    divisor = divisor > 0 ? divisor : 0.0;
    if (out && plan.outputs > 0 && plan.reduced_count == 0) {
        out = release_on_error(out, ct_tensor_fill(out, NAN));
    } else if (out && plan.outputs > 0) {
        ct_kparams p = plan.params;
        p.s[0] = divisor;
        p.s[1] = is_std ? 1.0 : 0.0;
        reduce_kernels kernels = {partial_kernels[a->dtype], tile_kernels[a->dtype], combine_kernels[a->dtype]};
        reduce_partials partials = {1, {CT_F64}, 2, 2};
        out = release_on_error(out, run_two_pass(&plan, p, a, out, kernels, partials));
    }
    ct_node *node;
    out = ct_record(out, is_std ? "StdBackward" : "VarBackward", is_std ? ct_std_backward : ct_var_backward,
                    &a, 1, &node);
    if (node) {
        ct_reduce_node_setup(node, plan.reduced, a->ndim, plan.reduced_count);
        node->scalars[1] = divisor;
        if (ct_node_save(node, a) != CT_OK || (is_std && ct_node_save(node, out) != CT_OK))
            return release_on_error(out, ct_last_error());
    }
    return out;
}

ct_tensor *ct_var(const ct_tensor *a, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_var(c_[0], dims, ndims, correction, keepdim), a)
    return ct_api_return(var_or_std("ct_var", a, dims, ndims, correction, keepdim, false));
}

ct_tensor *ct_std(const ct_tensor *a, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_std(c_[0], dims, ndims, correction, keepdim), a)
    return ct_api_return(var_or_std("ct_std", a, dims, ndims, correction, keepdim, true));
}

/* ---- argmax and argmin: partials are (value, index) pairs ---- */

static ct_tensor *arg_extreme(const char *function, const ct_tensor *a, const int *dims, int ndims,
                              bool keepdim, bool is_max)
{
    static const ct_kernel_id argmax_partial[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(argmax_partial);
    static const ct_kernel_id argmax_tile[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(argmax_tile);
    static const ct_kernel_id argmax_combine[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(argmax_combine);
    static const ct_kernel_id argmin_partial[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(argmin_partial);
    static const ct_kernel_id argmin_tile[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(argmin_tile);
    static const ct_kernel_id argmin_combine[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(argmin_combine);
    const char *what = is_max ? "argmax" : "argmin";
    if (ct_tensor_unusable(function, "a", a)) return NULL;
    if (a->dtype == CT_BOOL)
        return ct_error_null(CT_ERR_DTYPE, "%s: %s is not defined for bool (as in PyTorch); "
                             "convert with ct_to_dtype first", function, what);
    reduce_plan plan;
    if (plan_reduction(function, a, dims, ndims, keepdim, &plan) != CT_OK) return NULL;
    if (check_not_empty(function, what, a, &plan) != CT_OK) return NULL;
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, CT_I64, plan.out_shape, plan.out_ndim);
    if (!out || plan.outputs == 0) return out;
    reduce_kernels kernels = {(is_max ? argmax_partial : argmin_partial)[a->dtype],
                              (is_max ? argmax_tile : argmin_tile)[a->dtype],
                              (is_max ? argmax_combine : argmin_combine)[a->dtype]};
    reduce_partials partials = {2, {a->dtype, CT_I64}, 1, 2};
    return release_on_error(out, run_two_pass(&plan, plan.params, a, out, kernels, partials));
}

ct_tensor *ct_argmax(const ct_tensor *a, int dim, bool keepdim)
{
    CT_API_ENTER;
    return ct_api_return(arg_extreme("ct_argmax", a, &dim, 1, keepdim, true));
}

ct_tensor *ct_argmin(const ct_tensor *a, int dim, bool keepdim)
{
    CT_API_ENTER;
    return ct_api_return(arg_extreme("ct_argmin", a, &dim, 1, keepdim, false));
}

ct_tensor *ct_argmax_all(const ct_tensor *a)
{
    CT_API_ENTER;
    return ct_api_return(arg_extreme("ct_argmax_all", a, NULL, 0, false, true));
}

ct_tensor *ct_argmin_all(const ct_tensor *a)
{
    CT_API_ENTER;
    return ct_api_return(arg_extreme("ct_argmin_all", a, NULL, 0, false, false));
}
