/* Post-accumulate-grad hooks of leaves, and callbacks that run when a backward finishes: what
 * DistributedDataParallel needs to start a bucket's all-reduce as soon as its gradients are
 * ready, and to wait for them all before ct_backward returns. */
#include <stdlib.h>

#include "autograd/autograd_internal.h"

ct_status ct_register_post_accumulate_grad_hook(ct_tensor *leaf, ct_grad_hook_fn fn, void *context)
{
    static const char *FN = "ct_register_post_accumulate_grad_hook";
    if (!leaf) return ct_null_argument(FN, "leaf"), ct_last_error();
    if (!fn) return ct_null_argument(FN, "fn"), ct_last_error();
    if (!leaf->requires_grad || leaf->grad_fn)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the tensor is not a leaf that requires grad (%s); "
                        "hooks go on leaves, such as a module's parameters", FN,
                        leaf->grad_fn ? "it was made by an op" : "it does not require grad");
    ct_grad_hook *hook = malloc(sizeof *hook);
    if (!hook) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", FN);
    *hook = (ct_grad_hook){.fn = fn, .context = context};
    pthread_mutex_lock(&ct_autograd_engine_lock);
    ct_grad_hook **last = &leaf->grad_hooks;
    while (*last) last = &(*last)->next;
    *last = hook;
    pthread_mutex_unlock(&ct_autograd_engine_lock);
    return CT_OK;
}

ct_status ct_remove_post_accumulate_grad_hook(ct_tensor *leaf, ct_grad_hook_fn fn, void *context)
{
    static const char *FN = "ct_remove_post_accumulate_grad_hook";
    if (!leaf) return ct_null_argument(FN, "leaf"), ct_last_error();
    if (!fn) return ct_null_argument(FN, "fn"), ct_last_error();
    pthread_mutex_lock(&ct_autograd_engine_lock);
    ct_grad_hook *found = NULL;
    for (ct_grad_hook **at = &leaf->grad_hooks; *at; at = &(*at)->next)
        if ((*at)->fn == fn && (*at)->context == context) {
            found = *at;
            *at = found->next;
            break;
        }
    pthread_mutex_unlock(&ct_autograd_engine_lock);
    if (!found)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the tensor has no hook with this function and "
                        "context", FN);
    free(found);
    return CT_OK;
}

ct_status ct_autograd_run_hooks(ct_tensor *leaf)
{
    for (ct_grad_hook *hook = leaf->grad_hooks; hook; hook = hook->next) {
        ct_status status = hook->fn(leaf, hook->context);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* ---- callbacks at the end of a backward ----
 * Backwards run one at a time, but the queue is kept per thread so that a hook that runs in
 * another thread's backward cannot reach it by mistake. A fixed queue: nothing to free when a
 * thread ends, and a backward needs one callback per DDP wrapper, not hundreds. */
#define MAX_CALLBACKS 64

typedef struct queued_callback {
    ct_backward_callback_fn fn;
    void *context;
} queued_callback;

static _Thread_local bool in_backward;
static _Thread_local queued_callback queue[MAX_CALLBACKS];
static _Thread_local int queue_count;

bool ct_autograd_in_backward(void) { return in_backward; }

void ct_autograd_backward_begin(void)
{
    in_backward = true;
    queue_count = 0;
}

ct_status ct_autograd_queue_callback(ct_backward_callback_fn fn, void *context)
{
    static const char *FN = "ct_autograd_queue_callback";
    if (!fn) return ct_null_argument(FN, "fn"), ct_last_error();
    if (!in_backward)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: no backward is running in this thread; queue "
                        "callbacks from a hook or a backward function", FN);
    if (queue_count == MAX_CALLBACKS)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: a backward takes at most %d callbacks", FN, MAX_CALLBACKS);
    queue[queue_count++] = (queued_callback){fn, context};
    return CT_OK;
}

ct_status ct_autograd_backward_end(ct_status status)
{
    /* A callback may queue another; each runs once. */
    for (int i = 0; i < queue_count; i++) {
        ct_status own = queue[i].fn(queue[i].context, status);
        if (status == CT_OK) status = own;
    }
    in_backward = false;
    queue_count = 0;
    return status;
}
