/* The time limit of a collective's transfer. Every rank has arrived by then (the agreement before
 * it is polled within the limit: collective_wait.c), so the bytes move through MPI's blocking
 * calls, whose tuned algorithms are several times faster for mid-sized buffers than the
 * non-blocking ones (`ctorch bench all_reduce`, 1M floats over 2 ranks: 0.14-0.5 of raw
 * MPI_Allreduce non-blocking). A blocking call cannot be left, so a transfer that outlasts the
 * limit (a rank stopped or failed during it) is ended as PyTorch's NCCL watchdog ends one: a
 * thread that watches the clock prints what happened and aborts the job. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "distributed/dist_internal.h"

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool running, stop;
    pthread_t thread;
    int64_t number;       /* the collective whose transfer is under way, 0 for none */
    const char *function;
    double deadline;      /* ct_dist_seconds() */
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Noreturn void end_the_job(ct_dist_group *group, const char *function, double limit)
{
    fprintf(stderr, "ctorch: rank %d of %d: %s: the transfer did not complete within %g s (the limit: "
            "CTORCH_DIST_TIMEOUT or ct_dist_set_timeout) although every rank had come to it: a rank stopped or "
            "failed during it; ending the job, as MPI cannot leave a started collective\n", group->rank,
            group->world_size, function, limit);
    fflush(stderr);
    MPI_Abort(group->comm, 1);
    _Exit(1);
}

static void *watchdog_main(void *arg)
{
    ct_dist_group *group = arg;
    pthread_mutex_lock(&watch.lock);
    while (!watch.stop) {
        if (watch.number == 0) {
            pthread_cond_wait(&watch.changed, &watch.lock);
            continue;
        }
        double left = watch.deadline - ct_dist_seconds();
        if (left <= 0) {
            const char *function = watch.function;
            pthread_mutex_unlock(&watch.lock);
            end_the_job(group, function, group->timeout_seconds);
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double seconds = (double)until.tv_sec + 1e-9 * (double)until.tv_nsec + left;
        until.tv_sec = (time_t)seconds;
        until.tv_nsec = (long)((seconds - (double)until.tv_sec) * 1e9);
        pthread_cond_timedwait(&watch.changed, &watch.lock, &until);
    }
    pthread_mutex_unlock(&watch.lock);
    return NULL;
}

void ct_dist_watchdog_start(ct_dist_group *group)
{
    pthread_mutex_lock(&watch.lock);
    if (!watch.running) {
        pthread_condattr_t attributes;
        pthread_condattr_init(&attributes);
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
        pthread_cond_init(&watch.changed, &attributes);
        pthread_condattr_destroy(&attributes);
        watch.stop = false;
        watch.number = 0;
        int code = pthread_create(&watch.thread, NULL, watchdog_main, group);
        watch.running = code == 0;
        if (!watch.running)
            ct_log_message(CT_LOG_WARN, "ct_dist_init: cannot start the thread that watches transfers (error %d): "
                           "a rank stopped in the middle of a transfer will keep the others waiting", code);
    }
    pthread_mutex_unlock(&watch.lock);
}

void ct_dist_watchdog_stop(void)
{
    pthread_mutex_lock(&watch.lock);
    bool running = watch.running;
    watch.stop = true;
    if (running) pthread_cond_broadcast(&watch.changed);
    pthread_mutex_unlock(&watch.lock);
    if (running) pthread_join(watch.thread, NULL);
    pthread_mutex_lock(&watch.lock);
    if (running) pthread_cond_destroy(&watch.changed);
    watch.running = false;
    pthread_mutex_unlock(&watch.lock);
}

void ct_dist_transfer_begin(ct_dist_group *group)
{
    pthread_mutex_lock(&watch.lock);
    if (watch.running) {
        watch.number = group->collective_number;
        watch.function = group->collective_function ? group->collective_function : "a collective";
        watch.deadline = group->started + group->timeout_seconds;
        pthread_cond_signal(&watch.changed);
    }
    pthread_mutex_unlock(&watch.lock);
}

void ct_dist_transfer_end(void)
{
    pthread_mutex_lock(&watch.lock);
    watch.number = 0; /* the watchdog finds nothing under way when it wakes */
    pthread_mutex_unlock(&watch.lock);
}
