/* DDP's reducer: parameters' gradients grouped into buckets (in reverse order of registration,
 * about the order backward produces them), each averaged over the ranks by one started
 * all-reduce as soon as its last gradient is ready, while backward goes on; a callback at the
 * end of backward starts what is left, waits for every bucket and makes each parameter's .grad
 * a view of its bucket (PyTorch's Reducer, with gradient_as_bucket_view).
 * Buckets start strictly in their order, on every rank, so the ranks' all-reduces match even
 * when backward makes gradients ready in another order on one of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/ddp_internal.h"

/* ---- the buckets ---- */

static void buckets_free(ct_ddp_reducer *r)
{
    for (int b = 0; b < r->bucket_count; b++) {
        ct_ddp_bucket *bucket = &r->buckets[b];
        ct_dist_work_wait(bucket->work);
        for (int i = 0; i < bucket->count; i++) ct_release(bucket->views[i]);
        free(bucket->views);
        ct_release(bucket->flat);
        ct_release(bucket->host);
    }
    free(r->buckets);
    r->buckets = NULL;
    r->bucket_count = 0;
    r->built = false;
}

/* Assigns parameters to buckets: walking them last to first, each dtype fills its own open
 * bucket until it holds the cap (the first bucket closes at CT_DDP_FIRST_BUCKET_BYTES). */
static ct_status assign_buckets(ct_ddp_reducer *r)
{
    r->buckets = calloc((size_t)r->param_count, sizeof *r->buckets);
    if (!r->buckets) return ct_error(CT_ERR_OUT_OF_MEMORY, "DistributedDataParallel: no host memory");
    int open[CT_DTYPE_COUNT];
    size_t open_bytes[CT_DTYPE_COUNT];
    for (int d = 0; d < CT_DTYPE_COUNT; d++) open[d] = -1;
    /* Per step k of the walk (parameter param_count - 1 - k): the bucket it opened into; per
     * bucket: its number, in the order buckets close, which every rank computes alike. */
    int *scratch = malloc(2 * sizeof *scratch * (size_t)r->param_count);
    if (!scratch) return ct_error(CT_ERR_OUT_OF_MEMORY, "DistributedDataParallel: no host memory");
    int *member_bucket = scratch, *close_rank = scratch + r->param_count;
    int opened = 0, closed = 0;
    for (int k = 0; k < r->param_count; k++) {
        int p = r->param_count - 1 - k;
        ct_dtype dtype = r->params[p]->dtype;
        if (open[dtype] < 0) {
            open[dtype] = opened++;
            open_bytes[dtype] = 0;
            close_rank[open[dtype]] = -1;
        }
        member_bucket[k] = open[dtype];
        open_bytes[dtype] += (size_t)ct_numel(r->params[p]) * ct_dtype_size(dtype);
        size_t cap = closed == 0 ? (r->bucket_cap_bytes < CT_DDP_FIRST_BUCKET_BYTES ? r->bucket_cap_bytes
                                                                                   : CT_DDP_FIRST_BUCKET_BYTES)
                                 : r->bucket_cap_bytes;
        if (open_bytes[dtype] >= cap) {
            close_rank[open[dtype]] = closed++;
            open[dtype] = -1;
        }
    }
    for (int b = 0; b < opened; b++)
        if (close_rank[b] < 0) close_rank[b] = closed++;
    /* Lay the parameters out bucket by bucket, each bucket's in the walk's order. */
    r->bucket_count = opened;
    int at = 0;
    for (int b = 0; b < opened; b++) {
        ct_ddp_bucket *bucket = &r->buckets[b];
        bucket->first = at;
        for (int k = 0; k < r->param_count; k++) {
            if (close_rank[member_bucket[k]] != b) continue;
            int p = r->param_count - 1 - k;
            r->order[at++] = p;
            r->bucket_of[p] = b;
            r->view_of[p] = bucket->count++;
            bucket->dtype = r->params[p]->dtype;
            bucket->numel += ct_numel(r->params[p]);
        }
    }
    free(scratch);
    return CT_OK;
}

