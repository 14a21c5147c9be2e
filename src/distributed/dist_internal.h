/* The distributed layer's insides: the process group, the per-device-type backends that carry
 * collectives, the agreement check that runs before every collective, and host staging. Only
 * built with MPI (without it, without_mpi.c answers the public calls). */
#ifndef CT_DIST_INTERNAL_H
#define CT_DIST_INTERNAL_H

#include <pthread.h>

#include <mpi.h>

#include "ctorch/distributed.h"
#include "tensor/tensor_internal.h"

/* Which collective a rank is in: part of the descriptor all ranks compare. */
typedef enum ct_dist_kind {
    CT_DIST_BARRIER = 1,
    CT_DIST_ALL_REDUCE,
    CT_DIST_BROADCAST,
    CT_DIST_ALL_GATHER,
    CT_DIST_REDUCE_SCATTER,
    CT_DIST_FINALIZE,       /* ct_dist_finalize's check that every rank has come to the end */
    CT_DIST_AGREE_SETTINGS  /* ct_dist_agree_on_settings */
} ct_dist_kind;
const char *ct_dist_kind_function(ct_dist_kind kind); /* "ct_dist_all_reduce", ... */

/* ---- backends ----
 * A backend moves the bytes of one collective between the ranks. The front end (collectives.c)
 * checks arguments, makes every rank agree on what is being done, and calls a backend with
 * contiguous buffers; a backend's ops are its own (MPI computes AVG as a sum and a division).
 * MPI carries every device type through host memory: the front end hands it the tensors' own
 * memory when they are contiguous CPU tensors and a pinned staging buffer otherwise. A backend
 * with device_memory (NCCL, for CUDA tensors: nccl_backend.c) takes the tensors' device buffers
 * instead, without staging, on the tensors' current stream. Which one runs a collective is agreed
 * by every rank: the device backend only when every rank's tensors can take it (else MPI with
 * staging, on every rank; see ct_dist_agree_direct). */
/* "In place" as a send buffer (MPI_IN_PLACE's role). */
#define CT_DIST_IN_PLACE NULL

typedef struct ct_dist_backend {
    const char *name;
    /* The most elements of one rank's block in all_gather and reduce_scatter (all_reduce and
     * broadcast take any count). */
    int64_t max_block_count;
    ct_status (*all_reduce)(void *data, int64_t count, ct_dtype dtype, ct_reduce_op op);
    ct_status (*broadcast)(void *data, int64_t count, ct_dtype dtype, int root);
    /* recv holds world * count elements; send NULL (in place): this rank's block of recv already
     * holds its contribution. */
    ct_status (*all_gather)(const void *send, void *recv, int64_t count, ct_dtype dtype);
    /* send holds world * count elements and recv count; send NULL (in place): recv holds the
     * world * count input and the result goes into its first count elements. A device backend
     * is never given send NULL: its send and recv do not overlap. */
    ct_status (*reduce_scatter)(const void *send, void *recv, int64_t count, ct_dtype dtype,
                                ct_reduce_op op);
    /* ---- device backends only (NULL for MPI) ---- */
    bool device_memory;
    /* Can this rank hand the backend tensors of device now (its library and device are there,
     * and its communicator, when made, is on that device)? Local: decides what this rank asks
     * for in the agreement. */
    bool (*accepts)(ct_device device);
    /* Makes the communicator on device if there is none. Collective, called by every rank at once
     * when all agreed on this backend; every rank gets the same status (CT_ERR_UNAVAILABLE: it
     * could not be made, the ranks go through MPI, and accepts() says no from then on). */
    ct_status (*prepare)(ct_device device);
    /* The device address of t's first element (t contiguous, on a device it accepts). */
    void *(*data_of)(const ct_tensor *t);
} ct_dist_backend;

/* The backend that carries tensors of a device type (the dispatch point): NCCL for CUDA tensors
 * when it is built in and usable here, MPI otherwise. */
