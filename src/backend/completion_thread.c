/* The completion thread of the accelerator backends (completion_thread.h): a FIFO of `done`
 * calls that driver callbacks post to and one detached thread runs, started on first use. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/completion_thread.h"

struct ct_completion {
    ct_backend_done done;
    void *arg;
    struct ct_completion *next;
};

static pthread_mutex_t completion_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t completion_ready = PTHREAD_COND_INITIALIZER;
static ct_completion *completion_head, *completion_tail;
static pthread_once_t completion_thread_once = PTHREAD_ONCE_INIT;
static bool completion_thread_running;

static void *run_completions(void *unused)
{
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&completion_lock);
        while (!completion_head) pthread_cond_wait(&completion_ready, &completion_lock);
        ct_completion *c = completion_head;
        completion_head = c->next;
        if (!completion_head) completion_tail = NULL;
        pthread_mutex_unlock(&completion_lock);
        c->done(c->arg);
        free(c);
    }
    return NULL;
}

static void start_completion_thread(void)
{
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    completion_thread_running = pthread_create(&thread, &attributes, run_completions, NULL) == 0;
    pthread_attr_destroy(&attributes);
}

ct_completion *ct_completion_new(ct_backend_done done, void *arg)
{
    pthread_once(&completion_thread_once, start_completion_thread);
    ct_completion *c = completion_thread_running ? calloc(1, sizeof *c) : NULL;
    if (c) *c = (ct_completion){done, arg, NULL};
    return c;
}

void ct_completion_post(ct_completion *c)
{
    pthread_mutex_lock(&completion_lock);
    if (completion_tail) completion_tail->next = c;
    else completion_head = c;
    completion_tail = c;
    pthread_cond_signal(&completion_ready);
    pthread_mutex_unlock(&completion_lock);
}

void ct_completion_discard(ct_completion *c) { free(c); }
