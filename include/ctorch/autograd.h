/* ctorch autograd: tensors that require gradients, a graph recorded by the ops as they run, and
 * ct_backward, which walks it back and accumulates gradients into the leaves' .grad.
 *
 * Only floating tensors can require gradients. Gradients are accumulated (summed) across
 * backward calls until the grad is cleared with ct_zero_grad. Grad mode is per thread: inside
 * ct_no_grad_push()/ct_no_grad_pop() (nestable) ops record nothing.
 *
 * Threads: ops may record graphs in several threads at once (a new thread starts with grad mode
 * on, whatever its creator's). ct_backward may be called from several threads: backwards run one
 * at a time, so graphs that share nodes or leaves accumulate every gradient. */
#ifndef CTORCH_AUTOGRAD_H
#define CTORCH_AUTOGRAD_H

#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a leaf tensor as requiring (or not) a gradient. */
ct_status ct_requires_grad_(ct_tensor *t, bool requires_grad);
bool ct_requires_grad(const ct_tensor *t);
/* A leaf is a tensor not made by a recorded op (created, or the result of ct_detach). */
bool ct_is_leaf(const ct_tensor *t);
/* The accumulated gradient of t (a new reference), or NULL when there is none (no error). */
ct_tensor *ct_grad(const ct_tensor *t);
/* Drops t's gradient (as PyTorch's zero_grad(set_to_none=True)). */
void ct_zero_grad(ct_tensor *t);
/* The same data as t, outside the graph: a leaf that does not require grad. */
ct_tensor *ct_detach(const ct_tensor *t);
/* "MulBackward" for a tensor made by ct_mul while recording; NULL for leaves. */
const char *ct_grad_fn_name(const ct_tensor *t);

/* Backpropagates from a one-element tensor (its gradient is 1). */
ct_status ct_backward(ct_tensor *root);
/* From any tensor, with the gradient of root (same shape; NULL for a one-element root), keeping
 * the graph's saved tensors for another backward when retain_graph is set. */
ct_status ct_backward_with(ct_tensor *root, const ct_tensor *gradient, bool retain_graph);

/* ---- hooks (what DistributedDataParallel is built on) ----
 * A post-accumulate-grad hook of a leaf (torch's Tensor.register_post_accumulate_grad_hook) is
 * called during a backward once every gradient that backward has for the leaf has been
 * accumulated into its .grad (which may still be NULL when no path gave it one). Hooks run in
 * the thread of ct_backward, in the order they were registered, with grad mode off and while the
 * engine runs no other backward: a hook must not call ct_backward. A hook that returns a status
 * other than CT_OK stops the backward, which returns that status. */
typedef ct_status (*ct_grad_hook_fn)(ct_tensor *leaf, void *context);
/* Registers fn(leaf, context) on leaf (a tensor that requires grad). */
ct_status ct_register_post_accumulate_grad_hook(ct_tensor *leaf, ct_grad_hook_fn fn, void *context);
/* Removes the hook registered with this fn and context (CT_ERR_INVALID_ARGUMENT if none). */
ct_status ct_remove_post_accumulate_grad_hook(ct_tensor *leaf, ct_grad_hook_fn fn, void *context);
/* Called only from a hook (or a backward function): queues fn(context, status) to run once when
 * the current backward has finished, after every node, in the order queued (torch's
 * Variable._execution_engine.queue_callback). status is the backward's: a callback also runs when
 * the backward failed, to let go of what it started; its own failure becomes the backward's
 * status when the backward had none. */
typedef ct_status (*ct_backward_callback_fn)(void *context, ct_status backward_status);
ct_status ct_autograd_queue_callback(ct_backward_callback_fn fn, void *context);

/* Grad mode of this thread: ops record the graph only while it is on (it starts on). */
bool ct_is_grad_enabled(void);
/* Sets it and returns the previous value. */
bool ct_set_grad_enabled(bool enabled);
void ct_no_grad_push(void);
void ct_no_grad_pop(void);

#ifdef __cplusplus
}
#endif
#endif
