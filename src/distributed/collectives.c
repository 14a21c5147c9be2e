/* The collectives' front end, the same for every device: check the arguments, make every rank
 * agree on what is being done (agreement.c), hand the backend of the tensors' device type
 * contiguous host buffers (the tensors' own memory when they are contiguous CPU tensors, the
 * pinned staging buffer otherwise), and copy results back into tensors that were staged.
 *
 * A rank whose arguments are wrong still takes part in the agreement, with its error, so that the
 * other ranks return that error too instead of waiting for it. */
#include <string.h>

#include "distributed/dist_internal.h"

const ct_dist_backend *ct_dist_backend_for(ct_device_type type)
{
    /* MPI carries every device's tensors through host memory. With NCCL built in, CUDA tensors
     * would go to an NCCL backend here, under the same public calls. */
    (void)type;
    return &ct_dist_mpi_backend;
}

const char *ct_dist_backend_name(ct_device_type type)
{
    if ((int)type < 0 || type >= CT_DEVICE_TYPE_COUNT) return NULL;
    return ct_dist_backend_for(type)->name;
}

/* ---- host buffers ---- */

/* A tensor's elements as the backend takes them: its own memory, or a staging view. */
typedef struct host_buffer {
    void *data;        /* NULL when there are no elements */
    ct_tensor *staged; /* the staging view, NULL when data is the tensor's own memory */
} host_buffer;

/* Sets b up for t; copy_in: the backend reads t's values (not only writes them). */
static ct_status host_buffer_of(ct_dist_group *group, const char *function, const ct_tensor *t,
                                bool copy_in, host_buffer *b)
{
    if (ct_numel(t) == 0) return CT_OK;
    b->data = ct_dist_host_data(t);
    if (b->data) return CT_OK;
    b->staged = ct_dist_staging_view(group, function, t->dtype, t->shape, t->ndim);
    if (!b->staged) return ct_last_error();
    b->data = ct_tensor_handle(b->staged);
    return copy_in ? ct_copy_(b->staged, t) : CT_OK;
}

/* Copies a staged result into `into` (NULL: nothing to copy back) and drops the staging view. */
static ct_status host_buffer_finish(host_buffer *b, ct_tensor *into, ct_status status)
{
    if (status == CT_OK && b->staged && into) status = ct_copy_(into, b->staged);
    ct_release(b->staged);
    b->staged = NULL;
    return status;
}

/* A contiguous view of count elements of the contiguous tensor base, from element `skip`, with
 * the given shape and base's dtype. */
static ct_tensor *contiguous_part(const ct_tensor *base, int64_t skip, const int64_t *shape, int ndim)
{
    int64_t strides[CT_MAX_DIMS];
    ct_contiguous_strides(shape, ndim, strides);
    return ct_tensor_view_of(base, ndim, shape, strides, base->offset + skip);
}

/* ---- checks ---- */

static ct_status check_op(const char *function, ct_reduce_op op, const ct_tensor *t)
{
    if ((int)op < CT_REDUCE_SUM || op > CT_REDUCE_MIN)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: op is %d; use CT_REDUCE_SUM, CT_REDUCE_AVG, "
                        "CT_REDUCE_MAX or CT_REDUCE_MIN", function, (int)op);
    if (op == CT_REDUCE_AVG && t->dtype == CT_BOOL)
        return ct_error(CT_ERR_DTYPE, "%s: a bool tensor has no average; use CT_REDUCE_MAX (or), "
                        "CT_REDUCE_MIN (and), or convert it to a number type first", function);
    return CT_OK;
}

static ct_status check_pair(const char *function, const ct_tensor *output, const ct_tensor *input)
{
    if (!output) return ct_null_argument(function, "output"), ct_last_error();
    if (!input) return ct_null_argument(function, "input"), ct_last_error();
    if (output->dtype != input->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: output is %s and input %s; they must have the same dtype",
                        function, ct_dtype_name(output->dtype), ct_dtype_name(input->dtype));
    return CT_OK;
}

