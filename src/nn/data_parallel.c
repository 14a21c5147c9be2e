/* DataParallel (include/ctorch/parallel.h): the wrapper module. Its forward scatters the batch,
 * refreshes the replicas, runs one thread per device and gathers the outputs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/stream.h"
#include "nn/data_parallel_internal.h"

#define DP_MESSAGE_MAX 1024

/* What one thread runs: its replica on its chunk, in the caller's context. */
typedef struct worker {
    ct_device device;
    ct_module *module;          /* the wrapped module (device 0) or a replica (borrowed) */
    ct_tensor *chunk;           /* its rows of the input, where the input is */
    const struct data_parallel *dp;
    bool grad_enabled;          /* the caller's grad mode */
    ct_tensor *output;          /* the replica's output, on its device */
    bool made_a_row;            /* of a 0-d output */
    ct_status status;
    char message[DP_MESSAGE_MAX];
} worker;

typedef struct data_parallel {
    int count;
    ct_device devices[CT_DP_MAX_DEVICES];
    ct_device output_device;
    ct_dp_plan plan;
    ct_dp_source source;                       /* on devices[0] */
    ct_dp_replica replicas[CT_DP_MAX_DEVICES]; /* [0] unused: devices[0] runs the wrapped module */
    worker workers[CT_DP_MAX_DEVICES];
    bool warned_of_scalars;
    /* The caller's current streams, taken by the workers, for these devices. */
    int stream_count;
    ct_device stream_devices[CT_DP_MAX_DEVICES + 2];
    ct_stream *streams[CT_DP_MAX_DEVICES + 2];
} data_parallel;

static void data_parallel_free(void *data)
{
    data_parallel *dp = data;
    for (int i = 0; i < dp->count; i++) ct_dp_replica_free(&dp->replicas[i]);
    ct_dp_source_free(&dp->source);
    ct_dp_plan_free(&dp->plan);
    free(dp);
}

/* ---- checks ---- */

typedef struct placement {
    ct_device main;
    char name[512];
    ct_device found;
} placement;

static ct_status find_misplaced(ct_module *m, const char *prefix, void *context)
{
    placement *p = context;
    for (int kind = 0; kind < 2; kind++) {
        const ct_tensor_slots *slots = kind == 0 ? &m->parameters : &m->buffers;
        for (int i = 0; i < slots->count; i++)
            if (!ct_device_equal(slots->tensors[i]->storage->device, p->main)) {
                snprintf(p->name, sizeof p->name, "%s%s", prefix, slots->names[i]);
                p->found = slots->tensors[i]->storage->device;
                return CT_ERR_DEVICE;
            }
    }
    return CT_OK;
}

/* PyTorch's rule: the module's parameters and buffers are on devices[0]. */
static ct_status check_module_placement(const data_parallel *dp, const ct_module *module)
{
    placement p = {.main = dp->devices[0]};
    ct_status status = ct_module_visit(module, find_misplaced, &p);
    if (status != CT_ERR_DEVICE) return status;
    char main[CT_DEVICE_STRING_MAX], found[CT_DEVICE_STRING_MAX];
    ct_device_format(p.main, main, sizeof main);
    return ct_error(CT_ERR_DEVICE, "DataParallel: the module must have its parameters and buffers "
                    "on device %s (devices[0]) but '%s' is on %s; move the module with "
                    "ct_module_to(module, %s)", main, p.name,
                    ct_device_format(p.found, found, sizeof found), main);
}

/* ---- the threads ---- */

static void adopt_caller_context(const worker *w)
{
    const data_parallel *dp = w->dp;
    for (int i = 0; i < dp->stream_count; i++)
        if (dp->streams[i]) ct_set_stream(dp->streams[i]);
    ct_set_grad_enabled(w->grad_enabled);
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    adopt_caller_context(w);
    ct_status status = ct_set_device(w->device);
    ct_tensor *input = status == CT_OK ? ct_to(w->chunk, w->device) : NULL;
    if (input) w->output = ct_module_forward(w->module, input);
    ct_release(input);
    if (!w->output) {
        bool reported = ct_last_error() != CT_OK;
        w->status = reported ? ct_last_error() : CT_ERR_INVALID_ARGUMENT;
        snprintf(w->message, sizeof w->message, "%s", reported ? ct_last_error_message()
                 : "the module's forward returned NULL without an error");
    } else if (w->output->ndim == 0) {
        /* A scalar per replica is gathered as one row each (PyTorch warns and does the same). */
        ct_tensor *row = ct_unsqueeze(w->output, 0);
        ct_release(w->output);
        w->output = row;
        w->made_a_row = true;
        if (!row) {
            w->status = ct_last_error();
            snprintf(w->message, sizeof w->message, "%s", ct_last_error_message());
        }
    }
    return NULL;
}

/* Notes the caller's current stream of device (once per device). */
static void note_stream(data_parallel *dp, ct_device device)
{
    for (int i = 0; i < dp->stream_count; i++)
        if (ct_device_equal(dp->stream_devices[i], device)) return;
    dp->stream_devices[dp->stream_count] = device;
    dp->streams[dp->stream_count++] = ct_current_stream(device);
}

