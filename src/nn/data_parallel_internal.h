/* DataParallel's parts (include/ctorch/parallel.h): the plan of the wrapped module's tensors
 * (data_parallel_plan.c), the replicas and the broadcast (data_parallel_replicate.c), the gather of the outputs with its
 * backward (data_parallel_gather.c), and the wrapper that scatters, runs a thread per device and
 * gathers (data_parallel.c). */
#ifndef CT_NN_DATA_PARALLEL_INTERNAL_H
#define CT_NN_DATA_PARALLEL_INTERNAL_H

#include "ctorch/parallel.h"
#include "nn/module_internal.h"

#define CT_DP_MAX_DEVICES 64

/* What a tensor looked like when planned. */
typedef struct ct_dp_layout {
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
} ct_dp_layout;

#define CT_DP_MAX_GROUPS CT_DTYPE_COUNT

/* Where the wrapped module's tensors are, in the order of a depth-first walk (a module's
 * parameters, then its buffers, then its children's), and where each distinct tensor goes in the
 * flat buffer of its dtype (data_parallel_plan.c). It is the signature of the tree: when the walk
 * finds anything else (a tensor registered since, a dtype or shape changed), it is made again
 * with a new version, and the flat buffers and replicas of older versions are made again too. */
typedef struct ct_dp_plan {
    int version;
    int module_count;
    ct_module **modules;      /* the wrapped tree's modules, walk order (borrowed) */
    int *slot_counts;         /* per module: parameters + buffers */
    int slot_count;
    ct_tensor **originals;    /* per slot: the wrapped module's tensor (borrowed) */
    bool *is_parameter;       /* per slot */
    int *unique;              /* per slot: the first slot holding the same tensor (shared weights) */
    ct_dp_layout *layouts;    /* per slot */
    int *group;               /* per unique slot: its flat buffer */
    int64_t *offset;          /* per unique slot: its first element in the flat buffer */
    int group_count;
    ct_dtype group_dtypes[CT_DP_MAX_GROUPS];
    int64_t group_numel[CT_DP_MAX_GROUPS];
} ct_dp_plan;

/* Brings the plan up to date with the wrapped tree (a new version when it changed). */
ct_status ct_dp_plan_update(ct_dp_plan *plan, ct_module *module);
void ct_dp_plan_free(ct_dp_plan *plan);
/* Allocates the plan's flat buffers on device into flats[0..group_count). */
ct_status ct_dp_plan_alloc_flats(const ct_dp_plan *plan, ct_device device, ct_tensor **flats);
/* Unique slot's tensor as a view of its flat buffer among flats. Untracked. */
ct_tensor *ct_dp_plan_view(const ct_dp_plan *plan, ct_tensor *const *flats, int slot);

/* The wrapped module's tensors packed into flat buffers on devices[0], refreshed every forward:
 * the source of the broadcast, one copy per flat buffer and device. */
typedef struct ct_dp_source {
    ct_device device;
    int version, slot_count;
    ct_tensor *flats[CT_DP_MAX_GROUPS];
    ct_tensor **parts;        /* per unique slot: its view of the flat buffer */
} ct_dp_source;

/* Copies the wrapped module's current values into the source (built first when stale). */
ct_status ct_dp_source_refresh(ct_dp_source *source, const ct_dp_plan *plan);
void ct_dp_source_free(ct_dp_source *source);

/* One further device's copy of the module. */
typedef struct ct_dp_replica {
    ct_device device;
    int version, slot_count;  /* the plan's when it was built */
    ct_module *module;        /* the shallow copy: its own slots, the wrapped modules' data */
    ct_module **modules;      /* its modules in walk order (borrowed from module) */
    ct_tensor ***slots;       /* per slot: where the replica's module keeps the tensor */
    ct_tensor *flats[CT_DP_MAX_GROUPS]; /* the values on device, reused from forward to forward */
    ct_tensor **stores;       /* per unique slot: its view of the flat buffers */
    ct_tensor **outputs;      /* per unique slot of a parameter: this forward's broadcast */
} ct_dp_replica;

/* Makes r a copy of the planned tree on r->device (dropping what r held before), unless it is
 * one of the plan's current version already. */
ct_status ct_dp_replica_build(ct_dp_replica *r, const ct_dp_plan *plan);
/* Copies the source's flat buffers into r's (one copy each), mirrors every module's training
 * flag, and when grad mode is on gives each replicated parameter that requires grad a
 * BroadcastBackward node whose backward moves the gradient to the parameter's device. */
ct_status ct_dp_replica_broadcast(ct_dp_replica *r, const ct_dp_plan *plan, const ct_dp_source *source);
/* Drops this forward's broadcast outputs: the replica's slots hold the plain stores again. */
void ct_dp_replica_reset(ct_dp_replica *r, const ct_dp_plan *plan);
/* Releases what r holds; r keeps its device. */
void ct_dp_replica_free(ct_dp_replica *r);

/* The outputs (count > 0, on any devices) concatenated along dim 0 on device, recorded as
 * GatherBackward: its backward sends each output its rows of the gradient, on its device.
 * Untracked (for ctorch's own use between public calls). */
ct_tensor *ct_dp_gather(const char *function, ct_tensor *const *outputs, int count, ct_device device);

/* The store that holds a replicated tensor of the wrapper on devices[device_index] (borrowed), by
 * dotted name relative to the wrapped module; NULL when there is none yet. For tests: it shows
 * that replicas are reused across forwards. */
const ct_tensor *ct_dp_replica_tensor(const ct_module *data_parallel, int device_index, const char *name);

#endif