static ct_status check_output_shape(const char *function, const ct_tensor *output, const int64_t *shape,
                                    int ndim, const ct_tensor *input, int world)
{
    if (output->ndim == ndim && memcmp(output->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0) return CT_OK;
    char a[256], b[256], c[256];
    return ct_error(CT_ERR_SHAPE, "%s: output has shape %s; with input %s on %d ranks it must be %s",
                    function, ct_shape_format(output->shape, output->ndim, a, sizeof a),
                    ct_shape_format(input->shape, input->ndim, b, sizeof b), world,
                    ct_shape_format(shape, ndim, c, sizeof c));
}

static ct_status check_block(const char *function, const ct_dist_backend *backend, int64_t count)
{
    if (count <= backend->max_block_count) return CT_OK;
    return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: each rank's part has %lld elements; the %s backend "
                    "takes at most %lld: split the tensor", function, (long long)count, backend->name,
                    (long long)backend->max_block_count);
}

/* ---- the collectives ---- */

ct_status ct_dist_barrier(void)
{
    ct_dist_group *group = ct_dist_collective_begin("ct_dist_barrier");
    if (!group) return ct_last_error();
    /* The agreement is itself an all-reduce: no rank leaves it before every rank has entered. */
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_BARRIER, -1, -1, NULL);
    ct_status status = ct_dist_agree(group, &d);
    ct_dist_collective_end(group);
    return status;
}

ct_status ct_dist_all_reduce(ct_tensor *t, ct_reduce_op op)
{
    static const char *FN = "ct_dist_all_reduce";
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    ct_api_enter();
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_ALL_REDUCE, (int)op, -1, t);
    host_buffer b = {0};
    if (!t) d.status = (ct_null_argument(FN, "t"), ct_last_error());
    else d.status = check_op(FN, op, t);
    if (d.status == CT_OK) d.status = host_buffer_of(group, FN, t, true, &b);
    ct_status status = ct_dist_agree(group, &d);
    if (status == CT_OK && b.data)
        status = ct_dist_backend_for(t->storage->device.type)->all_reduce(b.data, ct_numel(t), t->dtype, op);
    status = host_buffer_finish(&b, t, status);
    ct_api_return(NULL);
    ct_dist_collective_end(group);
    return status;
}

ct_status ct_dist_broadcast(ct_tensor *t, int root)
{
    static const char *FN = "ct_dist_broadcast";
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    ct_api_enter();
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_BROADCAST, -1, root, t);
    host_buffer b = {0};
    bool is_root = group->rank == root;
    if (!t) {
        d.status = (ct_null_argument(FN, "t"), ct_last_error());
    } else if (root < 0 || root >= group->world_size) {
        d.status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: root is %d; ranks go from 0 to %d", FN, root,
                            group->world_size - 1);
    } else {
        d.status = host_buffer_of(group, FN, t, is_root, &b);
    }
    ct_status status = ct_dist_agree(group, &d);
    if (status == CT_OK && b.data)
        status = ct_dist_backend_for(t->storage->device.type)->broadcast(b.data, ct_numel(t), t->dtype, root);
    status = host_buffer_finish(&b, is_root ? NULL : t, status);
    ct_api_return(NULL);
    ct_dist_collective_end(group);
    return status;
}

/* Output [world * d0, d1, ...] from input [d0, d1, ...] ([world] from a 0-dim input). */
static int gathered_shape(const ct_tensor *input, int world, int64_t *shape)
{
    if (input->ndim == 0) {
        shape[0] = world;
        return 1;
    }
    for (int i = 0; i < input->ndim; i++) shape[i] = input->shape[i];
    shape[0] *= world;
    return input->ndim;
}

static ct_status check_all_gather(const char *function, const ct_dist_group *group, const ct_tensor *output,
                                  const ct_tensor *input, const ct_dist_backend **backend)
{
    if (check_pair(function, output, input) != CT_OK) return ct_last_error();
    int64_t shape[CT_MAX_DIMS];
    int ndim = gathered_shape(input, group->world_size, shape);
    if (check_output_shape(function, output, shape, ndim, input, group->world_size) != CT_OK)
        return ct_last_error();
    *backend = ct_dist_backend_for(output->storage->device.type);
    return check_block(function, *backend, ct_numel(input));
}

