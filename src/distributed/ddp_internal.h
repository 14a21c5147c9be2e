/* DistributedDataParallel's parts: the reducer, which owns the gradient buckets, fires their
 * all-reduces from the parameters' hooks during backward and writes the averages back
 * (ddp_reducer.c); and the wrapper module, which checks and broadcasts the model at wrapping and
 * arms the reducer at each forward (ddp.c). */
#ifndef CT_DDP_INTERNAL_H
#define CT_DDP_INTERNAL_H

#include "ctorch/autograd.h"
#include "distributed/dist_internal.h"

/* PyTorch starts with a small bucket (dist._DEFAULT_FIRST_BUCKET_BYTES) so that the first
 * all-reduce starts early in backward, when the last layer's gradients are ready. */
#define CT_DDP_FIRST_BUCKET_BYTES ((size_t)1 << 20)

/* A run of parameters whose gradients are averaged by one all-reduce. */
typedef struct ct_ddp_bucket {
    ct_dtype dtype;
    int first, count;     /* its parameters: order[first .. first + count) */
    int64_t numel;
    ct_tensor *flat;      /* the gradients side by side, on the parameters' device */
    ct_tensor *host;      /* pinned copy of flat that MPI reduces, for a device bucket whose
                           * backend takes host memory only; else NULL (NCCL reduces flat) */
    ct_tensor **views;    /* per parameter: its gradient's place in flat, in its shape */
    int pending;          /* gradients of this backward not in yet */
    bool launched;
    ct_dist_work *work;
} ct_ddp_bucket;

struct ct_ddp_reducer;

/* A parameter's hook context: its reducer and its index, so that a hook finds the parameter's
 * slot at once. */
typedef struct ct_ddp_param_hook {
    struct ct_ddp_reducer *reducer;
    int index;
} ct_ddp_param_hook;

typedef struct ct_ddp_reducer {
    int param_count;
    ct_tensor **params;   /* retained, in registration order */
    char **names;         /* the wrapped module's names, for messages */
    ct_ddp_param_hook *hooks; /* per parameter */
    size_t bucket_cap_bytes;
    bool find_unused_parameters;
    ct_ddp_all_reduce_start all_reduce_start;
    bool overlap;         /* start buckets during backward (all_reduce_start for this device) */
    /* The buckets, laid out for the device, dtypes and shapes the parameters had then. */
    bool built;
    ct_device device;
    int bucket_count;
    ct_ddp_bucket *buckets;
    int *order;           /* parameter indices in bucket order (reverse registration) */
    int *bucket_of;       /* per parameter */
    int *view_of;         /* per parameter: its index within its bucket */
    /* This backward. */
    bool armed;           /* a forward with grad and sync asked for one */
    bool finalize_queued;
    bool *ready, *used;   /* per parameter */
    int next_to_launch;
    int no_sync_depth;
    ct_ddp_stats stats;
} ct_ddp_reducer;

/* A reducer over params (their names beside them); registers its hooks on them. */
ct_ddp_reducer *ct_ddp_reducer_create(ct_tensor *const *params, char *const *names, int count,
                                      size_t bucket_cap_bytes, bool find_unused_parameters,
                                      ct_ddp_all_reduce_start all_reduce_start);
/* Removes the hooks, waits for anything in flight, frees. NULL-safe. */
void ct_ddp_reducer_free(ct_ddp_reducer *r);
/* At a forward: arms the next backward when sync is wanted, first (re)building the buckets if
 * the parameters moved or changed dtype; disarms it otherwise. */
ct_status ct_ddp_reducer_prepare(ct_ddp_reducer *r, bool sync);

#endif
