/* ctorch distributed: a process group over MPI and collectives on tensors of any device
 * (torch.distributed with the MPI backend).
 *
 * Processes are started by MPI's launcher (mpirun -np N prog, or srun under Slurm); each calls
 * ct_dist_init once, then the collectives, in the same order on every rank, then
 * ct_dist_finalize. ctorch talks over a communicator of its own (a duplicate of
 * MPI_COMM_WORLD), so its collectives never match a program's own MPI calls.
 *
 * Collectives work on tensors of every device. CPU tensors that are contiguous are handed to MPI
 * as they are; other tensors (views, OpenCL tensors) are staged through a pinned host buffer that
 * is kept and reused between calls. Every collective first checks, with one small MPI_Allreduce
 * of a descriptor (which collective, op, root, dtype, shape), that all ranks called the same
 * collective with the same kind of tensor; when they did not, or when one rank failed before
 * taking part (a NULL tensor, a wrong output shape), every rank returns an error that names what
 * this rank passed and what the other rank passed, instead of hanging or reading garbage:
 *   CT_ERR_SHAPE   shapes differ (all_reduce and broadcast: the tensor; all_gather and
 *                  reduce_scatter: the input),
 *   CT_ERR_DTYPE   dtypes differ,
 *   CT_ERR_INVALID_ARGUMENT   different collectives, ops or roots,
 *   and on the other ranks the failing rank's own status when one rank could not take part.
 * After an error, an all_gather's output may hold this rank's input in its slice (it is copied
 * there before the check); other tensors are left as they were.
 * A rank that never calls the collective at all (it exited, it is stopped, or it waits
 * elsewhere) cannot be told apart from a slow one until the time limit passes (ct_dist_set_timeout:
 * 10 minutes by default); then every rank waiting returns CT_ERR_TIMEOUT naming the collective and
 * the ranks that did not arrive. When a process exits with an error, mpirun ends the whole job.
 *
 * Backends: MPI carries every device's tensors (through host memory for devices). The dispatch
 * point is per device type, so that NCCL can take CUDA tensors under these same calls.
 *
 * Threads: ct_dist_init asks MPI for MPI_THREAD_MULTIPLE; ctorch's collectives are serialised
 * among themselves, so they may be called from any thread, but in the same order on every rank.
 * When the program initialised MPI itself with MPI_THREAD_FUNNELED or lower, ctorch's collectives
 * must be called from the main thread (others get CT_ERR_INVALID_ARGUMENT).
 *
 * Built without MPI (CTORCH_WITH_MPI=OFF, or MPI not found): every call returns
 * CT_ERR_NOT_COMPILED ("ctorch was built without MPI"), but for ct_convert_sync_batch_norm (a
 * SyncBatchNorm without a process group is plain batch normalisation). */
#ifndef CTORCH_DISTRIBUTED_H
#define CTORCH_DISTRIBUTED_H