ct_status ct_dist_all_gather(ct_tensor *output, const ct_tensor *input)
{
    static const char *FN = "ct_dist_all_gather";
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    ct_api_enter();
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_ALL_GATHER, -1, -1, input);
    host_buffer b = {0};
    const ct_dist_backend *backend = NULL;
    d.status = check_all_gather(FN, group, output, input, &backend);
    if (d.status == CT_OK) d.status = host_buffer_of(group, FN, output, false, &b);
    int64_t count = input ? ct_numel(input) : 0;
    if (d.status == CT_OK && b.data) {
        /* This rank's contribution goes into its own block, and MPI gathers in place: input may
         * then be that block of output itself. */
        const ct_tensor *gathered = b.staged ? b.staged : output;
        ct_tensor *block = contiguous_part(gathered, (int64_t)group->rank * count, input->shape, input->ndim);
        d.status = block ? ct_copy_(block, input) : ct_last_error();
        ct_release(block);
    }
    ct_status status = ct_dist_agree(group, &d);
    if (status == CT_OK && b.data) status = backend->all_gather(CT_DIST_IN_PLACE, b.data, count, input->dtype);
    status = host_buffer_finish(&b, output, status);
    ct_api_return(NULL);
    ct_dist_collective_end(group);
    return status;
}

static ct_status check_reduce_scatter(const char *function, const ct_dist_group *group, const ct_tensor *output,
                                      const ct_tensor *input, ct_reduce_op op, const ct_dist_backend **backend)
{
    if (check_pair(function, output, input) != CT_OK || check_op(function, op, input) != CT_OK)
        return ct_last_error();
    char text[256];
    if (input->ndim == 0 || input->shape[0] % group->world_size != 0)
        return ct_error(CT_ERR_SHAPE, "%s: input has shape %s; its dim 0 must be a multiple of the world "
                        "size %d, so that each rank gets an equal slice", function,
                        ct_shape_format(input->shape, input->ndim, text, sizeof text), group->world_size);
    int64_t shape[CT_MAX_DIMS];
    for (int i = 0; i < input->ndim; i++) shape[i] = input->shape[i];
    shape[0] /= group->world_size;
    if (check_output_shape(function, output, shape, input->ndim, input, group->world_size) != CT_OK)
        return ct_last_error();
    *backend = ct_dist_backend_for(output->storage->device.type);
    return check_block(function, *backend, ct_numel(output));
}

ct_status ct_dist_reduce_scatter(ct_tensor *output, const ct_tensor *input, ct_reduce_op op)
{
    static const char *FN = "ct_dist_reduce_scatter";
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    ct_api_enter();
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_REDUCE_SCATTER, (int)op, -1, input);
    host_buffer b = {0};
    const ct_dist_backend *backend = NULL;
    d.status = check_reduce_scatter(FN, group, output, input, op, &backend);
    int64_t count = output && d.status == CT_OK ? ct_numel(output) : 0;
    void *send = NULL, *recv = NULL;
    if (count > 0) {
        send = ct_dist_host_data(input);
        recv = ct_dist_host_data(output);
        if (!send || !recv || ct_tensor_shares_storage(input, output)) {
            /* In place in the staging buffer (MPI would overwrite a contiguous CPU input): the
             * input goes in whole, the result is its first slice. */
            b.staged = ct_dist_staging_view(group, FN, input->dtype, input->shape, input->ndim);
            d.status = b.staged ? ct_copy_(b.staged, input) : ct_last_error();
            send = CT_DIST_IN_PLACE;
            recv = b.staged ? ct_tensor_handle(b.staged) : NULL;
        }
    }
    ct_status status = ct_dist_agree(group, &d);
    if (status == CT_OK && count > 0) status = backend->reduce_scatter(send, recv, count, input->dtype, op);
    if (status == CT_OK && b.staged) {
        ct_tensor *result = contiguous_part(b.staged, 0, output->shape, output->ndim);
        status = result ? ct_copy_(output, result) : ct_last_error();
        ct_release(result);
    }
    host_buffer_finish(&b, NULL, status);
    ct_api_return(NULL);
    ct_dist_collective_end(group);
    return status;
}
