/* The batch loader: per-epoch order (in order, or a seeded shuffle from seed + epoch, as
 * PyTorch's DistributedSampler.set_epoch gives, or a distributed sampler's share), batches of batch_size samples, and on an
 * accelerator a prefetch: each batch is gathered into one of two pinned staging buffers and
 * copied to the device without blocking, and the next batch's copy starts before the current
 * batch is handed out, so that it runs while the caller's step does.
 *
 * The copies run on a stream of the loader's own, so that they can overlap the caller's kernels.
 * The caching allocator does not track streams, so a device block the caller freed may still be
 * read by kernels queued on the caller's stream when the loader's copy gets it: every copy
 * therefore first waits (on the device, not the host) for everything queued on the caller's
 * stream so far, and the caller's stream waits for a batch's copy before the batch is handed
 * out. Once warm, nothing is allocated per step: device batches come from the caching
 * allocator's pools and the staging buffers are reused. */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

#define FN_CREATE "ct_data_loader_create"

/* One pinned staging buffer per tensor of a sample, and the batch being copied out of them. */
typedef struct staging_slot {
    ct_tensor *host[CT_DATASET_MAX_TENSORS]; /* pinned, [capacity, <sample shape>] */
    ct_event *copied;          /* the copy out of this slot has finished */
    bool recorded;             /* `copied` marks a copy (reusing the slot must wait for it) */
    bool staged;               /* device[] holds a batch not yet handed out */
    ct_tensor *device[CT_DATASET_MAX_TENSORS]; /* the staged batch */
    int64_t batch;             /* which batch of the epoch that is */
} staging_slot;

struct ct_data_loader {
    ct_dataset *ds; /* a reference of the loader's own */
    int num_tensors;
    int64_t size, batch_size, num_batches;
    bool shuffle, drop_last;
    uint64_t seed;
    ct_device device;
    int64_t *order; /* this epoch's sample order */
    /* with a sampler: its settings (the loader's own copy) and scratch for its permutation */
    bool has_sampler;
    ct_distributed_sampler sampler;
    int64_t *sampler_scratch;
    bool started;
    int64_t next_batch; /* the next batch to hand out */
    /* accelerators only */
    bool prefetch;
    ct_stream *copy_stream;
    ct_event *caller_work; /* the caller's stream up to the start of a copy */
    staging_slot slots[2];
};

ct_data_loader_options ct_data_loader_options_default(void)
{
    ct_data_loader_options options = {.batch_size = 1, .shuffle = false, .seed = 0,
                                      .drop_last = false, .device = CT_DEVICE_CPU, .sampler = NULL};
    return options;
}

int64_t ct_data_loader_num_batches(const ct_data_loader *loader)
{
    if (!loader) return ct_null_argument("ct_data_loader_num_batches", "loader"), -1;
    return loader->num_batches;
}

static int64_t batch_length(const ct_data_loader *loader, int64_t batch)
{
    int64_t rest = loader->size - batch * loader->batch_size;
    return rest < loader->batch_size ? rest : loader->batch_size;
}

/* Copies the samples of `batch` (in this epoch's order) into the contiguous batch tensors
 * out[k] [count, <sample shape>] (default collate: the k-th tensors stacked). */