#include "ctorch/nn.h"
#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.distributed.ReduceOp. AVG is the sum divided by the world size; on integer dtypes the
 * sum wraps as the dtype does and the division rounds toward zero (NCCL's ncclAvg). On bool
 * tensors SUM and MAX are a logical or, MIN a logical and, and AVG is an error. */
typedef enum ct_reduce_op { CT_REDUCE_SUM = 0, CT_REDUCE_AVG, CT_REDUCE_MAX, CT_REDUCE_MIN } ct_reduce_op;
/* "sum", "avg", "max", "min"; "invalid" otherwise. */
const char *ct_reduce_op_name(ct_reduce_op op);

/* ---- the process group ---- */
/* Built with MPI? */
bool ct_dist_is_available(void);
/* The world size the launcher announced in the environment (OMPI_COMM_WORLD_SIZE from
 * OpenMPI's mpirun, PMI_SIZE from MPICH's and from srun with PMI-2, SLURM_STEP_NUM_TASKS from
 * srun with any plugin), or 1 when there is none: lets a program decide whether to start the
 * process group before it does. */
int ct_dist_launcher_world_size(void);

/* Joins the process group: initialises MPI (MPI_Init_thread, asking for MPI_THREAD_MULTIPLE) or,
 * when the program initialised MPI already, uses it as it is. Calling it again is a no-op. After
 * ct_dist_finalize has finalised MPI it cannot start again (MPI forbids it): an error then. */
ct_status ct_dist_init(void);
/* Leaves the group and frees its staging memory; finalises MPI only when ct_dist_init
 * initialised it. A no-op when the group is not initialised. Collective: every rank calls it, and
 * it first checks that every rank has come to the end: a rank still in another collective (it had
 * more of them to call) and this one get CT_ERR_INVALID_ARGUMENT naming ct_dist_finalize; then, and
 * after a timeout, MPI is left as it is (finalising would wait for the other ranks) and the
 * program should end the job (ct_dist_abort, or exit with an error status). */
ct_status ct_dist_finalize(void);
bool ct_dist_is_initialized(void);
/* Ends every process of the job at once with exit_code (MPI_Abort on ctorch's communicator):
 * for a rank that hits an error the others cannot know about while they wait for it in a
 * collective. A rank that simply exits with an error without ct_dist_finalize ends the job too
 * (mpirun's default), but one that calls ct_dist_finalize first may wait in MPI_Finalize for
 * ranks that wait for it. Before ct_dist_init (or without MPI) it ends this process alone. */
void ct_dist_abort(int exit_code);

/* ---- the time limit (torch.distributed.init_process_group's timeout) ----
 * Each collective (ct_dist_finalize's check that every rank has come to the end included) must
 * complete within the limit: 600 s by default, CTORCH_DIST_TIMEOUT (seconds, read by ct_dist_init;
 * a value that is not a number above 0 makes ct_dist_init fail naming it), or the program's own
 * through ct_dist_set_timeout, which wins over both, at any time. When the limit passes, the rank
 * asks the others where they are and returns CT_ERR_TIMEOUT with a message naming the collective
 * and the ranks that did not arrive (those that do not answer: stopped, gone, or busy outside
 * ctorch's collectives; and those in another collective, with its name). The ranks it asked learn
 * that it gave up: their current or next collective returns CT_ERR_TIMEOUT at once, naming the
 * missing ranks too. MPI cannot take a started collective back, so the process group cannot be
 * used after a timeout: later collectives return CT_ERR_TIMEOUT at once, and ct_dist_finalize
 * returns it without finalising MPI (which would wait for the missing ranks); the tensors of the
 * collective that timed out may still be written by MPI. End the job: ct_dist_abort, or exit with
 * an error status (the launcher then ends every process). Once every rank has come, the bytes move
 * through MPI's blocking calls (much faster than its non-blocking ones for mid-sized buffers),
 * which cannot be left: a transfer that outlasts the limit (a rank stopped or failed in the middle
 * of it) is ended by a watchdog thread, as PyTorch's NCCL watchdog does, which prints
 * "ctorch: rank R of N: <collective>: the transfer did not complete within ..." and aborts the
 * job (MPI_Abort). CUDA tensors that go through NCCL: the
 * agreement before the transfer is under the limit (a rank that does not come is found there),
 * the transfer queued on the device is not. */
/* seconds: above 0 and at most CT_DIST_TIMEOUT_MAX_SECONDS (else CT_ERR_INVALID_ARGUMENT; the same
 * bound for CTORCH_DIST_TIMEOUT). May be called before ct_dist_init. */
#define CT_DIST_TIMEOUT_MAX_SECONDS 1e9
ct_status ct_dist_set_timeout(double seconds);
/* The limit in seconds (before ct_dist_init: the one it would take). */
double ct_dist_timeout(void);

/* ---- agreeing on a run's settings ----
 * Ranks started with different settings that decide how many collectives they call (epochs,
 * batch size, the data's size) would wait in a collective another rank never calls. Called by
 * every rank with the same names in the same order, before the work: CT_OK when every rank gives
 * each name the same value; otherwise CT_ERR_INVALID_ARGUMENT on every rank naming each setting
 * that differs (up to four) and which ranks have which value ("--epochs differs between the
 * ranks: rank 0 has 3, rank 1 has 1"). Values are compared as text, up to
 * CT_DIST_SETTING_VALUE_MAX - 1 characters (longer ones are compared and shown cut); at most
 * CT_DIST_SETTINGS_MAX settings. A collective (within the time limit). */
#define CT_DIST_SETTINGS_MAX 64
#define CT_DIST_SETTING_VALUE_MAX 128
typedef struct ct_dist_setting {
    const char *name;  /* as the user knows it: "--epochs" */
    const char *value; /* "3" */
} ct_dist_setting;
ct_status ct_dist_agree_on_settings(const ct_dist_setting *settings, int count);

/* This process's rank in [0, world size), and the world size. -1 (and CT_ERR_UNAVAILABLE)
 * before ct_dist_init. */
int ct_dist_rank(void);
int ct_dist_world_size(void);
/* The rank among the processes of this machine (those that share memory, from
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), ordered by rank), and their number. -1 before init. */
int ct_dist_local_rank(void);
int ct_dist_local_world_size(void);

/* The device this process should use: index local_rank modulo the device count, of the first
 * type that has devices among CUDA, OpenCL (any OpenCL device, the CPU kind too), else the CPU.
 * The environment variable CTORCH_DIST_DEVICE overrides it with a map (see ct_dist_device_from).
 * Needs ct_dist_init. */
ct_status ct_dist_device(ct_device *out);
/* The device from an explicit map: a comma-separated list of devices, of which local rank r takes
 * entry r modulo the list's length; an entry without an index ("opencl", "cuda") stands for
 * index local_rank modulo that type's device count. "cpu" puts every rank on the CPU,
 * "opencl:1,opencl:0" swaps two ranks' devices. Errors name the entry that is not usable. */
ct_status ct_dist_device_from(const char *map, ct_device *out);

/* ---- collectives (every rank calls the same one, in the same order) ---- */
/* Returns when every rank has entered it. */
ct_status ct_dist_barrier(void);
/* In place: t becomes the reduction of every rank's t (same shape and dtype on every rank;
 * devices may differ). */
ct_status ct_dist_all_reduce(ct_tensor *t, ct_reduce_op op);
/* In place: t becomes root's t. */
ct_status ct_dist_broadcast(ct_tensor *t, int root);
/* torch.distributed.all_gather_into_tensor: output [world * d0, d1, ...] is every rank's input
 * [d0, d1, ...] stacked along dim 0 in rank order (inputs of the same shape and dtype on every
 * rank; a 0-dim input gives output [world]). input may be the rank's own slice of output. */
ct_status ct_dist_all_gather(ct_tensor *output, const ct_tensor *input);
/* torch.distributed.reduce_scatter_tensor: input [world * d0, d1, ...] is reduced over the
 * ranks, and rank r gets slice r along dim 0 into output [d0, d1, ...]. */
ct_status ct_dist_reduce_scatter(ct_tensor *output, const ct_tensor *input, ct_reduce_op op);

/* ---- asynchronous collectives (torch.distributed's async_op=True) ----
 * A started collective runs on the process group's communication thread, one at a time in the
 * order they were started (as PyTorch's ProcessGroupMPI runs its work), while the caller goes on.
 * A blocking collective called meanwhile first waits for the started ones, so collectives happen
 * in the order of the calls, on every rank. The tensor must not be read or written until the work
 * is waited for. A device tensor is copied into pinned host memory before the call returns (on
 * the caller's current stream), and the result back into it by ct_dist_work_wait. When MPI runs
 * at a thread level below MPI_THREAD_MULTIPLE (a program that initialised MPI itself), the work
 * runs in the calling thread and is complete on return. */
typedef struct ct_dist_work ct_dist_work;
/* Starts an all-reduce of t (as ct_dist_all_reduce). NULL with an error when it could not start
 * (then nothing was started, and the other ranks' matching call reports the error when it runs). */
ct_dist_work *ct_dist_all_reduce_async(ct_tensor *t, ct_reduce_op op);
/* Has the work finished (ct_dist_work_wait will not block)? NULL (nothing started) is finished. */
bool ct_dist_work_is_completed(const ct_dist_work *work);
/* Waits for the work, copies a device tensor's result back, frees the work and returns the
 * collective's status (with its message as the thread's last error). NULL-safe (CT_OK). */
ct_status ct_dist_work_wait(ct_dist_work *work);

/* ---- DistributedDataParallel (torch.nn.parallel.DistributedDataParallel) ----
 * One process per device, each with a replica of the model: wrapping broadcasts the module's
 * parameters and buffers from rank 0 (after checking that every rank has the same ones), and each
 * backward through the wrapper averages the gradients over the ranks, so every replica takes the
 * same optimizer step. The gradients are averaged in buckets of about bucket_cap_mb, filled in
 * reverse order of registration (about the order backward produces them); a bucket's all-reduce
 * starts, asynchronously, as soon as all its gradients are ready, so communication overlaps the
 * rest of backward (on accelerators: see all_reduce_start), and ct_backward returns once every bucket is averaged and written into the
 * parameters' .grad (views of the bucket, PyTorch's gradient_as_bucket_view).
 * Rules, as PyTorch's:
 * - The module's parameters are on one device (move it with ct_module_to before wrapping or at
 *   any time after; the buckets follow); the process group is initialised.
 * - Every rank runs the same number of forward and backward passes through the wrapper; a forward
 *   without grad mode (or in eval mode) communicates nothing, so evaluating on rank 0 alone is
 *   fine (use the wrapped module itself for that, or the wrapper under ct_no_grad_push).
 * - A parameter that got no gradient in a backward is an error (CT_ERR_INVALID_ARGUMENT naming
 *   the parameters) unless find_unused_parameters: the other ranks are not left waiting (the
 *   bucket is averaged with zeros for it), but the gradients of that step must not be used. With
 *   find_unused_parameters it counts as zero on this rank, and a parameter no rank used keeps its
 *   .grad as it was.
 * - Parameters registered after wrapping are not synchronised.
 * The wrapper's state dict has the `module.` prefix, as PyTorch's; ct_module_state_dict on the
 * wrapped module has the plain names. */
/* When a bucket's all-reduce starts. DURING_BACKWARD (PyTorch's way) starts it as soon as the
 * bucket is full, to hide communication behind the rest of backward: that pays where devices
 * compute while the host communicates. Where both share the same cores (training on the CPU),
 * MPI's copies and polling slow backward down by more than they hide, and AFTER_BACKWARD, which
 * starts every bucket when backward ends, is faster (`mpirun -np 2 ctorch bench ddp` measures
 * both: 0.80-0.84 against 0.64-0.72 of one process's samples/s on 2 shared cores). AUTO takes
 * DURING_BACKWARD for parameters on an accelerator and AFTER_BACKWARD on the CPU. */
typedef enum ct_ddp_all_reduce_start {
    CT_DDP_START_AUTO = 0,
    CT_DDP_START_DURING_BACKWARD,
    CT_DDP_START_AFTER_BACKWARD
} ct_ddp_all_reduce_start;

typedef struct ct_ddp_options {
    double bucket_cap_mb;        /* the size of a gradient bucket in MiB (default 25) */
    bool find_unused_parameters; /* allow parameters that get no gradient (default false) */
    bool broadcast_buffers;      /* copy rank 0's buffers at every forward in training mode (true) */
    ct_ddp_all_reduce_start all_reduce_start; /* when buckets start (CT_DDP_START_AUTO) */
} ct_ddp_options;
ct_ddp_options ct_ddp_options_default(void);

/* Wraps module (the wrapper takes its own reference; the caller keeps its own). Collective: every
 * rank calls it with the same kind of model. options NULL means the defaults. */
ct_module *ct_distributed_data_parallel(ct_module *module, const ct_ddp_options *options);
/* Is m a DistributedDataParallel wrapper? */
bool ct_is_distributed_data_parallel(const ct_module *m);

/* no_sync(): between push and pop (nestable), backwards through the wrapper accumulate the
 * gradients locally without communicating; the first backward after the last pop averages the
 * accumulated gradients (gradient accumulation over several micro-batches). */
ct_status ct_ddp_no_sync_push(ct_module *ddp);
ct_status ct_ddp_no_sync_pop(ct_module *ddp);

/* What the wrapper did, for benchmarks and logs. */
typedef struct ct_ddp_stats {
    int bucket_count;
    int64_t parameter_count;  /* parameters synchronised */
    int64_t gradient_bytes;   /* the buckets' bytes together */
    int64_t syncs;            /* backwards that averaged gradients */
    /* The last averaging backward: seconds its all-reduces took on the communication thread
     * (summed), and seconds the end of the backward waited for them: communication not hidden
     * behind backward. */
    double last_communication_seconds;
    double last_wait_seconds;
} ct_ddp_stats;
ct_status ct_ddp_get_stats(const ct_module *ddp, ct_ddp_stats *out);

/* ---- SyncBatchNorm (torch.nn.SyncBatchNorm) ----
 * Batch normalisation whose training statistics (mean and variance per channel) are computed over
 * the batch of every rank together, as one large batch: DDP over N ranks with batch B each then
 * normalises as one process with batch N * B would. Ranks may hold different numbers of rows
 * (none, too); the running statistics move with the variance made unbiased by the count of all
 * ranks together. Backward communicates too: the gradients of the statistics are summed over the
 * ranks, so that each rank's input gradient is that of the sum of every rank's loss (with a loss
 * that is a sum over each rank's rows, exactly the one-process gradient of the whole batch; the
 * parameters' gradients stay per rank, for DDP to average). Forward and backward are collectives:
 * every rank runs the same forwards and backwards, with inputs that require grad alike. An input
 * that does not fit the layer on one rank is an error on every rank (the others name that rank),
 * not a hang; so is a training batch with a single value per channel over all ranks together.
 * In eval mode, when the process group is not initialised (also in a build without MPI, where
 * conversion works as well) or with a world of one rank, it is the plain BatchNorm layer and
 * communicates nothing. */
/* SyncBatchNorm.convert_sync_batchnorm, in place: every BatchNorm1d and BatchNorm2d of the tree
 * (those made by ct_batch_norm1d/2d, the root included) becomes a module of kind "SyncBatchNorm"
 * with the same parameter and buffer tensors and settings, printed as PyTorch prints it
 * ("SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"); other
 * modules stay as they are. *converted (may be NULL) gets how many (0 for a tree converted
 * already). NULL module: CT_ERR_NULL_ARGUMENT. */
ct_status ct_convert_sync_batch_norm(ct_module *module, int *converted);

/* The backend that carries a device type's tensors: "mpi" (through host memory for devices);
 * NULL when built without MPI. */
const char *ct_dist_backend_name(ct_device_type type);

#ifdef __cplusplus
}
#endif
#endif
