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

/* One pinned staging buffer and the batch being copied out of it. */
typedef struct staging_slot {
    ct_tensor *x, *y;          /* pinned, [capacity, F] and [capacity] */
    ct_event *copied;          /* the copy out of this slot has finished */
    bool recorded;             /* `copied` marks a copy (reusing the slot must wait for it) */
    ct_tensor *device_x, *device_y; /* the staged batch, not yet handed out (NULL: none) */
    int64_t batch;             /* which batch of the epoch that is */
} staging_slot;

struct ct_data_loader {
    ct_tensor *features, *labels; /* the dataset's (CPU, contiguous) */
    int64_t size, num_features, batch_size, num_batches;
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

/* Copies the samples of `batch` (in this epoch's order) into contiguous x [count, F], y [count]. */
static void gather(const ct_data_loader *loader, int64_t batch, float *x, int64_t *y)
{
    const float *features = (const float *)ct_tensor_handle(loader->features) + loader->features->offset;
    const int64_t *labels = (const int64_t *)ct_tensor_handle(loader->labels) + loader->labels->offset;
    const int64_t *samples = loader->order + batch * loader->batch_size;
    int64_t count = batch_length(loader, batch);
    size_t row = (size_t)loader->num_features;
    for (int64_t i = 0; i < count; i++) {
        if (row) memcpy(x + (size_t)i * row, features + (size_t)samples[i] * row, row * sizeof(float));
        y[i] = labels[samples[i]];
    }
}

/* ---- staging and the queued copies (accelerators) ---- */

/* Drops a staged batch that will not be handed out, once its copy is done (its device blocks go
 * back to the pool, where the next user must not race the copy). */
static void drop_staged(staging_slot *slot)
{
    if (!slot->device_x && !slot->device_y) return;
    if (slot->recorded) ct_event_synchronize(slot->copied);
    ct_release(slot->device_x);
    ct_release(slot->device_y);
    slot->device_x = slot->device_y = NULL;
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
static bool staging_busy(const staging_slot *slot)
{
    return atomic_load(&slot->x->storage->refcount) > 1 || atomic_load(&slot->y->storage->refcount) > 1;
}

/* Starts the copy of `batch` to the device through slot batch % 2. */
static ct_status stage(ct_data_loader *loader, int64_t batch)
{
    staging_slot *slot = &loader->slots[batch % 2];
    drop_staged(slot);
    /* The slot's previous copy (two batches ago) must have read the buffer before it is refilled. */
    if (slot->recorded && staging_busy(slot) && ct_event_synchronize(slot->copied) != CT_OK)
        return ct_last_error();
    int64_t count = batch_length(loader, batch);
    gather(loader, batch, ct_tensor_handle(slot->x), ct_tensor_handle(slot->y));

    ct_device device = loader->device;
    if (ct_event_record(loader->caller_work, NULL) != CT_OK ||
        ct_stream_wait_event(loader->copy_stream, loader->caller_work) != CT_OK)
        return ct_last_error();
    ct_stream *caller_stream = ct_current_stream(device);
    ct_set_stream(loader->copy_stream);
    ct_to_options options = ct_to_options_default(device);
    options.non_blocking = true;
    ct_tensor *x = rows_of(slot->x, count), *y = rows_of(slot->y, count);
    ct_tensor *device_x = x && y ? ct_to_with(x, &options) : NULL;
    ct_tensor *device_y = device_x ? ct_to_with(y, &options) : NULL;
    ct_status status = device_y ? ct_event_record(slot->copied, loader->copy_stream) : ct_last_error();
    if (caller_stream) ct_set_stream(caller_stream);
    else ct_set_default_stream(device);
    ct_release(x);
    ct_release(y);
    slot->recorded = slot->recorded || status == CT_OK;
    if (status != CT_OK) {
        /* a copy may be queued: wait for the stream before its blocks can be reused */
        ct_stream_synchronize(loader->copy_stream);
        ct_release(device_x);
        ct_release(device_y);
        return status;
    }
    slot->device_x = device_x;
    slot->device_y = device_y;
    slot->batch = batch;
    return CT_OK;
}

/* Hands out the staged `batch` (staging it first when it is not) and starts the next copy. */
static ct_status next_prefetched(ct_data_loader *loader, int64_t batch, ct_tensor **x, ct_tensor **y)
{
    staging_slot *slot = &loader->slots[batch % 2];
    if ((!slot->device_x || slot->batch != batch) && stage(loader, batch) != CT_OK) return ct_last_error();
    /* Work the caller queues from now on sees the batch. */
    if (ct_stream_wait_event(NULL, slot->copied) != CT_OK) return ct_last_error();
    *x = slot->device_x;
    *y = slot->device_y;
    slot->device_x = slot->device_y = NULL;
    if (batch + 1 < loader->num_batches && stage(loader, batch + 1) != CT_OK) {
        ct_release(*x);
        ct_release(*y);
        *x = *y = NULL;
        return ct_last_error();
    }
    return CT_OK;
}

/* ---- the CPU: plain tensors, gathered when asked for ---- */

static ct_status next_on_cpu(ct_data_loader *loader, int64_t batch, ct_tensor **x, ct_tensor **y)
{
    int64_t count = batch_length(loader, batch);
    int64_t xshape[2] = {count, loader->num_features}, yshape[1] = {count};
    ct_tensor *bx = ct_tensor_alloc("ct_data_loader_next", loader->device, CT_F32, xshape, 2);
    ct_tensor *by = bx ? ct_tensor_alloc("ct_data_loader_next", loader->device, CT_I64, yshape, 1) : NULL;
    if (!by) {
        ct_release(bx);
        return ct_last_error();
    }
    gather(loader, batch, ct_tensor_handle(bx), ct_tensor_handle(by));
    *x = bx;
    *y = by;
    return CT_OK;
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

static ct_status next_batch(ct_data_loader *loader, ct_tensor **x, ct_tensor **y)
{
    if (!loader->started && start_epoch(loader, 0) != CT_OK) return ct_last_error();
    if (loader->next_batch >= loader->num_batches) return CT_END_OF_DATA;
    int64_t batch = loader->next_batch;
    ct_status status = loader->prefetch ? next_prefetched(loader, batch, x, y)
                                        : next_on_cpu(loader, batch, x, y);
    if (status == CT_OK) loader->next_batch++;
    return status;
}

ct_status ct_data_loader_next(ct_data_loader *loader, ct_tensor **x, ct_tensor **y)
{
    static const char *FN = "ct_data_loader_next";
    if (x) *x = NULL;
    if (y) *y = NULL;
    if (!loader) return ct_null_argument(FN, "loader"), ct_last_error();
    if (!x) return ct_null_argument(FN, "x"), ct_last_error();
    if (!y) return ct_null_argument(FN, "y"), ct_last_error();
    ct_api_enter();
    ct_tensor *bx = NULL, *by = NULL;
    ct_status status = next_batch(loader, &bx, &by);
    ct_api_return(NULL);
    if (status != CT_OK) return status;
    /* Recorded in the caller's scope like the result of any public call. */
    ct_api_enter();
    *x = ct_api_return(bx);
    ct_api_enter();
    *y = ct_api_return(by);
    if (!*x || !*y) {
        ct_release(*x);
        ct_release(*y);
        *x = *y = NULL;
        return ct_last_error();
    }
    return CT_OK;
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
    int64_t xshape[2] = {capacity, loader->num_features}, yshape[1] = {capacity};
    loader->prefetch = true;
    loader->copy_stream = ct_stream_create(loader->device);
    loader->caller_work = loader->copy_stream ? ct_event_create(loader->device) : NULL;
    if (!loader->caller_work) return ct_last_error();
    for (int s = 0; s < 2; s++) {
        staging_slot *slot = &loader->slots[s];
        slot->x = ct_empty_pinned(xshape, 2, CT_F32);
        slot->y = slot->x ? ct_empty_pinned(yshape, 1, CT_I64) : NULL;
        slot->copied = slot->y ? ct_event_create(loader->device) : NULL;
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
        ct_release(slot->x);
        ct_release(slot->y);
    }
    ct_event_destroy(loader->caller_work);
    ct_stream_destroy(loader->copy_stream);
    ct_release(loader->features);
    ct_release(loader->labels);
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
    loader->features = ct_retain(ds->features);
    loader->labels = ct_retain(ds->labels);
    loader->size = size;
    loader->num_features = ds->num_features;
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