static ct_status allocate_bucket(ct_ddp_reducer *r, ct_ddp_bucket *bucket)
{
    static const char *FN = "DistributedDataParallel";
    int64_t size[1] = {bucket->numel};
    bucket->flat = ct_tensor_alloc(FN, r->device, bucket->dtype, size, 1);
    if (!bucket->flat) return ct_last_error();
    /* A device backend (NCCL) reduces flat where it lives. For MPI the bucket keeps its own pinned
     * copy, made once, rather than the per-call pinned copy of ct_dist_all_reduce_async. */
    if (r->device.type != CT_CPU && !ct_dist_backend_for(r->device.type)->device_memory) {
        bucket->host = ct_tensor_alloc_pinned(FN, bucket->dtype, size, 1);
        if (!bucket->host) return ct_last_error();
    }
    bucket->views = calloc((size_t)bucket->count, sizeof *bucket->views);
    if (!bucket->views) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", FN);
    int64_t offset = 0;
    for (int i = 0; i < bucket->count; i++) {
        const ct_tensor *p = r->params[r->order[bucket->first + i]];
        int64_t strides[CT_MAX_DIMS];
        ct_contiguous_strides(p->shape, p->ndim, strides);
        bucket->views[i] = ct_tensor_view_of(bucket->flat, p->ndim, p->shape, strides, offset);
        if (!bucket->views[i]) return ct_last_error();
        offset += ct_numel(p);
    }
    return CT_OK;
}

static ct_status build_buckets(ct_ddp_reducer *r)
{
    buckets_free(r);
    r->device = r->params[0]->storage->device;
    for (int p = 0; p < r->param_count; p++) {
        const ct_tensor *t = r->params[p];
        if (!ct_device_equal(t->storage->device, r->device)) {
            char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX];
            return ct_error(CT_ERR_DEVICE, "DistributedDataParallel: parameter '%s' is on %s but '%s' is on "
                            "%s; a replica lives on one device: move the module with ct_module_to", r->names[p],
                            ct_device_format(t->storage->device, a, sizeof a), r->names[0],
                            ct_device_format(r->device, b, sizeof b));
        }
    }
    ct_status status = assign_buckets(r);
    for (int b = 0; b < r->bucket_count && status == CT_OK; b++) status = allocate_bucket(r, &r->buckets[b]);
    if (status != CT_OK) {
        buckets_free(r);
        return status;
    }
    r->built = true;
    r->overlap = r->all_reduce_start == CT_DDP_START_DURING_BACKWARD ||
                 (r->all_reduce_start == CT_DDP_START_AUTO && r->device.type != CT_CPU);
    r->stats.bucket_count = r->bucket_count;
    r->stats.gradient_bytes = 0;
    for (int b = 0; b < r->bucket_count; b++)
        r->stats.gradient_bytes += r->buckets[b].numel * (int64_t)ct_dtype_size(r->buckets[b].dtype);
    return CT_OK;
}

/* Has a parameter moved, or changed dtype or size, since its slot was laid out? */
static bool layout_changed(const ct_ddp_reducer *r)
{
    if (!r->built) return true;
    for (int p = 0; p < r->param_count; p++) {
        const ct_tensor *t = r->params[p];
        const ct_ddp_bucket *bucket = &r->buckets[r->bucket_of[p]];
        if (!ct_device_equal(t->storage->device, r->device) || t->dtype != bucket->dtype ||
            ct_numel(t) != ct_numel(bucket->views[r->view_of[p]]))
            return true;
    }
    return false;
}

/* ---- one backward ---- */

