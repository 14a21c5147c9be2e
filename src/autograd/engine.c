/* The backward engine: from a root, visit every node that leads to it, then run the nodes in an
 * order where each runs once all the gradients of its output have arrived (Kahn's algorithm over
 * the reversed graph), summing gradients that meet and accumulating them into the leaves. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/ops.h"
#include "autograd/autograd_internal.h"

typedef struct node_list {
    ct_node **items;
    size_t count, capacity;
} node_list;

static bool list_push(node_list *list, ct_node *node)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 64;
        ct_node **items = realloc(list->items, capacity * sizeof *items);
        if (!items) return false;
        list->items = items;
        list->capacity = capacity;
    }
    list->items[list->count++] = node;
    return true;
}

/* Every node reachable from root, each once, with its count of incoming edges. */
static ct_status collect(ct_node *root, node_list *all)
{
    node_list stack = {0};
    ct_status status = CT_OK;
    root->visited = true;
    if (!list_push(all, root) || !list_push(&stack, root)) status = CT_ERR_OUT_OF_MEMORY;
    while (status == CT_OK && stack.count > 0) {
        ct_node *node = stack.items[--stack.count];
        for (int i = 0; i < node->ninputs; i++) {
            if (node->next_leaves[i]) node->next_leaves[i]->pending_grads++;
            ct_node *next = node->next_nodes[i];
            if (!next) continue;
            next->dependencies++;
            if (next->visited) continue;
            next->visited = true;
            if (!list_push(all, next) || !list_push(&stack, next)) status = CT_ERR_OUT_OF_MEMORY;
        }
    }
    free(stack.items);
    if (status != CT_OK) return ct_error(status, "ct_backward: no host memory to walk the graph");
    return CT_OK;
}

/* *sum += grad (out of place, so a gradient shared by two edges is never written through). */
static ct_status accumulate(ct_tensor **sum, ct_tensor *grad)
{
    if (!*sum) {
        *sum = grad;
        return CT_OK;
    }
    ct_tensor *total = ct_add(*sum, grad);
    ct_release(grad);
    if (!total) return ct_last_error();
    ct_release(*sum);
    *sum = total;
    return CT_OK;
}

/* A gradient must have its input's shape and dtype: a mismatch is a bug in a backward. */
static ct_status check_gradient(const ct_node *node, int input, const ct_tensor *grad)
{
    const ct_input_meta *meta = &node->inputs[input];
    if (grad->ndim == meta->ndim && !memcmp(grad->shape, meta->shape, sizeof(int64_t) * (size_t)meta->ndim) &&
        grad->dtype == meta->dtype && ct_device_equal(grad->storage->device, meta->device))
        return CT_OK;
    char a[256], b[256], da[CT_DEVICE_STRING_MAX], db[CT_DEVICE_STRING_MAX];
    return ct_error(CT_ERR_INTERNAL, "ct_backward: %s gave input %d a gradient of shape %s (%s, on %s) "
                    "for an input of shape %s (%s, on %s)", node->name, input,
                    ct_shape_format(grad->shape, grad->ndim, a, sizeof a), ct_dtype_name(grad->dtype),
                    ct_device_format(grad->storage->device, da, sizeof da),
                    ct_shape_format(meta->shape, meta->ndim, b, sizeof b), ct_dtype_name(meta->dtype),
                    ct_device_format(meta->device, db, sizeof db));
}

/* One backward at a time in the process: the engine keeps its bookkeeping in the nodes and adds
 * into the leaves' .grad, and graphs recorded by different threads may share both (DataParallel's
 * replicas meet in the wrapped module's parameters; two threads may train one model). */
pthread_mutex_t ct_autograd_engine_lock = PTHREAD_MUTEX_INITIALIZER;

