/* The collectives' front end, the same for every device: check the arguments, make every rank
 * agree on what is being done (agreement.c), and hand the bytes to a backend: NCCL takes CUDA
 * tensors' device memory as it is when every rank's tensors can go to it; otherwise MPI gets
 * contiguous host buffers (the tensors' own memory when they are contiguous CPU tensors, the
 * pinned staging buffer otherwise), and results are copied back into tensors that were staged.
 *
 * A rank whose arguments are wrong still takes part in the agreement, with its error, so that the
 * other ranks return that error too instead of waiting for it. */
#include <string.h>

#include "distributed/dist_internal.h"

static const ct_dist_backend *installed_for_testing[CT_DEVICE_TYPE_COUNT];

void ct_dist_backend_install_for_testing(ct_device_type type, const ct_dist_backend *backend)
{
    installed_for_testing[type] = backend;
}

const ct_dist_backend *ct_dist_backend_for(ct_device_type type)
{
    if ((int)type >= 0 && type < CT_DEVICE_TYPE_COUNT && installed_for_testing[type]) return installed_for_testing[type];
    /* NCCL when it is built in and usable here (which logs why not, once, when it is not). */
    if (type == CT_CUDA && ct_dist_nccl_usable(NULL, 0)) {
#ifdef CTORCH_HAVE_NCCL
        return &ct_dist_nccl_backend;
#endif
    }
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

/* ---- the device path ---- */

/* The device backend that can take t (and other, when not NULL) on this rank as they are: on one
 * device that the backend accepts, contiguous, and apart unless may_share. NULL: through MPI. */
static const ct_dist_backend *direct_backend(const ct_tensor *t, const ct_tensor *other, bool may_share)
{
    ct_device device = t->storage->device;
    if (device.type == CT_CPU) return NULL;
    const ct_dist_backend *backend = ct_dist_backend_for(device.type);
    if (!backend->device_memory || !ct_is_contiguous(t) || !backend->accepts(device)) return NULL;
    if (other && (!ct_device_equal(other->storage->device, device) || !ct_is_contiguous(other) ||
                  (!may_share && ct_tensor_shares_storage(t, other))))
        return NULL;
    return backend;
}

/* Puts a collective's tensors into host buffers for MPI (its ctx is the collective's own). */
typedef ct_status (*stage_fn)(void *ctx);

/* Agrees (ct_dist_agree_direct) and settles the path every rank takes. *direct, this rank's
 * device backend or NULL, stays set only when every rank asked for the device path and the
 * backend's communicator is there (prepare, itself collective); otherwise it becomes NULL, and a
 * rank that had asked for the device path stages with stage(ctx) now and every rank agrees once
 * more, so that a failure while staging is every rank's error rather than a hang. */
static ct_status agree_on_path(ct_dist_group *group, ct_dist_descriptor *d, const ct_dist_backend **direct,
                               ct_device device, stage_fn stage, void *ctx)
{
    bool asked = *direct != NULL, all_direct = false, any_direct = false;
    d->direct = asked;
    ct_status status = ct_dist_agree_direct(group, d, &all_direct, &any_direct);
    if (status != CT_OK || !any_direct) {
        *direct = NULL;
        return status;
    }
    if (all_direct) {
        status = (*direct)->prepare(device);
        if (status != CT_ERR_UNAVAILABLE) return status; /* the same on every rank */
    }
    *direct = NULL;
    d->direct = false;
    d->status = asked ? stage(ctx) : CT_OK;
    return ct_dist_agree(group, d);
}

/* The staging of all_reduce and broadcast: t's elements into a host buffer. */
typedef struct stage_tensor {
    ct_dist_group *group;
    const char *function;
    const ct_tensor *t;
    bool copy_in;
    host_buffer *b;
} stage_tensor;

static ct_status stage_tensor_run(void *ctx)
{
    stage_tensor *s = ctx;
    return host_buffer_of(s->group, s->function, s->t, s->copy_in, s->b);
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
    const ct_dist_backend *direct = NULL;
    stage_tensor stage = {group, FN, t, true, &b};
    if (!t) d.status = (ct_null_argument(FN, "t"), ct_last_error());
    else d.status = check_op(FN, op, t);
    if (d.status == CT_OK) direct = direct_backend(t, NULL, false);
    if (d.status == CT_OK && !direct) d.status = stage_tensor_run(&stage);
    ct_status status = agree_on_path(group, &d, &direct, t ? t->storage->device : CT_DEVICE_CPU,
                                     stage_tensor_run, &stage);
    if (status == CT_OK && direct && ct_numel(t) > 0)
        status = direct->all_reduce(direct->data_of(t), ct_numel(t), t->dtype, op);
    else if (status == CT_OK && b.data)
        status = ct_dist_mpi_backend.all_reduce(b.data, ct_numel(t), t->dtype, op);
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
    const ct_dist_backend *direct = NULL;
    stage_tensor stage = {group, FN, t, is_root, &b};
    if (!t) {
        d.status = (ct_null_argument(FN, "t"), ct_last_error());
    } else if (root < 0 || root >= group->world_size) {
        d.status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: root is %d; ranks go from 0 to %d", FN, root,
                            group->world_size - 1);
    } else {
        direct = direct_backend(t, NULL, false);
        if (!direct) d.status = stage_tensor_run(&stage);
    }
    ct_status status = agree_on_path(group, &d, &direct, t ? t->storage->device : CT_DEVICE_CPU,
                                     stage_tensor_run, &stage);
    if (status == CT_OK && direct && ct_numel(t) > 0)
        status = direct->broadcast(direct->data_of(t), ct_numel(t), t->dtype, root);
    else if (status == CT_OK && b.data)
        status = ct_dist_mpi_backend.broadcast(b.data, ct_numel(t), t->dtype, root);
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

/* The block-size limit is MPI's: a collective may always end up going through MPI. */
static ct_status check_all_gather(const char *function, const ct_dist_group *group, const ct_tensor *output,
                                  const ct_tensor *input)
{
    if (check_pair(function, output, input) != CT_OK) return ct_last_error();
    int64_t shape[CT_MAX_DIMS];
    int ndim = gathered_shape(input, group->world_size, shape);
    if (check_output_shape(function, output, shape, ndim, input, group->world_size) != CT_OK)
        return ct_last_error();
    return check_block(function, &ct_dist_mpi_backend, ct_numel(input));
}

/* This rank's contribution goes into its own block of gathered (output or its staging), and the
 * backends gather in place: input may then be that block of output itself. */
static ct_status place_own_block(const ct_tensor *gathered, int rank, const ct_tensor *input)
{
    int64_t count = ct_numel(input);
    ct_tensor *block = contiguous_part(gathered, (int64_t)rank * count, input->shape, input->ndim);
    ct_status status = block ? ct_copy_(block, input) : ct_last_error();
    ct_release(block);
    return status;
}

typedef struct stage_gather {
    ct_dist_group *group;
    const char *function;
    ct_tensor *output;
    const ct_tensor *input;
    host_buffer *b;
} stage_gather;

static ct_status stage_gather_run(void *ctx)
{
    stage_gather *s = ctx;
    ct_status status = host_buffer_of(s->group, s->function, s->output, false, s->b);
    if (status != CT_OK || !s->b->data) return status;
    return place_own_block(s->b->staged ? s->b->staged : s->output, s->group->rank, s->input);
}

ct_status ct_dist_all_gather(ct_tensor *output, const ct_tensor *input)
{
    static const char *FN = "ct_dist_all_gather";
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    ct_api_enter();
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_ALL_GATHER, -1, -1, input);
    host_buffer b = {0};
    const ct_dist_backend *direct = NULL;
    stage_gather stage = {group, FN, output, input, &b};
    d.status = check_all_gather(FN, group, output, input);
    if (d.status == CT_OK) direct = direct_backend(output, input, true);
    if (d.status == CT_OK && direct && ct_numel(output) > 0) d.status = place_own_block(output, group->rank, input);
    else if (d.status == CT_OK && !direct) d.status = stage_gather_run(&stage);
    int64_t count = input ? ct_numel(input) : 0;
    ct_status status = agree_on_path(group, &d, &direct, output ? output->storage->device : CT_DEVICE_CPU,
                                     stage_gather_run, &stage);
    if (status == CT_OK && direct && count > 0)
        status = direct->all_gather(CT_DIST_IN_PLACE, direct->data_of(output), count, input->dtype);
    else if (status == CT_OK && b.data)
        status = ct_dist_mpi_backend.all_gather(CT_DIST_IN_PLACE, b.data, count, input->dtype);
    status = host_buffer_finish(&b, output, status);
    ct_api_return(NULL);
    ct_dist_collective_end(group);
    return status;
}