static ct_status gather(const ct_data_loader *loader, int64_t batch, ct_tensor *const *out)
{
    const ct_dataset *ds = loader->ds;
    const int64_t *samples = loader->order + batch * loader->batch_size;
    int64_t count = batch_length(loader, batch);
    char *bases[CT_DATASET_MAX_TENSORS];
    void *rows[CT_DATASET_MAX_TENSORS];
    for (int k = 0; k < loader->num_tensors; k++) bases[k] = ct_tensor_handle(out[k]);
    for (int64_t i = 0; i < count; i++) {
        for (int k = 0; k < loader->num_tensors; k++) rows[k] = bases[k] + (size_t)i * ds->sample_bytes[k];
        ct_status status = ct_dataset_read_sample(ds, samples[i], rows, "ct_data_loader_next");
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* ---- staging and the queued copies (accelerators) ---- */

/* Drops a staged batch that will not be handed out, once its copy is done (its device blocks go
 * back to the pool, where the next user must not race the copy). */
static void drop_staged(staging_slot *slot)
{
    if (!slot->staged) return;
    if (slot->recorded) ct_event_synchronize(slot->copied);
    for (int k = 0; k < CT_DATASET_MAX_TENSORS; k++) {
        ct_release(slot->device[k]);
        slot->device[k] = NULL;
    }
    slot->staged = false;
}

/* The first `count` rows of a staging tensor: itself when it is whole, else a view. */
static ct_tensor *rows_of(ct_tensor *staging, int64_t count)
{
    if (staging->shape[0] == count) return ct_retain(staging);
    return ct_narrow(staging, 0, 0, count);
}

/* Is a queued copy still reading the slot's buffers? A queued copy holds a reference to its
 * source's storage until it has finished, so a storage held by its tensor alone is free (this
 * spares the host a wait, and the transfer counters a sync, on every step). */
static bool staging_busy(const staging_slot *slot, int num_tensors)
{
    for (int k = 0; k < num_tensors; k++)
        if (atomic_load(&slot->host[k]->storage->refcount) > 1) return true;
    return false;
}

/* Starts the copy of `batch` to the device through slot batch % 2. */
static ct_status stage(ct_data_loader *loader, int64_t batch)
{
    staging_slot *slot = &loader->slots[batch % 2];
    drop_staged(slot);
    /* The slot's previous copy (two batches ago) must have read the buffer before it is refilled. */
    if (slot->recorded && staging_busy(slot, loader->num_tensors) && ct_event_synchronize(slot->copied) != CT_OK)
        return ct_last_error();
    int64_t count = batch_length(loader, batch);
    if (gather(loader, batch, slot->host) != CT_OK) return ct_last_error();

    ct_device device = loader->device;
    if (ct_event_record(loader->caller_work, NULL) != CT_OK ||
        ct_stream_wait_event(loader->copy_stream, loader->caller_work) != CT_OK)
        return ct_last_error();
    ct_stream *caller_stream = ct_current_stream(device);
    ct_set_stream(loader->copy_stream);
    ct_to_options options = ct_to_options_default(device);
    options.non_blocking = true;
    ct_tensor *copies[CT_DATASET_MAX_TENSORS] = {0};
    bool copied_all = true;
    for (int k = 0; k < loader->num_tensors && copied_all; k++) {
        ct_tensor *rows = rows_of(slot->host[k], count);
        copies[k] = rows ? ct_to_with(rows, &options) : NULL;
        ct_release(rows);
        copied_all = copies[k] != NULL;
    }
    ct_status status = copied_all ? ct_event_record(slot->copied, loader->copy_stream) : ct_last_error();
    if (caller_stream) ct_set_stream(caller_stream);
    else ct_set_default_stream(device);
    slot->recorded = slot->recorded || status == CT_OK;
    if (status != CT_OK) {
        /* a copy may be queued: wait for the stream before its blocks can be reused */
        ct_stream_synchronize(loader->copy_stream);
        for (int k = 0; k < loader->num_tensors; k++) ct_release(copies[k]);
        return status;
    }
    memcpy(slot->device, copies, sizeof copies);
    slot->staged = true;
    slot->batch = batch;
    return CT_OK;
}

/* Hands out the staged `batch` (staging it first when it is not) and starts the next copy. */
static ct_status next_prefetched(ct_data_loader *loader, int64_t batch, ct_tensor **out)
{
    staging_slot *slot = &loader->slots[batch % 2];
    if ((!slot->staged || slot->batch != batch) && stage(loader, batch) != CT_OK) return ct_last_error();
    /* Work the caller queues from now on sees the batch. */
    if (ct_stream_wait_event(NULL, slot->copied) != CT_OK) return ct_last_error();
    for (int k = 0; k < loader->num_tensors; k++) {
        out[k] = slot->device[k];
        slot->device[k] = NULL;
    }
    slot->staged = false;
    if (batch + 1 < loader->num_batches && stage(loader, batch + 1) != CT_OK) {
        for (int k = 0; k < loader->num_tensors; k++) {
            ct_release(out[k]);
            out[k] = NULL;
        }
        return ct_last_error();
    }
    return CT_OK;
}

/* ---- the CPU: plain tensors, gathered when asked for ---- */

/* A contiguous tensor [rows, <sample shape of tensor k>] on the CPU, pinned or not. */
static ct_tensor *batch_tensor(const ct_data_loader *loader, int k, int64_t rows, bool pinned)
{
    const ct_sample_spec *spec = &loader->ds->samples[k];
    int64_t shape[CT_MAX_DIMS];
    shape[0] = rows;
    memcpy(shape + 1, spec->shape, sizeof *shape * (size_t)spec->ndim);
    return pinned ? ct_empty_pinned(shape, spec->ndim + 1, spec->dtype)
                  : ct_tensor_alloc("ct_data_loader_next", loader->device, spec->dtype, shape, spec->ndim + 1);
}

static ct_status next_on_cpu(ct_data_loader *loader, int64_t batch, ct_tensor **out)
{
    int64_t count = batch_length(loader, batch);
    ct_status status = CT_OK;
    for (int k = 0; k < loader->num_tensors && status == CT_OK; k++) {
        out[k] = batch_tensor(loader, k, count, false);
        if (!out[k]) status = ct_last_error();
    }
    if (status == CT_OK) status = gather(loader, batch, out);
    if (status != CT_OK)
        for (int k = 0; k < loader->num_tensors; k++) {
            ct_release(out[k]);
            out[k] = NULL;
        }
    return status;
}

/* ---- epochs ---- */

static ct_status start_epoch(ct_data_loader *loader, int64_t epoch)
{
    if (epoch < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_data_loader_start_epoch: epoch is %lld; it "
                        "must be >= 0", (long long)epoch);
    for (int s = 0; s < 2; s++) drop_staged(&loader->slots[s]);
    if (loader->has_sampler) {
        loader->sampler.epoch = epoch;
        ct_distributed_sampler_fill(&loader->sampler, loader->order, loader->sampler_scratch);
    } else if (loader->shuffle) {
        ct_data_permutation(loader->size, loader->seed + (uint64_t)epoch, loader->order);
    } else {
        for (int64_t i = 0; i < loader->size; i++) loader->order[i] = i;
    }
    loader->started = true;
    loader->next_batch = 0;
    return CT_OK;
}

ct_status ct_data_loader_start_epoch(ct_data_loader *loader, int64_t epoch)
{
    if (!loader) return ct_null_argument("ct_data_loader_start_epoch", "loader"), ct_last_error();
    ct_api_enter();
    ct_status status = start_epoch(loader, epoch);
    ct_api_return(NULL);
    return status;
}

static ct_status next_batch(ct_data_loader *loader, ct_tensor **out)
{
    if (!loader->started && start_epoch(loader, 0) != CT_OK) return ct_last_error();
    if (loader->next_batch >= loader->num_batches) return CT_END_OF_DATA;
    int64_t batch = loader->next_batch;
    ct_status status = loader->prefetch ? next_prefetched(loader, batch, out) : next_on_cpu(loader, batch, out);
    if (status == CT_OK) loader->next_batch++;
    return status;
}

/* The batch into out[0..count) (count checked), recorded in the caller's scope. */
static ct_status hand_out(ct_data_loader *loader, ct_tensor **out, int count)
{
    ct_tensor *made[CT_DATASET_MAX_TENSORS] = {0};
    ct_api_enter();
    ct_status status = next_batch(loader, made);
    ct_api_return(NULL);
    if (status != CT_OK) return status;
    /* Recorded in the caller's scope like the result of any public call. */
    for (int k = 0; k < count; k++) {
        ct_api_enter();
        out[k] = ct_api_return(made[k]);
    }
    return CT_OK;
}

ct_status ct_data_loader_next_batch(ct_data_loader *loader, ct_tensor **out, int count)
{
    static const char *FN = "ct_data_loader_next_batch";
    if (!out) return ct_null_argument(FN, "out"), ct_last_error();
    for (int k = 0; k < count && k < CT_DATASET_MAX_TENSORS; k++) out[k] = NULL;
    if (!loader) return ct_null_argument(FN, "loader"), ct_last_error();
    if (count != loader->num_tensors)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: count is %d but the dataset's samples have %d tensors", FN,
                        count, loader->num_tensors);
    return hand_out(loader, out, count);
}

ct_status ct_data_loader_next(ct_data_loader *loader, ct_tensor **x, ct_tensor **y)
{
    static const char *FN = "ct_data_loader_next";
    if (x) *x = NULL;
    if (y) *y = NULL;
    if (!loader) return ct_null_argument(FN, "loader"), ct_last_error();
    if (!x) return ct_null_argument(FN, "x"), ct_last_error();
    if (!y) return ct_null_argument(FN, "y"), ct_last_error();
    if (loader->num_tensors != 2)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the dataset's samples have %d tensors; this shortcut "
                        "hands out two (x, y): use ct_data_loader_next_batch", FN, loader->num_tensors);
    ct_tensor *out[2] = {NULL, NULL};
    ct_status status = hand_out(loader, out, 2);
    *x = out[0];
    *y = out[1];
    return status;
}

