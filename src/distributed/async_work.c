/* Started collectives (ct_dist_all_reduce_async): a queue of works that one communication
 * thread per process runs in order, each as the blocking collective it stands for, while the
 * caller goes on (PyTorch's ProcessGroupMPI works the same way). MPI itself only ever sees host
 * buffers from this thread: a device tensor is copied into pinned memory by the caller when the
 * work starts, and back by the caller when it waits, each on the caller's own stream. A CUDA
 * tensor that NCCL can take is not queued here: its collective is queued on its stream instead. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "distributed/dist_internal.h"

#define WORK_MESSAGE_MAX 1024

struct ct_dist_work {
    ct_tensor *tensor;   /* the caller's tensor (retained) */
    ct_tensor *host;     /* what the collective runs on: tensor itself or its pinned copy */
    ct_reduce_op op;
    bool done;
    ct_status status;
    char message[WORK_MESSAGE_MAX];
    double seconds;      /* on the communication thread */
    struct ct_dist_work *next;
};

/* Is this thread the communication thread? Its collectives must not wait for the queue. */
static _Thread_local bool on_comm_thread;

double ct_dist_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_work(ct_dist_work *work)
{
    double start = ct_dist_seconds();
    work->status = ct_dist_all_reduce(work->host, work->op);
    work->seconds = ct_dist_seconds() - start;
    if (work->status != CT_OK) snprintf(work->message, sizeof work->message, "%s", ct_last_error_message());
}

static void *comm_thread_main(void *arg)
{
    ct_dist_group *group = arg;
    on_comm_thread = true;
    pthread_mutex_lock(&group->work_lock);
    for (;;) {
        while (!group->work_head && !group->comm_thread_stop)
            pthread_cond_wait(&group->work_changed, &group->work_lock);
        ct_dist_work *work = group->work_head;
        if (!work) break; /* stopping, and nothing left */
        pthread_mutex_unlock(&group->work_lock);
        run_work(work);
        pthread_mutex_lock(&group->work_lock);
        group->work_head = work->next;
        if (!group->work_head) group->work_tail = NULL;
        work->done = true;
        group->works_unfinished--;
        pthread_cond_broadcast(&group->work_changed);
    }
    pthread_mutex_unlock(&group->work_lock);
    return NULL;
}

void ct_dist_works_drain(ct_dist_group *group)
{
    if (on_comm_thread) return;
    pthread_mutex_lock(&group->work_lock);
    while (group->works_unfinished > 0) pthread_cond_wait(&group->work_changed, &group->work_lock);
    pthread_mutex_unlock(&group->work_lock);
}

void ct_dist_comm_thread_stop(ct_dist_group *group)
{
    ct_dist_works_drain(group);
    pthread_mutex_lock(&group->work_lock);
    bool running = group->comm_thread_running;
    group->comm_thread_stop = true;
    pthread_cond_broadcast(&group->work_changed);
    pthread_mutex_unlock(&group->work_lock);
    if (running) pthread_join(group->comm_thread, NULL);
    group->comm_thread_running = false;
    group->comm_thread_stop = false;
}

/* Queues work, starting the thread on first use; false (with an error) when it cannot start. */
static bool enqueue(ct_dist_group *group, ct_dist_work *work, const char *function)
{
    pthread_mutex_lock(&group->work_lock);
    if (!group->comm_thread_running) {
        int code = pthread_create(&group->comm_thread, NULL, comm_thread_main, group);
        if (code != 0) {
            pthread_mutex_unlock(&group->work_lock);
            ct_error(CT_ERR_BACKEND, "%s: cannot start the communication thread (error %d)", function, code);
            return false;
        }
        group->comm_thread_running = true;
    }
    if (group->work_tail) group->work_tail->next = work;
    else group->work_head = work;
    group->work_tail = work;
    group->works_unfinished++;
    pthread_cond_broadcast(&group->work_changed);
    pthread_mutex_unlock(&group->work_lock);
    return true;
}

static void work_free(ct_dist_work *work)
{
    if (work->host != work->tensor) ct_release(work->host);
    ct_release(work->tensor);
    free(work);
}

ct_dist_work *ct_dist_all_reduce_async(ct_tensor *t, ct_reduce_op op)
{
    static const char *FN = "ct_dist_all_reduce_async";
    ct_dist_group *group = ct_dist_group_get(FN);
    if (!group) return NULL;
    if (!t) return ct_null_argument(FN, "t");
    ct_dist_work *work = calloc(1, sizeof *work);
    if (!work) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", FN);
    ct_api_enter();
    work->op = op;
    work->tensor = t;
    atomic_fetch_add(&t->refcount, 1);
    work->host = t;
    /* A tensor a device backend (NCCL) can take: the collective only queues work on the tensor's
     * stream there, so it runs now, in this thread, on the caller's current stream (after the
     * started ones: it waits for them first), and the work is complete on return as far as the
     * host is concerned. Should the ranks not all agree on NCCL, it goes through MPI here, in
     * this thread, blocking. */
    if (ct_numel(t) > 0 && ct_dist_backend_for(t->storage->device.type)->device_memory) {
        ct_api_return(NULL);
        run_work(work);
        work->done = true;
        return work;
    }
    if (ct_numel(t) > 0 && !ct_dist_host_data(t)) {
        work->host = ct_tensor_alloc_pinned(FN, t->dtype, t->shape, t->ndim);
        if (!work->host || ct_copy_(work->host, t) != CT_OK) {
            if (!work->host) work->host = t;
            work_free(work);
            ct_api_return(NULL);
            return NULL;
        }
    }
    ct_api_return(NULL);
    /* Below MPI_THREAD_MULTIPLE, MPI may not be called from a thread of ctorch's: run it here. */
    if (group->thread_level < MPI_THREAD_MULTIPLE) {
        run_work(work);
        work->done = true;
        return work;
    }
    if (!enqueue(group, work, FN)) {
        work_free(work);
        return NULL;
    }
    return work;
}

bool ct_dist_work_is_completed(const ct_dist_work *work)
{
    if (!work) return true;
    ct_dist_group *group = &ct_dist_group_state;
    pthread_mutex_lock(&group->work_lock);
    bool done = work->done;
    pthread_mutex_unlock(&group->work_lock);
    return done;
}

ct_status ct_dist_work_wait_timed(ct_dist_work *work, double *seconds)
{
    if (seconds) *seconds = 0;
    if (!work) return CT_OK;
    ct_dist_group *group = &ct_dist_group_state;
    pthread_mutex_lock(&group->work_lock);
    while (!work->done) pthread_cond_wait(&group->work_changed, &group->work_lock);
    pthread_mutex_unlock(&group->work_lock);
    ct_status status = work->status;
    if (seconds) *seconds = work->seconds;
    if (status != CT_OK) {
        ct_error(status, "%s", work->message);
    } else if (work->host != work->tensor) {
        ct_api_enter();
        status = ct_copy_(work->tensor, work->host);
        ct_api_return(NULL);
    }
    work_free(work);
    return status;
}

ct_status ct_dist_work_wait(ct_dist_work *work) { return ct_dist_work_wait_timed(work, NULL); }
