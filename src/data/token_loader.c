/* Batches of token windows for a language model: nanoGPT's random windows (from a seed, each
 * window known from its index alone) or llm.c's sequential order, each DDP rank with its own. */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

struct ct_token_loader {
    uint16_t *tokens;
    int64_t count;
    ct_token_loader_options options;
    int64_t position;    /* the next batch */
    int64_t num_batches; /* in one pass */
};

ct_token_loader_options ct_token_loader_options_default(void)
{
    return (ct_token_loader_options){.batch_size = 8, .seq_len = 256, .order = CT_TOKEN_ORDER_RANDOM,
                                     .seed = 0, .rank = 0, .world_size = 1, .device = CT_DEVICE_CPU};
}

static ct_status check_options(const ct_token_data *data, ct_token_loader_options *o)
{
    static const char *FN = "ct_token_loader_create";
    if (o->batch_size < 1 || o->seq_len < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: batch_size %lld and seq_len %lld must both be >= 1",
                        FN, (long long)o->batch_size, (long long)o->seq_len);
    if (o->world_size < 1 || o->rank < 0 || o->rank >= o->world_size)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: rank %d of world_size %d; it must be 0 <= rank < "
                        "world_size", FN, o->rank, o->world_size);
    if (o->order != CT_TOKEN_ORDER_RANDOM && o->order != CT_TOKEN_ORDER_SEQUENTIAL)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: order is %d; it must be CT_TOKEN_ORDER_RANDOM or "
                        "CT_TOKEN_ORDER_SEQUENTIAL", FN, (int)o->order);
    if (o->batch_size > INT64_MAX / o->seq_len / o->world_size)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: world_size * batch_size * seq_len overflows", FN);
    if (data->count < o->seq_len + 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s has %lld tokens; a window of seq_len %lld needs "
                        "%lld (T + 1: the inputs and the next token of the last); give more data or a "
                        "shorter seq_len", FN, data->source, (long long)data->count, (long long)o->seq_len,
                        (long long)o->seq_len + 1);
    int64_t step_tokens = (int64_t)o->world_size * o->batch_size * o->seq_len;
    if (o->order == CT_TOKEN_ORDER_SEQUENTIAL && data->count < step_tokens + 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s has %lld tokens; the sequential order's batch of "
                        "%d x %lld x %lld tokens (world_size x B x T) needs %lld (one more for the last "
                        "target); give more data or a smaller batch", FN, data->source, (long long)data->count,
                        o->world_size, (long long)o->batch_size, (long long)o->seq_len, (long long)step_tokens + 1);
    return ct_device_resolve(o->device, &o->device);
}

static ct_token_loader *create(const ct_token_data *data, const ct_token_loader_options *options)
{
    if (!data) return ct_null_argument("ct_token_loader_create", "data");
    ct_token_loader_options o = options ? *options : ct_token_loader_options_default();
    if (check_options(data, &o) != CT_OK) return NULL;
    ct_token_loader *loader = calloc(1, sizeof *loader);
    uint16_t *tokens = malloc((size_t)data->count * sizeof *tokens);
    if (!loader || !tokens) {
        free(loader);
        free(tokens);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_token_loader_create: no host memory for %lld tokens",
                             (long long)data->count);
    }
    memcpy(tokens, data->tokens, (size_t)data->count * sizeof *tokens);
    *loader = (ct_token_loader){tokens, data->count, o, 0,
                                (data->count - 1) / ((int64_t)o.world_size * o.batch_size * o.seq_len)};
    return loader;
}

ct_token_loader *ct_token_loader_create(const ct_token_data *data, const ct_token_loader_options *options)
{
    return create(data, options);
}

void ct_token_loader_free(ct_token_loader *loader)
{
    if (!loader) return;
    free(loader->tokens);
    free(loader);
}