/* ---- creation ---- */

static ct_status check_options(const ct_dataset *ds, const ct_data_loader_options *options,
                               ct_device *device)
{
    if (!ds) return ct_null_argument(FN_CREATE, "ds"), ct_last_error();
    if (options->batch_size < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": batch_size is %lld; it must be a "
                        "positive integer", (long long)options->batch_size);
    if (options->sampler && options->shuffle)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": shuffle and a sampler both set; the sampler "
                        "decides the order (set its shuffle option), so shuffle must be false");
    if (options->sampler && options->sampler->dataset_size != ds->size)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": the sampler is for %lld samples but the "
                        "dataset has %lld", (long long)options->sampler->dataset_size, (long long)ds->size);
    return ct_device_resolve(options->device, device);
}

static ct_status prepare_prefetch(ct_data_loader *loader)
{
    int64_t capacity = loader->size < loader->batch_size ? loader->size : loader->batch_size;
    loader->prefetch = true;
    loader->copy_stream = ct_stream_create(loader->device);
    loader->caller_work = loader->copy_stream ? ct_event_create(loader->device) : NULL;
    if (!loader->caller_work) return ct_last_error();
    for (int s = 0; s < 2; s++) {
        staging_slot *slot = &loader->slots[s];
        for (int k = 0; k < loader->num_tensors; k++)
            if (!(slot->host[k] = batch_tensor(loader, k, capacity, true))) return ct_last_error();
        slot->copied = ct_event_create(loader->device);
        if (!slot->copied) return ct_last_error();
    }
    return CT_OK;
}

