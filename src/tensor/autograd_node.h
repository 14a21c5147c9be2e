/* The graph autograd records: one node per op output, with edges to the nodes (or leaves) of its
 * inputs. It lives in the tensor layer because tensors point to it; the ops create nodes and
 * provide their backward functions, and the autograd layer's engine walks them. */
#ifndef CT_AUTOGRAD_NODE_H
#define CT_AUTOGRAD_NODE_H

#include <stdatomic.h>

#include "ctorch/autograd.h"
#include "tensor/tensor_internal.h"

typedef struct ct_node ct_node;

/* Computes the gradients of the node's inputs (grad_inputs[i], new references, NULL for "no
 * gradient") from the gradient of its output. Runs with grad mode off. */
typedef ct_status (*ct_backward_fn)(ct_node *node, const ct_tensor *grad_output, ct_tensor **grad_inputs);

#define CT_NODE_MAX_SAVED 6 /* fused attention saves q, k, v, its output and the log-sum-exp */

/* What an input looked like, so that backward can return a gradient of its shape and dtype. */
typedef struct ct_input_meta {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    ct_dtype dtype;
    ct_device device;
} ct_input_meta;

struct ct_node {
    atomic_int refcount;
    const char *name;
    ct_backward_fn backward;
    int ninputs;
    ct_node **next_nodes;     /* per input: its grad_fn (retained), or NULL */
    ct_tensor **next_leaves;  /* per input: the leaf that accumulates (retained), or NULL */
    ct_input_meta *inputs;    /* per input */
    ct_tensor *saved[CT_NODE_MAX_SAVED]; /* detached tensors the backward needs */
    int64_t ints[CT_MAX_DIMS * 2];       /* the op's integer arguments (dims, sizes, ...) */
    double scalars[4];
    bool saved_released;      /* a backward without retain_graph freed the saved tensors */
    /* the engine's bookkeeping during one backward */
    int dependencies;
    ct_tensor *grad_sum;
    bool visited;
};

/* A leaf's post-accumulate-grad hook (a list in registration order; see ct_autograd.h). */
typedef struct ct_grad_hook {
    ct_grad_hook_fn fn;
    void *context;
    struct ct_grad_hook *next;
} ct_grad_hook;
/* Frees a tensor's hook list (when the tensor goes). */
void ct_grad_hooks_free(ct_grad_hook *hooks);

/* Does an op on these inputs record a node (grad mode on and any input requires grad)? NULL
 * inputs are allowed and ignored. */
bool ct_autograd_needed(const ct_tensor *const *inputs, int count);
/* Creates out's node: edges to the inputs, their metadata; out then requires grad. NULL (with
 * an error) when out of host memory. */
ct_node *ct_autograd_record(ct_tensor *out, const char *name, ct_backward_fn backward,
                            const ct_tensor *const *inputs, int count);
/* Keeps a detached reference to t for the backward (slot = the next free one). */
ct_status ct_node_save(ct_node *node, const ct_tensor *t);
void ct_node_release(ct_node *node);
/* Frees the saved tensors (after a backward that does not retain the graph). */
void ct_node_release_saved(ct_node *node);

#endif