const ct_dist_backend *ct_dist_backend_for(ct_device_type type);
extern const ct_dist_backend ct_dist_mpi_backend;
/* Tests only: makes backend carry type's tensors (NULL: back to the usual choice), so that the
 * device path can be tested where there is no NCCL: a device backend over a stand-in device. */
void ct_dist_backend_install_for_testing(ct_device_type type, const ct_dist_backend *backend);

/* ---- NCCL (nccl_backend.c; built with CTORCH_HAVE_NCCL) ---- */
#ifdef CTORCH_HAVE_NCCL
extern const ct_dist_backend ct_dist_nccl_backend;
#endif
/* Can CUDA tensors go through NCCL on this rank? Decided once (the CUDA backend is available and
 * the NCCL library opens), logged with the reason when not; false once a communicator could not
 * be made. reason (may be NULL) gets why not, or "". Without NCCL built in: false, and says so. */
bool ct_dist_nccl_usable(char *reason, size_t reason_size);
/* Opens the NCCL library as the run time does (CTORCH_CUDA_NCCL, else libnccl.so.2, libnccl.so,
 * else the toolkit's folder the build found) and reads its version (NCCL_VERSION_CODE form, e.g.
 * 22809 for 2.28.9): false with the reason when it cannot. Opened once; later calls give the
 * first answer. For the tests, which can open NCCL where no GPU is. */
bool ct_dist_nccl_library_load(int *version, char *reason, size_t reason_size);
/* Destroys the communicator (ct_dist_finalize). */
void ct_dist_nccl_finalize(void);

/* ---- the process group ---- */
typedef struct ct_dist_group {
    bool initialized;
    bool owns_mpi;     /* ct_dist_init initialised MPI, so ct_dist_finalize finalises it */
    int thread_level;  /* what MPI provides (MPI_THREAD_*) */
    int rank, world_size, local_rank, local_world_size;
    MPI_Comm comm;     /* ctorch's duplicate of MPI_COMM_WORLD */
    pthread_mutex_t lock; /* one collective at a time: the staging buffer and the ordering */
    ct_tensor *staging;   /* pinned host bytes, grown on demand, kept between collectives */
    /* Started collectives (async_work.c): a FIFO that the communication thread runs. */
    pthread_mutex_t work_lock;
    pthread_cond_t work_changed;
    struct ct_dist_work *work_head, *work_tail;
    int works_unfinished;     /* queued or running */
    bool comm_thread_running, comm_thread_stop;
    pthread_t comm_thread;
    /* The time limit (collective_wait.c). The fields below timeout_seconds change under lock. */
    double timeout_seconds;
    MPI_Comm control;           /* where a rank that timed out asks the others where they are */
    int64_t collective_number;  /* collectives begun here: the same on every rank in step */
    const char *collective_function; /* the one in progress ("ct_dist_all_reduce"), else NULL */
    double started;             /* when it began (ct_dist_seconds) */
    bool broken;                /* a collective timed out, here or on another rank: MPI stays unused */
    char broken_reason[1024];
} ct_dist_group;

extern ct_dist_group ct_dist_group_state;

/* The group, or NULL and CT_ERR_UNAVAILABLE naming function when it is not initialised. */
ct_dist_group *ct_dist_group_get(const char *function);
/* The group, locked for one collective (NULL and an error when it is not initialised, or when
 * this thread may not call MPI); ct_dist_collective_end unlocks it. */
ct_dist_group *ct_dist_collective_begin(const char *function);
void ct_dist_collective_end(ct_dist_group *group);
/* ---- the time limit (collective_wait.c) ---- */
/* The limit ct_dist_init takes: the program's (ct_dist_set_timeout), else CTORCH_DIST_TIMEOUT's,
 * else 600 s; an error naming the variable when its value is not a number of seconds above 0. */
ct_status ct_dist_timeout_from_environment(double *seconds);
/* Waits for a started MPI request of the collective in progress (call names the MPI function for
 * errors). CT_ERR_TIMEOUT, the missing ranks named, when the collective's time is up or another
 * rank gave up (the group is broken then, and the request stays started). */
