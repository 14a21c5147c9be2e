/* Autocast regions, per thread, and the casts they ask of the ops (see ops/autocast.h). */
#include "ops/autocast.h"

#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

#define AUTOCAST_MAX_DEPTH 64

typedef struct region {
    ct_device_type device_type;
    ct_dtype dtype; /* CT_F16, CT_BF16, or CT_F32 for "off" */
} region;

static _Thread_local region regions[AUTOCAST_MAX_DEPTH];
static _Thread_local int depth;

ct_status ct_autocast_push(ct_device_type device_type, ct_dtype dtype)
{
    if ((int)device_type < 0 || device_type >= CT_DEVICE_TYPE_COUNT)
        return ct_error(CT_ERR_DEVICE, "ct_autocast_push: device type %d is not a ct_device_type",
                        (int)device_type);
    if (dtype != CT_F16 && dtype != CT_BF16 && dtype != CT_F32)
        return ct_error(CT_ERR_DTYPE, "ct_autocast_push: autocast runs in float16 or bfloat16 "
                        "(or float32 to turn it off), not in %s", ct_dtype_name(dtype));
    if (depth == AUTOCAST_MAX_DEPTH)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_autocast_push: %d regions are open on this "
                        "thread, the most ctorch nests; pop one first", AUTOCAST_MAX_DEPTH);
    regions[depth++] = (region){device_type, dtype};
    return CT_OK;
}

ct_status ct_autocast_pop(void)
{
    if (depth == 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_autocast_pop: no autocast region is open on "
                        "this thread (every pop needs a ct_autocast_push before it)");
    depth--;
    return CT_OK;
}

/* A backward runs without autocast: each backward function gives its inputs' dtypes (the casts of
 * the forward are nodes of the graph, so the gradients go back through them); under autocast a
 * reduction in one (Linear's bias gradient, a sum) made float32 gradients of 16-bit inputs.
 * PyTorch's engine casts such gradients back; ctorch's never makes them. */
ct_dtype ct_autocast_dtype(ct_device_type device_type)
{
    if (ct_autograd_in_backward()) return CT_F32;
    for (int k = depth - 1; k >= 0; k--)
        if (regions[k].device_type == device_type) return regions[k].dtype;
    return CT_F32;
}

bool ct_autocast_enabled(ct_device_type device_type) { return ct_autocast_dtype(device_type) != CT_F32; }

bool ct_autocast_any(void) { return depth > 0 && !ct_autograd_in_backward(); }

/* The dtype autocast wants for t under policy, or t's own. Only float32 and the 16-bit dtypes
 * move (PyTorch leaves float64 alone), and only on a device type whose region is on. */
static ct_dtype wanted_dtype(ct_autocast_policy policy, const ct_tensor *t)
{
    ct_dtype own = ct_tensor_dtype(t);
    if (own != CT_F32 && own != CT_F16 && own != CT_BF16) return own;
    ct_dtype low = ct_autocast_dtype(ct_tensor_device(t).type);
    if (low == CT_F32) return own;
    return policy == CT_AUTOCAST_LOWER ? low : CT_F32;
}

bool ct_autocast_inputs(ct_autocast_policy policy, const ct_tensor *const *inputs, int count,
                        ct_tensor **casted)
{
    bool any = false;
    for (int k = 0; k < count; k++)
        any = any || (inputs[k] && wanted_dtype(policy, inputs[k]) != ct_tensor_dtype(inputs[k]));
    if (!any) return false;
    for (int k = 0; k < count; k++) {
        if (!inputs[k]) continue;
        ct_dtype wanted = wanted_dtype(policy, inputs[k]);
        /* ct_to_dtype records the cast, so the gradient comes back in the input's dtype */
        casted[k] = ct_to_dtype(inputs[k], wanted);
    }
    return true;
}