/* Runs workers[0..parts) on threads of their own and waits for all of them. */
static ct_status run_threads(data_parallel *dp, int parts)
{
    pthread_t threads[CT_DP_MAX_DEVICES];
    int started = 0;
    ct_status status = CT_OK;
    for (; started < parts; started++)
        if (pthread_create(&threads[started], NULL, run_worker, &dp->workers[started]) != 0) {
            status = ct_error(CT_ERR_BACKEND, "DataParallel: could not start a thread for %d of "
                              "%d replicas", started + 1, parts);
            break;
        }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    if (status != CT_OK) return status;
    if (dp->workers[0].made_a_row && !dp->warned_of_scalars) {
        dp->warned_of_scalars = true;
        ct_log_message(CT_LOG_WARN, "DataParallel: the replicas' outputs are scalars; they are "
                       "gathered as a vector of one value per replica (as PyTorch does)");
    }
    for (int i = 0; i < parts; i++) {
        const worker *w = &dp->workers[i];
        if (w->status == CT_OK) continue;
        char name[CT_DEVICE_STRING_MAX];
        return ct_error(w->status, "DataParallel: replica %d on %s: %s", i,
                        ct_device_format(w->device, name, sizeof name), w->message);
    }
    return CT_OK;
}

/* ---- the forward ---- */

/* One chunk: the wrapped module on devices[0], in the calling thread (as PyTorch does with a
 * single device), at the caller's API depth so that a custom forward's results behave as when
 * it is called directly. */
static ct_tensor *forward_whole(data_parallel *dp, ct_module *module, const ct_tensor *x)
{
    ct_device_guard guard;
    if (ct_device_guard_enter(&guard, dp->devices[0]) != CT_OK) return NULL;
    ct_api_enter();
    ct_tensor *input = ct_to(x, dp->devices[0]);
    ct_api_return(NULL);
    ct_tensor *y = input ? ct_module_forward(module, input) : NULL;
    ct_device_guard_exit(&guard);
    CT_API_ENTER;
    ct_release(input);
    ct_tensor *out = y ? ct_to(y, dp->output_device) : NULL;
    out = ct_api_return(out);
    ct_release(y); /* at the caller's depth: forgets y's record in the caller's scope, if any */
    return out;
}

/* Several chunks: replicas on threads, outputs gathered. Everything here is ctorch's own work
 * (the user's forwards run on the workers), so it runs inside the API. */
static ct_tensor *forward_parallel(data_parallel *dp, ct_module *module, ct_tensor **chunks, int parts)
{
    ct_status status = ct_dp_plan_update(&dp->plan, module);
    if (status == CT_OK) status = ct_dp_source_refresh(&dp->source, &dp->plan);
    for (int i = 1; status == CT_OK && i < parts; i++) {
        status = ct_dp_replica_build(&dp->replicas[i], &dp->plan);
        if (status == CT_OK) status = ct_dp_replica_broadcast(&dp->replicas[i], &dp->plan, &dp->source);
    }
    dp->stream_count = 0;
    for (int i = 0; i < parts; i++) note_stream(dp, dp->devices[i]);
    note_stream(dp, chunks[0]->storage->device);
    note_stream(dp, dp->output_device);
    bool grad_enabled = ct_is_grad_enabled();
    for (int i = 0; i < parts; i++)
        dp->workers[i] = (worker){.device = dp->devices[i], .module = i == 0 ? module : dp->replicas[i].module,
                                  .chunk = chunks[i], .dp = dp, .grad_enabled = grad_enabled};
    if (status == CT_OK) status = run_threads(dp, parts);
    for (int i = 1; i < parts; i++) ct_dp_replica_reset(&dp->replicas[i], &dp->plan);
    ct_tensor *outputs[CT_DP_MAX_DEVICES];
    for (int i = 0; i < parts; i++) outputs[i] = dp->workers[i].output;
    ct_tensor *out = status == CT_OK ? ct_dp_gather("DataParallel", outputs, parts, dp->output_device) : NULL;
    for (int i = 0; i < parts; i++) {
        ct_release(dp->workers[i].output);
        dp->workers[i].output = NULL;
    }
    return out;
}