ct_status ct_dist_wait(ct_dist_group *group, MPI_Request *request, const char *call);
/* Fails (CT_ERR_TIMEOUT, the group broken) when another rank gave up and asked where this one
 * is; CT_OK otherwise. */
ct_status ct_dist_check_questions(ct_dist_group *group);

/* The transfer of the collective in progress (a blocking MPI call: every rank has arrived) is
 * watched between begin and end: past the collective's limit, a thread prints what happened and
 * aborts the job (transfer_watchdog.c). The thread runs from ct_dist_init to ct_dist_finalize. */
void ct_dist_watchdog_start(ct_dist_group *group);
void ct_dist_watchdog_stop(void);
void ct_dist_transfer_begin(ct_dist_group *group);
void ct_dist_transfer_end(void);

/* Records CT_ERR_BACKEND: "<function>: <call> failed: <MPI's error string>". */
ct_status ct_dist_mpi_fail(const char *function, const char *call, int code);

/* ---- started collectives (async_work.c) ---- */
/* Waits until every started collective has finished (no-op on the communication thread, which
 * runs them): a blocking collective must come after them, as it was called after them. */
void ct_dist_works_drain(ct_dist_group *group);
/* Stops the communication thread (after draining); ct_dist_finalize calls it. */
void ct_dist_comm_thread_stop(ct_dist_group *group);
/* A monotonic clock in seconds, for the time collectives and DDP's waits take. */
double ct_dist_seconds(void);
/* ct_dist_work_wait that also gives the seconds the collective ran on the communication thread. */
ct_status ct_dist_work_wait_timed(ct_dist_work *work, double *seconds);

/* ---- the agreement check (agreement.c) ----
 * What a rank brings to a collective. status is CT_OK, or the error that keeps this rank out
 * (its message is the thread's last error message). */
typedef struct ct_dist_descriptor {
    ct_dist_kind kind;
    int op;    /* a ct_reduce_op, or -1 */
    int root;  /* broadcast's root, or -1 */
    int dtype; /* a ct_dtype, or -1 */
    int ndim;  /* -1 when there is no tensor */
    int64_t shape[CT_MAX_DIMS];
    ct_status status;
    /* Not compared: this rank's tensors could go to its device backend without staging. */
    bool direct;
} ct_dist_descriptor;

/* A descriptor of a collective on tensor t (NULL allowed: ndim -1). */
ct_dist_descriptor ct_dist_describe(ct_dist_kind kind, int op, int root, const ct_tensor *t);
/* Compares the descriptors of all ranks. CT_OK when they all agree and none failed; otherwise
 * the error, recorded on every rank (the failing rank keeps its own). Every rank must call it. */
ct_status ct_dist_agree(ct_dist_group *group, const ct_dist_descriptor *mine);
/* Takes part in the collective (kind, op) the other ranks are in with this thread's last error, so
 * that they fail with it too instead of waiting for this rank; the error stays this rank's. */
void ct_dist_abstain(const char *function, ct_dist_kind kind, int op);
/* ct_dist_agree that also tells, in the same reduction, whether every rank (*all_direct) and
 * whether any rank (*any_direct) set d->direct. */
ct_status ct_dist_agree_direct(ct_dist_group *group, const ct_dist_descriptor *mine, bool *all_direct,
                               bool *any_direct);

/* ---- host staging (staging.c) ---- */
/* A contiguous CPU tensor of shape over the group's staging buffer (grown to hold it). */
ct_tensor *ct_dist_staging_view(ct_dist_group *group, const char *function, ct_dtype dtype,
                                const int64_t *shape, int ndim);
void ct_dist_staging_free(ct_dist_group *group);
/* t's first element on the host when t can be handed to a host backend as it is (a contiguous
 * CPU tensor), else NULL. */
void *ct_dist_host_data(const ct_tensor *t);

#endif
