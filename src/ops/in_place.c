/* In-place ops of a training step (PyTorch's add_, mul_, zero_, fill_). Each computes the result
 * as the out-of-place op does, then writes it into self, so an operand that overlaps self is
 * read before anything is written.
 *
 * Autograd: PyTorch refuses in-place ops on a leaf that requires grad (outside no_grad), and
 * records them on other tensors of a graph, with a version counter that catches a saved tensor
 * changed before backward. ctorch has no version counter, so it refuses in-place ops on every
 * tensor that requires grad, and with an operand that requires grad, unless grad mode is off
 * (ct_no_grad_push), where they are plain writes (as an optimizer's step on parameters). */
#include "ctorch/autograd.h"
#include "ops/ops_internal.h"

static ct_status check_self(const char *function, const ct_tensor *self, const ct_tensor *other)
{
    if (ct_tensor_unusable(function, "self", self)) return ct_last_error();
    if (!ct_is_grad_enabled()) return CT_OK;
    if (self->requires_grad && !self->grad_fn)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: self is a leaf that requires grad; an in-place "
                        "op on it is refused, as in PyTorch (a leaf Variable that requires grad is "
                        "being used in an in-place operation); run it inside ct_no_grad_push() / "
                        "ct_no_grad_pop()", function);
    if (self->requires_grad)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: self is part of a recorded graph (made by %s); "
                        "ctorch does not record in-place ops (it has no version counter to guard "
                        "the tensors backward saved); use the out-of-place op, or run it inside "
                        "ct_no_grad_push() / ct_no_grad_pop()", function, ct_grad_fn_name(self));
    if (other && other->requires_grad)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: other requires grad, and ctorch does not record "
                        "in-place ops; use the out-of-place op, or run it inside ct_no_grad_push() / "
                        "ct_no_grad_pop()", function);
    return CT_OK;
}

/* Writes result (a new reference, consumed; NULL after a failed op) into self: same shape, and a
 * dtype self can take (PyTorch's can_cast: no floating result into an integer tensor, only bool
 * into bool). */
static ct_status write_into(const char *function, ct_tensor *self, ct_tensor *result)
{
    if (!result) return ct_last_error();
    ct_status status = CT_OK;
    char ss[256], rs[256];
    if (result->ndim != self->ndim ||
        memcmp(result->shape, self->shape, (size_t)self->ndim * sizeof *self->shape) != 0) {
        status = ct_error(CT_ERR_SHAPE, "%s: the result has shape %s, which does not fit self's %s "
                          "(an in-place op's operands must broadcast to self's shape)", function,
                          ct_shape_format(result->shape, result->ndim, rs, sizeof rs),
                          ct_shape_format(self->shape, self->ndim, ss, sizeof ss));
    } else if ((ct_dtype_is_floating(result->dtype) && !ct_dtype_is_floating(self->dtype)) ||
               (self->dtype == CT_BOOL && result->dtype != CT_BOOL)) {
        status = ct_error(CT_ERR_DTYPE, "%s: the result is %s, which cannot be written into self's "
                          "%s (result type can't be cast to the desired output type); convert self "
                          "first or use the out-of-place op", function, ct_dtype_name(result->dtype),
                          ct_dtype_name(self->dtype));
    }
    ct_tensor *cast = status == CT_OK ? ct_to_dtype(result, self->dtype) : NULL;
    if (status == CT_OK) status = cast ? ct_copy_(self, cast) : ct_last_error();
    ct_release(cast);
    ct_release(result);
    return status;
}

/* self = op(self, other) or op(self, s), computed with grad mode off. */
static ct_status in_place(const char *function, ct_tensor *self, const ct_tensor *other,
                          ct_tensor *(*binary)(const ct_tensor *, const ct_tensor *),
                          ct_tensor *(*scalar)(const ct_tensor *, double), double s)
{
    if (binary && !other) {
        if (!self) ct_null_argument(function, "self");
        return ct_null_argument(function, "other"), ct_last_error();
    }
    ct_status status = check_self(function, self, other);
    if (status != CT_OK) return status;
    CT_API_ENTER;
    ct_no_grad_push();
    ct_tensor *result = binary ? binary(self, other) : scalar(self, s);
    ct_no_grad_pop();
    status = write_into(function, self, result);
    ct_api_return(NULL);
    return status;
}

ct_status ct_add_(ct_tensor *self, const ct_tensor *other)
{
    return in_place("ct_add_", self, other, ct_add, NULL, 0);
}

ct_status ct_mul_(ct_tensor *self, const ct_tensor *other)
{
    return in_place("ct_mul_", self, other, ct_mul, NULL, 0);
}

ct_status ct_add_scalar_(ct_tensor *self, double s)
{
    return in_place("ct_add_scalar_", self, NULL, NULL, ct_add_scalar, s);
}

ct_status ct_mul_scalar_(ct_tensor *self, double s)
{
    return in_place("ct_mul_scalar_", self, NULL, NULL, ct_mul_scalar, s);
}

static ct_status fill(const char *function, ct_tensor *self, double value)
{
    ct_status status = check_self(function, self, NULL);
    if (status != CT_OK) return status;
    status = ct_check_value_fits(function, "value", value, self->dtype);
    if (status != CT_OK || ct_numel(self) == 0) return status;
    if (ct_is_contiguous(self)) return ct_tensor_fill(self, value);
    CT_API_ENTER;
    ct_tensor *one = ct_full(NULL, 0, value, self->dtype, self->storage->device);
    ct_tensor *spread = one ? ct_expand(one, self->shape, self->ndim) : NULL;
    status = spread ? ct_copy_(self, spread) : ct_last_error();
    ct_release(spread);
    ct_release(one);
    ct_api_return(NULL);
    return status;
}

ct_status ct_fill_(ct_tensor *self, double value) { return fill("ct_fill_", self, value); }

ct_status ct_zero_(ct_tensor *self) { return fill("ct_zero_", self, 0); }