static ct_tensor *data_parallel_forward(ct_module *self, const ct_tensor *x)
{
    data_parallel *dp = self->data;
    ct_module *module = self->child_count > 0 ? self->children[0] : NULL;
    if (!module) return ct_error_null(CT_ERR_INTERNAL, "DataParallel: the wrapped module is missing");
    if (x->ndim == 0)
        return ct_error_null(CT_ERR_SHAPE, "DataParallel: the input is 0-d; it needs a batch dim "
                             "(dim 0) to scatter over the devices");
    if (check_module_placement(dp, module) != CT_OK) return NULL;
    /* torch.chunk's sizes: ceil(N / count) rows each; fewer parts than devices when N is small. */
    int64_t rows = x->shape[0];
    int64_t per_part = rows > 0 ? (rows + dp->count - 1) / dp->count : 0;
    int parts = per_part > 0 ? (int)((rows + per_part - 1) / per_part) : 1;
    if (parts == 1) return forward_whole(dp, module, x);
    CT_API_ENTER;
    ct_tensor *chunks[CT_DP_MAX_DEVICES];
    int made = 0;
    ct_status status = ct_chunk(x, dp->count, 0, chunks, CT_DP_MAX_DEVICES, &made);
    ct_tensor *out = NULL;
    if (status == CT_OK && made != parts)
        status = ct_error(CT_ERR_INTERNAL, "DataParallel: %lld rows made %d chunks, expected %d",
                          (long long)rows, made, parts);
    if (status == CT_OK) out = forward_parallel(dp, module, chunks, parts);
    for (int i = 0; i < made; i++) ct_release(chunks[i]);
    return ct_api_return(out);
}

/* ---- making the wrapper ---- */

static ct_status check_devices(const char *function, data_parallel *dp, const ct_device *devices,
                               int count, ct_device output_device)
{
    if (count < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: count is %d; give the number of devices (0 for "
                        "every device of output_device's type)", function, count);
    if (count > CT_DP_MAX_DEVICES)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %d devices; DataParallel runs on at most %d",
                        function, count, CT_DP_MAX_DEVICES);
    if (count > 0 && !devices) return ct_null_argument(function, "devices"), ct_last_error();
    if (count == 0) {
        if (output_device.type < 0 || output_device.type >= CT_DEVICE_TYPE_COUNT)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: output_device has no device type", function);
        int visible = ct_device_count(output_device.type);
        if (visible <= 0)
            return ct_error(CT_ERR_UNAVAILABLE, "%s: the device list is empty: no devices were given "
                            "and there is no %s device here (%s)", function,
                            ct_device_type_name(output_device.type),
                            ct_backend_unavailable_reason(output_device.type));
        count = visible < CT_DP_MAX_DEVICES ? visible : CT_DP_MAX_DEVICES;
        for (int i = 0; i < count; i++) dp->devices[i] = (ct_device){output_device.type, i};
    } else {
        for (int i = 0; i < count; i++) {
            ct_status status = ct_device_resolve(devices[i], &dp->devices[i]);
            if (status != CT_OK) {
                char reason[512];
                snprintf(reason, sizeof reason, "%s", ct_last_error_message());
                return ct_error(status, "%s: devices[%d]: %s", function, i, reason);
            }
        }
    }
    char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX];
    for (int i = 1; i < count; i++) {
        if (dp->devices[i].type != dp->devices[0].type)
            return ct_error(CT_ERR_DEVICE, "%s: the devices must be of one type, but devices[0] is %s "
                            "and devices[%d] is %s", function,
                            ct_device_format(dp->devices[0], a, sizeof a), i,
                            ct_device_format(dp->devices[i], b, sizeof b));
        for (int j = 0; j < i; j++)
            if (ct_device_equal(dp->devices[i], dp->devices[j]))
                return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s is listed twice (devices[%d] and "
                                "devices[%d]); list each device once", function,
                                ct_device_format(dp->devices[i], a, sizeof a), j, i);
    }
    dp->count = count;
    dp->source.device = dp->devices[0];
    for (int i = 0; i < count; i++) dp->replicas[i].device = dp->devices[i];
    if (output_device.index < 0 && output_device.type == dp->devices[0].type) {
        dp->output_device = dp->devices[0];
        return CT_OK;
    }
    ct_status status = ct_device_resolve(output_device, &dp->output_device);
    if (status != CT_OK) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", ct_last_error_message());
        return ct_error(status, "%s: output_device: %s", function, reason);
    }
    return CT_OK;
}

ct_module *ct_data_parallel(ct_module *module, const ct_device *devices, int count, ct_device output_device)
{
    const char *function = "ct_data_parallel";
    if (!module) return ct_null_argument(function, "module");
    data_parallel *dp = calloc(1, sizeof *dp);
    if (!dp) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    if (check_devices(function, dp, devices, count, output_device) != CT_OK) {
        free(dp);
        return NULL;
    }
    return ct_module_wrap("DataParallel", data_parallel_forward, dp, data_parallel_free, module);
}

const ct_tensor *ct_dp_replica_tensor(const ct_module *wrapper, int device_index, const char *name)
{
    if (!wrapper || wrapper->forward != data_parallel_forward) return NULL;
    const data_parallel *dp = wrapper->data;
    if (device_index < 1 || device_index >= dp->count || !dp->replicas[device_index].module) return NULL;
    const ct_module *replica = dp->replicas[device_index].module;
    ct_tensor *t = ct_module_parameter(replica, name);
    if (!t) {
        ct_clear_error();
        t = ct_module_buffer(replica, name);
    }
    if (!t) {
        ct_clear_error();
        return NULL;
    }
    ct_release(t); /* the replica keeps its own reference */
    return t;
}
