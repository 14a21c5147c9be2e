/* DataParallel's parts (include/ctorch/parallel.h): the replicas of the wrapped module and the
 * broadcast of its tensors (data_parallel_replicate.c), the gather of the outputs with its
 * backward (data_parallel_gather.c), and the wrapper that scatters, runs a thread per device and
 * gathers (data_parallel.c). */
#ifndef CT_NN_DATA_PARALLEL_INTERNAL_H
#define CT_NN_DATA_PARALLEL_INTERNAL_H

#include "ctorch/parallel.h"
#include "nn/module_internal.h"

#define CT_DP_MAX_DEVICES 64

/* Where the wrapped module's tensors are, in the order of a depth-first walk (a module's
 * parameters, then its buffers, then its children's). It is the signature of the tree: when the
 * walk finds anything else (a tensor registered since), the replicas are built again. */
typedef struct ct_dp_plan {
    int version;              /* counts the rebuilds: replicas built from an older one are stale */
    int module_count;
    ct_module **modules;      /* the wrapped tree's modules, walk order (borrowed) */
    int *slot_counts;         /* per module: parameters + buffers */
    int slot_count;
    ct_tensor **originals;    /* per slot: the wrapped module's tensor (borrowed) */
    bool *is_parameter;       /* per slot */
    int *unique;              /* per slot: the first slot holding the same tensor (shared weights) */
} ct_dp_plan;

/* One further device's copy of the module. */
typedef struct ct_dp_replica {
    ct_device device;
    int version, slot_count;  /* the plan's when it was built */
    ct_module *module;        /* the shallow copy: its own slots, the wrapped modules' data */
    ct_module **modules;      /* its modules in walk order (borrowed from module) */
    ct_tensor ***slots;       /* per slot: where the replica's module keeps the tensor */
    ct_tensor **stores;       /* per slot (used at unique slots): the values on device, reused */
    ct_tensor **outputs;      /* per slot (unique slots of parameters): this forward's broadcast */
} ct_dp_replica;

/* Rebuilds the plan when the wrapped tree is not what it describes (a new version). */
ct_status ct_dp_plan_update(ct_dp_plan *plan, ct_module *module);
void ct_dp_plan_free(ct_dp_plan *plan);

/* Makes r a copy of the planned tree on r->device (dropping what r held before), unless it is
 * one of the plan's current version already. */
ct_status ct_dp_replica_build(ct_dp_replica *r, const ct_dp_plan *plan);
/* Copies the wrapped module's current values into r's stores, mirrors every module's training
 * flag, and when grad mode is on gives each replicated parameter that requires grad a
 * BroadcastBackward node whose backward moves the gradient to the parameter's device. */
ct_status ct_dp_replica_broadcast(ct_dp_replica *r, const ct_dp_plan *plan);
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