/* Where row b of the batch at `position` starts. */
static int64_t window_start(const ct_token_loader *l, int64_t position, int64_t b)
{
    const ct_token_loader_options *o = &l->options;
    if (o->order == CT_TOKEN_ORDER_SEQUENTIAL) {
        int64_t i = position % l->num_batches;
        return ((i * o->world_size + o->rank) * o->batch_size + b) * o->seq_len;
    }
    uint64_t g = ((uint64_t)position * (uint64_t)o->world_size + (uint64_t)o->rank) * (uint64_t)o->batch_size
               + (uint64_t)b;
    uint64_t state = o->seed + g * UINT64_C(0x9E3779B97F4A7C15); /* the g-th output follows from here */
    uint64_t own = ct_splitmix64_next(&state);
    return (int64_t)ct_splitmix64_below(&own, (uint64_t)(l->count - o->seq_len));
}

static ct_status next(ct_token_loader *l, ct_tensor **inputs, ct_tensor **targets)
{
    static const char *FN = "ct_token_loader_next";
    int64_t B = l->options.batch_size, T = l->options.seq_len, shape[2] = {B, T};
    ct_tensor *x = ct_tensor_alloc(FN, CT_DEVICE_CPU, CT_I64, shape, 2);
    ct_tensor *y = x ? ct_tensor_alloc(FN, CT_DEVICE_CPU, CT_I64, shape, 2) : NULL;
    if (!y) {
        ct_release(x);
        return ct_last_error();
    }
    int64_t *xs = ct_tensor_handle(x), *ys = ct_tensor_handle(y);
    for (int64_t b = 0; b < B; b++) {
        const uint16_t *w = l->tokens + window_start(l, l->position, b);
        for (int64_t t = 0; t < T; t++) {
            xs[b * T + t] = w[t];
            ys[b * T + t] = w[t + 1];
        }
    }
    if (l->options.device.type != CT_CPU) {
        ct_tensor *dx = ct_to(x, l->options.device), *dy = dx ? ct_to(y, l->options.device) : NULL;
        ct_release(x);
        ct_release(y);
        if (!dy) {
            ct_release(dx);
            return ct_last_error();
        }
        x = dx;
        y = dy;
    }
    l->position++;
    *inputs = x;
    *targets = y;
    return CT_OK;
}

ct_status ct_token_loader_next(ct_token_loader *loader, ct_tensor **inputs, ct_tensor **targets)
{
    static const char *FN = "ct_token_loader_next";
    if (inputs) *inputs = NULL;
    if (targets) *targets = NULL;
    if (!loader) return ct_null_argument(FN, "loader"), ct_last_error();
    if (!inputs) return ct_null_argument(FN, "inputs"), ct_last_error();
    if (!targets) return ct_null_argument(FN, "targets"), ct_last_error();
    ct_tensor *x = NULL, *y = NULL;
    ct_api_enter();
    ct_status status = next(loader, &x, &y);
    ct_api_return(NULL);
    if (status != CT_OK) return status;
    /* handed out in the caller's scope, as any returned tensor */
    CT_API_ENTER;
    *inputs = ct_api_return(x);
    CT_API_ENTER;
    *targets = ct_api_return(y);
    return CT_OK;
}

int64_t ct_token_loader_position(const ct_token_loader *loader)
{
    if (!loader) return ct_null_argument("ct_token_loader_position", "loader"), -1;
    return loader->position;
}

ct_status ct_token_loader_set_position(ct_token_loader *loader, int64_t position)
{
    if (!loader) return ct_null_argument("ct_token_loader_set_position", "loader"), ct_last_error();
    if (position < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_token_loader_set_position: position is %lld; it must "
                        "be >= 0", (long long)position);
    loader->position = position;
    return CT_OK;
}

int64_t ct_token_loader_num_batches(const ct_token_loader *loader)
{
    if (!loader) return ct_null_argument("ct_token_loader_num_batches", "loader"), -1;
    return loader->num_batches;
}