static ct_status run_graph(ct_node *root, ct_tensor *root_grad, bool retain_graph)
{
    node_list all = {0}, ready = {0};
    ct_status status = collect(root, &all);
    root->grad_sum = root_grad;
    if (status == CT_OK && !list_push(&ready, root)) status = ct_error(CT_ERR_OUT_OF_MEMORY, "ct_backward: no host memory");
    while (status == CT_OK && ready.count > 0) {
        ct_node *node = ready.items[--ready.count];
        ct_tensor *grad_output = node->grad_sum;
        node->grad_sum = NULL;
        ct_tensor **grads = calloc((size_t)node->ninputs, sizeof *grads);
        if (!grads) status = ct_error(CT_ERR_OUT_OF_MEMORY, "ct_backward: no host memory");
        if (status == CT_OK && grad_output && node->saved_released)
            status = ct_error(CT_ERR_INVALID_ARGUMENT, "ct_backward: %s's saved tensors were freed "
                              "by an earlier backward; pass retain_graph to ct_backward_with the "
                              "first time to backward through the graph again", node->name);
        if (status == CT_OK && grad_output) status = node->backward(node, grad_output, grads);
        ct_release(grad_output);
        for (int i = 0; i < node->ninputs; i++) {
            if (status == CT_OK && grads[i]) status = check_gradient(node, i, grads[i]);
            if (status == CT_OK && grads[i] && node->next_leaves[i]) {
                status = accumulate(&node->next_leaves[i]->grad, grads[i]);
                grads[i] = NULL;
            } else if (status == CT_OK && grads[i] && node->next_nodes[i]) {
                status = accumulate(&node->next_nodes[i]->grad_sum, grads[i]);
                grads[i] = NULL;
            }
            ct_release(grads[i]);
            /* Every edge into the leaf has run: its gradient of this backward is complete. */
            ct_tensor *leaf = node->next_leaves[i];
            if (leaf && --leaf->pending_grads == 0 && leaf->grad_hooks && status == CT_OK)
                status = ct_autograd_run_hooks(leaf);
            ct_node *next = node->next_nodes[i];
            if (next && --next->dependencies == 0 && status == CT_OK && !list_push(&ready, next))
                status = ct_error(CT_ERR_OUT_OF_MEMORY, "ct_backward: no host memory");
        }
        free(grads);
    }
    for (size_t i = 0; i < all.count; i++) {
        ct_node *node = all.items[i];
        node->visited = false;
        node->dependencies = 0;
        /* A failure leaves edges unrun; on success every leaf's count is back to 0. */
        for (int input = 0; status != CT_OK && input < node->ninputs; input++)
            if (node->next_leaves[input]) node->next_leaves[input]->pending_grads = 0;
        ct_release(node->grad_sum);
        node->grad_sum = NULL;
        if (!retain_graph) ct_node_release_saved(node);
    }
    free(all.items);
    free(ready.items);
    return status;
}

static ct_status backward(ct_tensor *root, const ct_tensor *gradient, bool retain_graph)
{
    if (ct_tensor_unusable("ct_backward", "root", root)) return ct_last_error();
    if (!root->requires_grad)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_backward: the tensor does not require grad "
                        "and has no grad_fn; mark the inputs with ct_requires_grad_ before "
                        "computing it (and not under ct_no_grad_push)");
    ct_tensor *grad;
    if (gradient) {
        char a[256], b[256];
        if (gradient->ndim != root->ndim || memcmp(gradient->shape, root->shape, sizeof(int64_t) * (size_t)root->ndim))
            return ct_error(CT_ERR_SHAPE, "ct_backward: the gradient has shape %s but the tensor %s",
                            ct_shape_format(gradient->shape, gradient->ndim, a, sizeof a),
                            ct_shape_format(root->shape, root->ndim, b, sizeof b));
        ct_status status = ct_check_same_device("ct_backward", root, gradient);
        if (status != CT_OK) return status;
        grad = ct_to_dtype(gradient, root->dtype);
    } else {
        if (ct_numel(root) != 1) {
            char a[256];
            return ct_error(CT_ERR_SHAPE, "ct_backward: the tensor has shape %s; a gradient is "
                            "implied only for one element (use ct_backward_with and give one)",
                            ct_shape_format(root->shape, root->ndim, a, sizeof a));
        }
        grad = ct_ones(root->shape, root->ndim, root->dtype, root->storage->device);
    }
    if (!grad) return ct_last_error();
    pthread_mutex_lock(&ct_autograd_engine_lock);
    bool was_enabled = ct_set_grad_enabled(false);
    ct_autograd_backward_begin();
    ct_status status;
    if (!root->grad_fn) {
        status = accumulate(&root->grad, grad); /* a leaf: its own gradient */
        if (status == CT_OK && root->grad_hooks) status = ct_autograd_run_hooks(root);
    } else {
        status = run_graph(root->grad_fn, grad, retain_graph);
    }
    status = ct_autograd_backward_end(status);
    ct_set_grad_enabled(was_enabled);
    pthread_mutex_unlock(&ct_autograd_engine_lock);
    return status;
}

ct_status ct_backward_with(ct_tensor *root, const ct_tensor *gradient, bool retain_graph)
{
    ct_api_enter();
    ct_status status = backward(root, gradient, retain_graph);
    ct_api_return(NULL);
    return status;
}

ct_status ct_backward(ct_tensor *root) { return ct_backward_with(root, NULL, false); }
