/* The all-reduce autograd records (dist_autograd.h): forward reduces a copy of the input over
 * the ranks, backward reduces the gradient the same way. */
#include "distributed/dist_autograd.h"
#include "distributed/dist_internal.h"
#include "tensor/autograd_node.h"

static const char *const FN = "ct_dist_all_reduce_with_grad";

/* Takes part in the all-reduce the other ranks are in with this rank's error. */
static ct_tensor *abstain(ct_reduce_op op)
{
    ct_dist_abstain(FN, CT_DIST_ALL_REDUCE, (int)op);
    return NULL;
}

static ct_status all_reduce_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *reduced = ct_clone(grad);
    ct_status status = reduced ? ct_dist_all_reduce(reduced, (ct_reduce_op)node->ints[0]) : ct_last_error();
    if (status != CT_OK) {
        ct_release(reduced);
        return status;
    }
    grads[0] = reduced;
    return CT_OK;
}

ct_tensor *ct_dist_all_reduce_with_grad(const ct_tensor *input, ct_reduce_op op)
{
    CT_API_ENTER;
    ct_reduce_op agreed = op == CT_REDUCE_AVG ? CT_REDUCE_AVG : CT_REDUCE_SUM;
    if (!input) return ct_api_return(abstain(agreed));
    if (op != CT_REDUCE_SUM && op != CT_REDUCE_AVG) {
        ct_error(CT_ERR_INVALID_ARGUMENT, "%s: op is %s; only sum and avg have a gradient to reduce "
                 "(use ct_dist_all_reduce for max and min)", FN, ct_reduce_op_name(op));
        return ct_api_return(abstain(agreed));
    }
    ct_no_grad_push(); /* the copy is not part of the graph: the all-reduce is */
    ct_tensor *out = ct_clone(input);
    ct_no_grad_pop();
    if (!out) return ct_api_return(abstain(op));
    if (ct_dist_all_reduce(out, op) != CT_OK) {
        ct_release(out);
        return ct_api_return(NULL);
    }
    const ct_tensor *inputs[1] = {input};
    if (ct_autograd_needed(inputs, 1)) {
        ct_node *node = ct_autograd_record(out, "AllReduceBackward", all_reduce_backward, inputs, 1);
        if (!node) {
            ct_release(out);
            return ct_api_return(NULL);
        }
        node->ints[0] = op;
    }
    return ct_api_return(out);
}