static void reset_backward(ct_ddp_reducer *r)
{
    r->armed = false;
    r->finalize_queued = false;
    r->next_to_launch = 0;
    for (int p = 0; p < r->param_count; p++) r->ready[p] = r->used[p] = false;
    for (int b = 0; b < r->bucket_count; b++) {
        r->buckets[b].pending = r->buckets[b].count;
        r->buckets[b].launched = false;
    }
}

ct_status ct_ddp_reducer_prepare(ct_ddp_reducer *r, bool sync)
{
    bool arm = sync && r->param_count > 0;
    ct_status status = arm && layout_changed(r) ? build_buckets(r) : CT_OK;
    /* A forward whose backward never ran leaves nothing started: buckets start in backward. */
    reset_backward(r);
    r->armed = arm && status == CT_OK;
    return status;
}

/* Starts the bucket's all-reduce (the average over the ranks). */
static ct_status launch(ct_ddp_bucket *bucket)
{
    if (bucket->host) {
        ct_api_enter();
        ct_status status = ct_copy_(bucket->host, bucket->flat);
        ct_api_return(NULL);
        if (status != CT_OK) return status;
    }
    bucket->work = ct_dist_all_reduce_async(bucket->host ? bucket->host : bucket->flat, CT_REDUCE_AVG);
    bucket->launched = bucket->work != NULL;
    return bucket->work ? CT_OK : ct_last_error();
}

/* Starts every bucket that is ready and whose predecessors have started. */
static ct_status launch_ready_buckets(ct_ddp_reducer *r)
{
    while (r->next_to_launch < r->bucket_count && r->buckets[r->next_to_launch].pending == 0) {
        ct_status status = launch(&r->buckets[r->next_to_launch++]);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* Puts parameter p's gradient (zeros when it has none) into its bucket. */
static ct_status fill_slot(ct_ddp_reducer *r, int p)
{
    ct_ddp_bucket *bucket = &r->buckets[r->bucket_of[p]];
    ct_tensor *view = bucket->views[r->view_of[p]];
    const ct_tensor *grad = r->params[p]->grad;
    r->ready[p] = true;
    bucket->pending--;
    if (!grad) return ct_tensor_fill(view, 0.0);
    r->used[p] = true;
    if (grad == view) return CT_OK; /* last step's average, untouched since */
    if (!ct_device_equal(grad->storage->device, r->device)) {
        char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX];
        return ct_error(CT_ERR_DEVICE, "DistributedDataParallel: the gradient of '%s' is on %s but the "
                        "parameter is on %s", r->names[p], ct_device_format(grad->storage->device, a, sizeof a),
                        ct_device_format(r->device, b, sizeof b));
    }
    return ct_tensor_copy_into(view, grad);
}

static ct_status finalize(void *context, ct_status backward_status);

static ct_status on_gradient_ready(ct_tensor *leaf, void *context)
{
    (void)leaf;
    const ct_ddp_param_hook *hook = context;
    ct_ddp_reducer *r = hook->reducer;
    int p = hook->index;
    if (!r->armed) return CT_OK; /* no_sync, or no forward through the wrapper: accumulate only */
    if (r->ready[p]) return CT_OK;
    if (!r->finalize_queued) {
        ct_status status = ct_autograd_queue_callback(finalize, r);
        if (status != CT_OK) return status;
        r->finalize_queued = true;
    }
    ct_api_enter();
    ct_status status = fill_slot(r, p);
    if (status == CT_OK && r->overlap) status = launch_ready_buckets(r);
    ct_api_return(NULL);
    return status;
}

/* Waits for every started bucket (in order) and copies device buckets' results back. */
static ct_status wait_for_buckets(ct_ddp_reducer *r, double *communication)
{
    ct_status status = CT_OK;
    *communication = 0;
    for (int b = 0; b < r->bucket_count; b++) {
        ct_ddp_bucket *bucket = &r->buckets[b];
        if (!bucket->launched) continue;
        double seconds = 0;
        ct_status own = ct_dist_work_wait_timed(bucket->work, &seconds);
        bucket->work = NULL;
        *communication += seconds;
        if (own == CT_OK && bucket->host) own = ct_copy_(bucket->flat, bucket->host);
        if (status == CT_OK) status = own;
    }
    return status;
}

/* The names of the parameters this rank used no gradient for, into text. */
static void list_unused(const ct_ddp_reducer *r, char *text, size_t size)
{
    size_t at = 0;
    int listed = 0;
    text[0] = '\0';
    for (int p = 0; p < r->param_count && at < size; p++) {
        if (r->used[p]) continue;
        int n = listed < 8 ? snprintf(text + at, size - at, "%s'%s'", listed ? ", " : "", r->names[p])
                           : listed == 8 ? snprintf(text + at, size - at, ", ...") : 0;
        if (n > 0) at += (size_t)n;
        listed++;
    }
}

/* With find_unused_parameters: which parameters some rank used (a max over the ranks). */
static ct_status used_anywhere(ct_ddp_reducer *r, bool *out)
{
    int64_t size[1] = {r->param_count};
    ct_tensor *flags = ct_tensor_alloc("DistributedDataParallel", CT_DEVICE_CPU, CT_I32, size, 1);
    if (!flags) return ct_last_error();
    int32_t *values = ct_tensor_handle(flags);
    for (int p = 0; p < r->param_count; p++) values[p] = r->used[p];
    ct_status status = ct_dist_all_reduce(flags, CT_REDUCE_MAX);
    for (int p = 0; p < r->param_count && status == CT_OK; p++) out[p] = values[p] != 0;
    ct_release(flags);
    return status;
}

/* After a failure on this rank (error, whose message is the thread's last): waits for the buckets
 * it started; the other ranks may have started the others and wait in them, so this rank takes
 * part in each, in order, with its error, and they fail with it instead of waiting. The thread's
 * last error is this rank's again after. */
static void let_go_after_failure(ct_ddp_reducer *r, ct_status error)
{
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error_message());
    double ignored;
    wait_for_buckets(r, &ignored);
    for (int b = 0; b < r->bucket_count; b++) {
        if (r->buckets[b].launched) continue;
        ct_error(error, "%s", message);
        ct_dist_abstain("DistributedDataParallel", CT_DIST_ALL_REDUCE, CT_REDUCE_AVG);
    }
    ct_error(error, "%s", message);
}

