/* DistributedDataParallel (include/ctorch/distributed.h): the wrapper module. Wrapping checks that
 * every rank has the same model and copies rank 0's parameters and buffers to the others; each
 * forward copies rank 0's buffers (in training mode) and arms the reducer, whose hooks average
 * the gradients during the backward that follows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "distributed/ddp_internal.h"
#include "nn/module_internal.h"

static const char *KIND = "DistributedDataParallel";

typedef struct ddp_state {
    ct_ddp_options options;
    ct_ddp_reducer *reducer;
} ddp_state;

static void ddp_state_free(void *data)
{
    ddp_state *state = data;
    ct_ddp_reducer_free(state->reducer);
    free(state);
}

static ct_tensor *ddp_forward(ct_module *self, const ct_tensor *input);

bool ct_is_distributed_data_parallel(const ct_module *m)
{
    if (!m) return ct_null_argument("ct_is_distributed_data_parallel", "m"), false;
    return m->forward == ddp_forward;
}

static ddp_state *state_of(const ct_module *ddp, const char *function)
{
    if (!ddp) return ct_null_argument(function, "ddp");
    if (!ct_is_distributed_data_parallel(ddp))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a DistributedDataParallel "
                             "wrapper (ct_distributed_data_parallel)", function, ct_module_kind(ddp));
    return ddp->data;
}

/* Every buffer of the wrapped module takes rank 0's value. */
static ct_status broadcast_tensors(const ct_named_tensors *list)
{
    for (int64_t i = 0; i < list->count; i++) {
        ct_status status = ct_dist_broadcast(list->tensors[i], 0);
        if (status != CT_OK) {
            char reason[768];
            snprintf(reason, sizeof reason, "%s", ct_last_error_message());
            return ct_error(status, "%s: copying '%s' from rank 0: %s", KIND, list->names[i], reason);
        }
    }
    return CT_OK;
}

static ct_tensor *ddp_forward(ct_module *self, const ct_tensor *input)
{
    ddp_state *state = self->data;
    ct_module *module = self->children[0];
    bool grad = ct_is_grad_enabled();
    if (grad && state->options.broadcast_buffers && self->training && ct_dist_group_state.world_size > 1) {
        ct_named_tensors *buffers = ct_module_named_buffers(module);
        if (!buffers) return NULL;
        ct_no_grad_push();
        ct_status status = broadcast_tensors(buffers);
        ct_no_grad_pop();
        ct_named_tensors_free(buffers);
        if (status != CT_OK) return NULL;
    }
    if (ct_ddp_reducer_prepare(state->reducer, grad && state->reducer->no_sync_depth == 0) != CT_OK) return NULL;
    return ct_module_forward(module, input);
}

/* The same model on every rank: as many parameters and buffers, as many elements. The shapes are
 * compared one by one by the broadcasts that follow. */
static ct_status check_same_model(const ct_named_tensors *params, const ct_named_tensors *buffers)
{
    int world = ct_dist_group_state.world_size, rank = ct_dist_group_state.rank;
    int64_t mine[3] = {params->count, buffers->count, 0};
    for (int64_t i = 0; i < params->count; i++) mine[2] += ct_numel(params->tensors[i]);
    int64_t size[1] = {3}, all_size[1] = {3 * (int64_t)world};
    ct_tensor *local = ct_tensor_from_data(mine, CT_I64, size, 1, CT_DEVICE_CPU);
    ct_tensor *all = ct_empty(all_size, 1, CT_I64, CT_DEVICE_CPU);
    ct_status status = local && all ? ct_dist_all_gather(all, local) : ct_last_error();
    int64_t *counts = malloc(sizeof *counts * 3 * (size_t)world);
    if (status == CT_OK && !counts) status = ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", KIND);
    if (status == CT_OK) status = ct_tensor_to_array(all, counts, sizeof *counts * 3 * (size_t)world);
    for (int k = 0; k < world && status == CT_OK; k++) {
        if (counts[3 * k] == mine[0] && counts[3 * k + 1] == mine[1] && counts[3 * k + 2] == mine[2]) continue;
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: every rank must wrap the same model, but rank %d's has "
                          "%lld parameters (%lld elements) and %lld buffers, and rank %d's %lld parameters "
                          "(%lld elements) and %lld buffers", KIND, rank, (long long)mine[0], (long long)mine[2],
                          (long long)mine[1], k, (long long)counts[3 * k], (long long)counts[3 * k + 2],
                          (long long)counts[3 * k + 1]);
    }
    free(counts);
    ct_release(local);
    ct_release(all);
    return status;
}

