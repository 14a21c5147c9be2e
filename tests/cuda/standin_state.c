/* The stand-in CUDA driver's shared state (standin_internal.h): the lock, the call counts, what
 * each thread has, and complaints on stderr. */
#include "standin_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

pthread_mutex_t standin_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t standin_changed = PTHREAD_COND_INITIALIZER;
ctorch_standin_counts standin_call_counts;

void standin_complain(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "ctorch CUDA stand-in: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
}

/* Per thread: the current context, and whether a host function is running. In pthread keys, not
 * _Thread_local: a dlopen'ed library's _Thread_local is dynamic TLS, which LeakSanitizer's check
 * at exit misreads in threads that never touched it (and crashes). */
static pthread_key_t current_key, host_function_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static void make_keys(void)
{
    pthread_key_create(&current_key, NULL);
    pthread_key_create(&host_function_key, NULL);
}
CUcontext standin_current_context(void)
{
    pthread_once(&keys_once, make_keys);
    return pthread_getspecific(current_key);
}
void standin_set_current_context(CUcontext ctx)
{
    pthread_once(&keys_once, make_keys);
    pthread_setspecific(current_key, ctx);
}
bool standin_in_host_function(void)
{
    pthread_once(&keys_once, make_keys);
    return pthread_getspecific(host_function_key) != NULL;
}
void standin_set_in_host_function(bool yes)
{
    pthread_once(&keys_once, make_keys);
    pthread_setspecific(host_function_key, yes ? (void *)1 : NULL);
}

void *standin_checked_calloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (!p) {
        standin_complain("host out of memory");
        abort();
    }
    return p;
}

CUresult standin_leave(CUresult result)
{
    pthread_mutex_unlock(&standin_lock);
    return result;
}