static ct_status finalize_after_success(ct_ddp_reducer *r)
{
    int rank = ct_dist_group_state.rank;
    double start = ct_dist_seconds();
    /* Parameters backward did not reach count as zeros, so every bucket starts on every rank. */
    bool some_unused = false;
    ct_status status = CT_OK;
    for (int p = 0; p < r->param_count && status == CT_OK; p++) {
        if (!r->ready[p]) status = fill_slot(r, p);
        if (!r->used[p]) some_unused = true;
    }
    if (status == CT_OK) status = launch_ready_buckets(r);
    if (status != CT_OK) {
        let_go_after_failure(r, status);
        return status;
    }
    double communication = 0;
    status = wait_for_buckets(r, &communication);
    bool *anywhere = NULL;
    if (status == CT_OK && r->find_unused_parameters) {
        anywhere = malloc(sizeof *anywhere * (size_t)r->param_count);
        status = anywhere ? used_anywhere(r, anywhere)
                          : ct_error(CT_ERR_OUT_OF_MEMORY, "DistributedDataParallel: no host memory");
    }
    r->stats.last_wait_seconds = ct_dist_seconds() - start;
    r->stats.last_communication_seconds = communication;
    if (status == CT_OK && some_unused && !r->find_unused_parameters) {
        char names[512];
        list_unused(r, names, sizeof names);
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "DistributedDataParallel: on rank %d, parameters got no "
                          "gradient in this backward: %s; every parameter must take part in the loss, or set "
                          "find_unused_parameters in ct_ddp_options (the gradients of this step are not to be "
                          "used)", rank, names);
    }
    for (int p = 0; p < r->param_count && status == CT_OK; p++) {
        if (anywhere && !anywhere[p]) continue; /* no rank used it: its .grad stays as it was */
        ct_tensor *view = r->buckets[r->bucket_of[p]].views[r->view_of[p]];
        ct_tensor *param = r->params[p];
        if (param->grad == view) continue;
        atomic_fetch_add(&view->refcount, 1);
        ct_release(param->grad);
        param->grad = view;
    }
    free(anywhere);
    if (status == CT_OK) r->stats.syncs++;
    return status;
}