static void destroy(ct_data_loader *loader)
{
    for (int s = 0; s < 2; s++) {
        staging_slot *slot = &loader->slots[s];
        drop_staged(slot);
        if (slot->recorded) ct_event_synchronize(slot->copied);
        ct_event_destroy(slot->copied);
        for (int k = 0; k < CT_DATASET_MAX_TENSORS; k++) ct_release(slot->host[k]);
    }
    ct_event_destroy(loader->caller_work);
    ct_stream_destroy(loader->copy_stream);
    ct_dataset_free(loader->ds);
    free(loader->order);
    free(loader->sampler_scratch);
    free(loader);
}

static ct_data_loader *create(const ct_dataset *ds, const ct_data_loader_options *options)
{
    ct_data_loader_options defaults = ct_data_loader_options_default();
    if (!options) options = &defaults;
    ct_device device;
    if (check_options(ds, options, &device) != CT_OK) return NULL;
    /* Samples per epoch: the dataset's, or the sampler's share of it. */
    int64_t size = options->sampler ? options->sampler->num_samples : ds->size;
    ct_data_loader *loader = calloc(1, sizeof *loader);
    int64_t *order = loader ? malloc((size_t)(size ? size : 1) * sizeof *order) : NULL;
    int64_t *scratch = order && options->sampler
                           ? malloc((size_t)(ds->size ? ds->size : 1) * sizeof *scratch) : NULL;
    if (!order || (options->sampler && !scratch)) {
        free(order);
        free(loader);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, FN_CREATE ": no host memory for a loader of %lld "
                             "samples", (long long)ds->size);
    }
    loader->order = order;
    loader->sampler_scratch = scratch;
    if (options->sampler) {
        loader->has_sampler = true;
        loader->sampler = *options->sampler;
    }
    loader->ds = ct_dataset_retain(ds);
    loader->num_tensors = ds->num_tensors;
    loader->size = size;
    loader->batch_size = options->batch_size;
    loader->shuffle = options->shuffle;
    loader->drop_last = options->drop_last;
    loader->seed = options->seed;
    loader->device = device;
    loader->num_batches = options->drop_last ? size / options->batch_size
                                             : (size + options->batch_size - 1) / options->batch_size;
    if (device.type != CT_CPU && prepare_prefetch(loader) != CT_OK) {
        destroy(loader);
        return NULL;
    }
    return loader;
}

ct_data_loader *ct_data_loader_create(const ct_dataset *ds, const ct_data_loader_options *options)
{
    ct_api_enter();
    ct_data_loader *loader = create(ds, options);
    ct_api_return(NULL);
    return loader;
}

void ct_data_loader_destroy(ct_data_loader *loader)
{
    if (!loader) return;
    ct_api_enter();
    destroy(loader);
    ct_api_return(NULL);
}

void ct_data_loader_free(ct_data_loader *loader) { ct_data_loader_destroy(loader); }