static ct_status check_options(const ct_ddp_options *o)
{
    if (!(o->bucket_cap_mb > 0) || !isfinite(o->bucket_cap_mb) || o->bucket_cap_mb > 1e6)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_distributed_data_parallel: bucket_cap_mb is %g; give a "
                        "size in MiB above 0 (PyTorch's default is 25)", o->bucket_cap_mb);
    if ((int)o->all_reduce_start < CT_DDP_START_AUTO || o->all_reduce_start > CT_DDP_START_AFTER_BACKWARD)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_distributed_data_parallel: all_reduce_start is %d; use "
                        "CT_DDP_START_AUTO, CT_DDP_START_DURING_BACKWARD or CT_DDP_START_AFTER_BACKWARD",
                        (int)o->all_reduce_start);
    return CT_OK;
}

/* Checks the model against the other ranks', copies rank 0's values, makes the reducer. */
static ct_status set_up(ct_module *module, ddp_state *state)
{
    ct_named_tensors *params = ct_module_named_parameters(module);
    ct_named_tensors *buffers = params ? ct_module_named_buffers(module) : NULL;
    ct_status status = params && buffers ? CT_OK : ct_last_error();
    if (status == CT_OK) status = check_same_model(params, buffers);
    if (status == CT_OK && ct_dist_group_state.world_size > 1) {
        ct_no_grad_push();
        status = broadcast_tensors(params);
        if (status == CT_OK) status = broadcast_tensors(buffers);
        ct_no_grad_pop();
    }
    if (status == CT_OK) {
        size_t cap = (size_t)(state->options.bucket_cap_mb * 1024 * 1024);
        state->reducer = ct_ddp_reducer_create(params->tensors, params->names, (int)params->count,
                                               cap ? cap : 1, state->options.find_unused_parameters,
                                               state->options.all_reduce_start);
        if (!state->reducer) status = ct_last_error();
    }
    ct_named_tensors_free(params);
    ct_named_tensors_free(buffers);
    return status;
}

ct_module *ct_distributed_data_parallel(ct_module *module, const ct_ddp_options *options)
{
    static const char *FN = "ct_distributed_data_parallel";
    if (!module) return ct_null_argument(FN, "module");
    if (!ct_dist_group_get(FN)) return NULL;
    ddp_state *state = calloc(1, sizeof *state);
    if (!state) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", FN);
    state->options = options ? *options : ct_ddp_options_default();
    ct_api_enter();
    ct_status status = check_options(&state->options);
    if (status == CT_OK) status = set_up(module, state);
    ct_api_return(NULL);
    if (status != CT_OK) {
        ddp_state_free(state);
        return NULL;
    }
    return ct_module_wrap(KIND, ddp_forward, state, ddp_state_free, module);
}

ct_status ct_ddp_no_sync_push(ct_module *ddp)
{
    ddp_state *state = state_of(ddp, "ct_ddp_no_sync_push");
    if (!state) return ct_last_error();
    state->reducer->no_sync_depth++;
    return CT_OK;
}

ct_status ct_ddp_no_sync_pop(ct_module *ddp)
{
    ddp_state *state = state_of(ddp, "ct_ddp_no_sync_pop");
    if (!state) return ct_last_error();
    if (state->reducer->no_sync_depth == 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_ddp_no_sync_pop: no ct_ddp_no_sync_push to end");
    state->reducer->no_sync_depth--;
    return CT_OK;
}

ct_status ct_ddp_get_stats(const ct_module *ddp, ct_ddp_stats *out)
{
    ddp_state *state = state_of(ddp, "ct_ddp_get_stats");
    if (!state) return ct_last_error();
    if (!out) return ct_null_argument("ct_ddp_get_stats", "out"), ct_last_error();
    *out = state->reducer->stats;
    return CT_OK;
}