static ct_status finalize(void *context, ct_status backward_status)
{
    ct_ddp_reducer *r = context;
    ct_status status;
    ct_api_enter();
    if (backward_status == CT_OK) {
        status = finalize_after_success(r);
    } else {
        /* The backward's own error is what the caller sees, and what the others get. */
        let_go_after_failure(r, ct_last_error() != CT_OK ? ct_last_error() : backward_status);
        status = CT_OK;
    }
    ct_api_return(NULL);
    reset_backward(r);
    return status;
}

/* ---- making and freeing ---- */

void ct_ddp_reducer_free(ct_ddp_reducer *r)
{
    if (!r) return;
    for (int p = 0; p < r->param_count; p++) {
        if (r->params[p]) ct_remove_post_accumulate_grad_hook(r->params[p], on_gradient_ready, &r->hooks[p]);
        ct_release(r->params[p]);
        free(r->names ? r->names[p] : NULL);
    }
    buckets_free(r);
    free(r->params);
    free(r->names);
    free(r->hooks);
    free(r->order);
    free(r->bucket_of);
    free(r->view_of);
    free(r->ready);
    free(r->used);
    free(r);
}

ct_ddp_reducer *ct_ddp_reducer_create(ct_tensor *const *params, char *const *names, int count,
                                      size_t bucket_cap_bytes, bool find_unused_parameters,
                                      ct_ddp_all_reduce_start all_reduce_start)
{
    ct_ddp_reducer *r = calloc(1, sizeof *r);
    if (!r) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "DistributedDataParallel: no host memory");
    size_t n = (size_t)(count > 0 ? count : 1);
    r->bucket_cap_bytes = bucket_cap_bytes;
    r->find_unused_parameters = find_unused_parameters;
    r->all_reduce_start = all_reduce_start;
    r->params = calloc(n, sizeof *r->params);
    r->names = calloc(n, sizeof *r->names);
    r->hooks = calloc(n, sizeof *r->hooks);
    r->order = calloc(n, sizeof *r->order);
    r->bucket_of = calloc(n, sizeof *r->bucket_of);
    r->view_of = calloc(n, sizeof *r->view_of);
    r->ready = calloc(n, sizeof *r->ready);
    r->used = calloc(n, sizeof *r->used);
    if (!r->params || !r->names || !r->hooks || !r->order || !r->bucket_of || !r->view_of || !r->ready ||
        !r->used) {
        ct_ddp_reducer_free(r);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "DistributedDataParallel: no host memory");
    }
    r->stats.parameter_count = count;
    /* param_count counts the parameters whose hook is on, so that a failure frees just those. */
    for (int p = 0; p < count; p++) {
        char *name = strdup(names[p]);
        if (!name) {
            ct_ddp_reducer_free(r);
            return ct_error_null(CT_ERR_OUT_OF_MEMORY, "DistributedDataParallel: no host memory");
        }
        r->hooks[p] = (ct_ddp_param_hook){r, p};
        if (ct_register_post_accumulate_grad_hook(params[p], on_gradient_ready, &r->hooks[p]) != CT_OK) {
            free(name);
            ct_ddp_reducer_free(r);
            return NULL;
        }
        r->names[p] = name;
        r->params[p] = params[p];
        atomic_fetch_add(&params[p]->refcount, 1);
        r->param_count = p + 1;
    }
    return r;
}