static ct_status check_reduce_scatter(const char *function, const ct_dist_group *group, const ct_tensor *output,
                                      const ct_tensor *input, ct_reduce_op op)
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
    return check_block(function, &ct_dist_mpi_backend, ct_numel(output));
}

typedef struct stage_scatter {
    ct_dist_group *group;
    const char *function;
    ct_tensor *output;
    const ct_tensor *input;
    host_buffer *b;
    void *send, *recv;
} stage_scatter;

static ct_status stage_scatter_run(void *ctx)
{
    stage_scatter *s = ctx;
    s->send = ct_dist_host_data(s->input);
    s->recv = ct_dist_host_data(s->output);
    if (s->send && s->recv && !ct_tensor_shares_storage(s->input, s->output)) return CT_OK;
    /* In place in the staging buffer (MPI would overwrite a contiguous CPU input): the input goes
     * in whole, the result is its first slice. */
    s->b->staged = ct_dist_staging_view(s->group, s->function, s->input->dtype, s->input->shape, s->input->ndim);
    s->send = CT_DIST_IN_PLACE;
    s->recv = s->b->staged ? ct_tensor_handle(s->b->staged) : NULL;
    return s->b->staged ? ct_copy_(s->b->staged, s->input) : ct_last_error();
}

ct_status ct_dist_reduce_scatter(ct_tensor *output, const ct_tensor *input, ct_reduce_op op)
{
    static const char *FN = "ct_dist_reduce_scatter";
    ct_dist_group *group = ct_dist_collective_begin(FN);
    if (!group) return ct_last_error();
    ct_api_enter();
    ct_dist_descriptor d = ct_dist_describe(CT_DIST_REDUCE_SCATTER, (int)op, -1, input);
    host_buffer b = {0};
    const ct_dist_backend *direct = NULL;
    stage_scatter stage = {group, FN, output, input, &b, NULL, NULL};
    d.status = check_reduce_scatter(FN, group, output, input, op);
    int64_t count = output && d.status == CT_OK ? ct_numel(output) : 0;
    if (count > 0) {
        direct = direct_backend(output, input, false);
        if (!direct) d.status = stage_scatter_run(&stage);
    }
    ct_status status = agree_on_path(group, &d, &direct, output ? output->storage->device : CT_DEVICE_CPU,
                                     stage_scatter_run, &stage);
    if (status == CT_OK && direct)
        status = direct->reduce_scatter(direct->data_of(input), direct->data_of(output), count, input->dtype, op);
    else if (status == CT_OK && count > 0)
        status = ct_dist_mpi_backend.reduce_scatter(stage.send, stage.recv, count, input->dtype, op);
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
