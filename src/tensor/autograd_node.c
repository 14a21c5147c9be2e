/* Recording the graph: grad mode, requires_grad, nodes and their edges. */
#include <stdlib.h>
#include <string.h>

#include "tensor/autograd_node.h"

static _Thread_local int no_grad_depth;
static _Thread_local bool grad_disabled;

bool ct_is_grad_enabled(void) { return !grad_disabled && no_grad_depth == 0; }

bool ct_set_grad_enabled(bool enabled)
{
    bool previous = !grad_disabled;
    grad_disabled = !enabled;
    return previous;
}

void ct_no_grad_push(void) { no_grad_depth++; }

void ct_no_grad_pop(void)
{
    if (no_grad_depth > 0) no_grad_depth--;
}

bool ct_autograd_needed(const ct_tensor *const *inputs, int count)
{
    if (!ct_is_grad_enabled()) return false;
    for (int i = 0; i < count; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

ct_node *ct_autograd_record(ct_tensor *out, const char *name, ct_backward_fn backward,
                            const ct_tensor *const *inputs, int count)
{
    /* One block: the node, then its per-input metadata and edges (an op records one per call). */
    size_t n = (size_t)count;
    ct_node *node = ct_zalloc(sizeof *node + n * (sizeof(ct_input_meta) + 2 * sizeof(void *)));
    if (!node) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory to record the graph", name);
    ct_input_meta *metas = (ct_input_meta *)(node + 1);
    ct_node **next_nodes = (ct_node **)(metas + n);
    ct_tensor **next_leaves = (ct_tensor **)(next_nodes + n);
    atomic_init(&node->refcount, 1);
    node->name = name;
    node->backward = backward;
    node->ninputs = count;
    node->next_nodes = next_nodes;
    node->next_leaves = next_leaves;
    node->inputs = metas;
    for (int i = 0; i < count; i++) {
        const ct_tensor *in = inputs[i];
        if (!in) continue;
        metas[i].ndim = in->ndim;
        memcpy(metas[i].shape, in->shape, sizeof(int64_t) * (size_t)in->ndim);
        metas[i].dtype = in->dtype;
        metas[i].device = in->storage->device;
        if (!in->requires_grad) continue;
        if (in->grad_fn) {
            atomic_fetch_add(&in->grad_fn->refcount, 1);
            next_nodes[i] = in->grad_fn;
        } else {
            atomic_fetch_add(&((ct_tensor *)in)->refcount, 1);
            next_leaves[i] = (ct_tensor *)in;
        }
    }
    out->requires_grad = true;
    out->grad_fn = node;
    return node;
}

ct_status ct_node_save(ct_node *node, const ct_tensor *t)
{
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++)
        if (!node->saved[i]) {
            /* A detached view: saving an op's own output must not make a reference cycle. */
            node->saved[i] = ct_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset);
            return node->saved[i] ? CT_OK : ct_last_error();
        }
    return ct_error(CT_ERR_INTERNAL, "%s: more than %d saved tensors", node->name, CT_NODE_MAX_SAVED);
}

void ct_node_release_saved(ct_node *node)
{
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        if (node->saved[i]) node->saved_released = true;
        ct_release(node->saved[i]);
        node->saved[i] = NULL;
    }
}

void ct_node_release(ct_node *node)
{
    /* Long chains (an RNN over many steps) would recurse deeply: walk them in a loop. */
    while (node && atomic_fetch_sub(&node->refcount, 1) == 1) {
        ct_node_release_saved(node);
        ct_node *chain = NULL;
        for (int i = 0; i < node->ninputs; i++) {
            ct_release(node->next_leaves[i]);
            if (!node->next_nodes[i]) continue;
            if (!chain)
                chain = node->next_nodes[i];
            else
                ct_node_release(node->next_nodes[i]);
        }
        ct_release(node->grad_sum);
        free(node);
        node = chain;
    }
}

/* ---- the tensor side ---- */

ct_status ct_requires_grad_(ct_tensor *t, bool requires_grad)
{
    if (ct_tensor_unusable("ct_requires_grad_", "t", t)) return ct_last_error();
    if (t->grad_fn && !requires_grad)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_requires_grad_: this tensor was made by %s; "
                        "only leaves can stop requiring grad (use ct_detach)", t->grad_fn->name);
    if (requires_grad && !ct_dtype_is_floating(t->dtype))
        return ct_error(CT_ERR_DTYPE, "ct_requires_grad_: only floating tensors can require "
                        "gradients, and this one is %s; convert it with ct_to_dtype first",
                        ct_dtype_name(t->dtype));
    t->requires_grad = requires_grad;
    return CT_OK;
}

bool ct_requires_grad(const ct_tensor *t)
{
    if (ct_tensor_unusable("ct_requires_grad", "t", t)) return false;
    return t->requires_grad;
}

bool ct_is_leaf(const ct_tensor *t)
{
    if (ct_tensor_unusable("ct_is_leaf", "t", t)) return false;
    return !t->grad_fn;
}

const char *ct_grad_fn_name(const ct_tensor *t)
{
    if (ct_tensor_unusable("ct_grad_fn_name", "t", t)) return NULL;
    return t->grad_fn ? t->grad_fn->name : NULL;
}

ct_tensor *ct_grad(const ct_tensor *t)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_grad", "t", t)) return ct_api_return(NULL);
    if (!t->grad) return ct_api_return(NULL);
    atomic_fetch_add(&t->grad->refcount, 1);
    return ct_api_return(t->grad);
}

void ct_zero_grad(ct_tensor *t)
{
    if (!t) {
        ct_null_argument("ct_zero_grad", "t");
        return;
    }
    if (!t->grad) return;
    ct_api_enter();
    ct_release(t->grad);
    t->grad = NULL;
    ct_api_return(NULL);
}

ct_tensor *ct_detach(const ct_tensor *t)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_detach", "t", t)) return ct_api_return(NULL);
    return ct_api_return(ct_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset));
}

void ct_grad_hooks_free(ct_grad_hook *hooks)
{
    while (hooks) {
        ct_grad_hook *next = hooks->next;
        free(hooks);
        hooks = next;
    }
}
