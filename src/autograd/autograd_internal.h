/* The autograd layer's insides: the engine's lock, shared by the engine and the hooks, and the
 * callbacks queued during a backward. */
#ifndef CT_AUTOGRAD_INTERNAL_H
#define CT_AUTOGRAD_INTERNAL_H

#include <pthread.h>

#include "tensor/autograd_node.h"

/* One backward at a time in the process (engine.c says why); hook lists change under it too. */
extern pthread_mutex_t ct_autograd_engine_lock;

/* Runs leaf's post-accumulate-grad hooks in order; the first failure stops them. */
ct_status ct_autograd_run_hooks(ct_tensor *leaf);

/* Whether this thread is running a backward (its functions, hooks and callbacks). */
bool ct_autograd_in_backward(void);
/* The backward of this thread has started (callbacks may be queued) or finished. */
void ct_autograd_backward_begin(void);
/* Runs the queued callbacks in order with the backward's status and empties the queue; returns
 * the backward's status, or the first callback's failure when the backward had none. */
ct_status ct_autograd_backward_end(ct_status status);

#endif
