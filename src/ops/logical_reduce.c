/* torch.any, all, equal, isclose, allclose, composed of comparisons and sums (the counts are
 * int64, so no dtype or device needs a kernel of its own). equal and allclose read one value. */
#include <math.h>

#include "ops/ops_internal.h"

/* The count of a's nonzero (or, zero true: zero) elements, over every dim or along dim. */
static ct_tensor *count(const ct_tensor *a, bool zero, const int *dim, bool keepdim)
{
    ct_tensor *hits = zero ? ct_eq_scalar(a, 0.0) : ct_ne_scalar(a, 0.0);
    ct_tensor *n = hits ? ct_sum(hits, dim, dim ? 1 : 0, keepdim) : NULL;
    ct_release(hits);
    return n;
}

static ct_tensor *any_all(const char *function, const ct_tensor *a, bool all, const int *dim, bool keepdim)
{
    if (!a) return ct_null_argument(function, "a");
    ct_tensor *n = count(a, all, dim, keepdim);
    /* any: some nonzero; all: no zero */
    ct_tensor *out = n ? (all ? ct_eq_scalar(n, 0.0) : ct_gt_scalar(n, 0.0)) : NULL;
    ct_release(n);
    return out;
}

ct_tensor *ct_any(const ct_tensor *a)
{
    CT_API_ENTER;
    return ct_api_return(any_all("ct_any", a, false, NULL, false));
}

ct_tensor *ct_all(const ct_tensor *a)
{
    CT_API_ENTER;
    return ct_api_return(any_all("ct_all", a, true, NULL, false));
}

ct_tensor *ct_any_dim(const ct_tensor *a, int dim, bool keepdim)
{
    CT_API_ENTER;
    return ct_api_return(any_all("ct_any_dim", a, false, &dim, keepdim));
}

ct_tensor *ct_all_dim(const ct_tensor *a, int dim, bool keepdim)
{
    CT_API_ENTER;
    return ct_api_return(any_all("ct_all_dim", a, true, &dim, keepdim));
}

/* *result = the one bool value of flag (released). */
static ct_status read_flag(ct_tensor *flag, bool *result)
{
    double v = 0;
    ct_status status = flag ? ct_item(flag, &v) : ct_last_error();
    ct_release(flag);
    if (status == CT_OK && result) *result = v != 0;
    return status;
}

static ct_status leave(ct_status status)
{
    ct_api_return(NULL);
    return status;
}

ct_status ct_equal(const ct_tensor *a, const ct_tensor *b, bool *result)
{
    CT_API_ENTER;
    if (!a) return leave((ct_null_argument("ct_equal", "a"), ct_last_error()));
    if (!b) return leave((ct_null_argument("ct_equal", "b"), ct_last_error()));
    if (ct_check_same_device("ct_equal", a, b) != CT_OK) return leave(ct_last_error());
    bool same = a->ndim == b->ndim;
    for (int k = 0; same && k < a->ndim; k++) same = a->shape[k] == b->shape[k];
    if (!same) {
        if (result) *result = false;
        return leave(CT_OK);
    }
    ct_tensor *eq = ct_eq(a, b);
    ct_tensor *all = eq ? ct_all(eq) : NULL;
    ct_release(eq);
    return leave(read_flag(all, result));
}

/* bool tensors compare as integers (sub refuses bool) */
static ct_tensor *numeric(const ct_tensor *t)
{
    return t->dtype == CT_BOOL ? ct_to_dtype(t, CT_U8) : ct_retain((ct_tensor *)t);
}

static ct_tensor *isclose(const char *function, const ct_tensor *a, const ct_tensor *b, double rtol,
                          double atol, bool equal_nan)
{
    if (!a) return ct_null_argument(function, "a");
    if (!b) return ct_null_argument(function, "b");
    if (!(rtol >= 0.0) || !(atol >= 0.0))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: rtol %g and atol %g must be >= 0",
                             function, rtol, atol);
    ct_tensor *x = numeric(a), *y = numeric(b);
    /* equal (infinities of one sign included), or a finite difference within the tolerance */
    ct_tensor *close = ct_eq(x, y);
    ct_tensor *diff = ct_sub(x, y);
    ct_tensor *error = ct_abs(diff);
    ct_tensor *magnitude = ct_abs(y);
    ct_tensor *relative = ct_mul_scalar(magnitude, rtol);
    ct_tensor *allowed = ct_add_scalar(relative, atol);
    ct_tensor *small = ct_le(error, allowed);
    ct_tensor *finite = ct_lt_scalar(error, INFINITY);
    ct_tensor *within = ct_mul(small, finite);
    ct_tensor *out = ct_maximum(close, within);
    ct_tensor *t[10] = {close, diff, error, magnitude, relative, allowed, small, finite, within, y};
    if (out && equal_nan && ct_dtype_is_floating(x->dtype)) {
        ct_tensor *nan_a = ct_ne(x, x), *nan_b = ct_ne(y, y);
        ct_tensor *both = nan_a && nan_b ? ct_mul(nan_a, nan_b) : NULL;
        ct_tensor *with_nan = both ? ct_maximum(out, both) : NULL;
        ct_release(nan_a);
        ct_release(nan_b);
        ct_release(both);
        ct_release(out);
        out = with_nan;
    }
    for (int k = 0; k < 10; k++) ct_release(t[k]);
    ct_release(x);
    return out;
}

ct_tensor *ct_isclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol, bool equal_nan)
{
    CT_API_ENTER;
    return ct_api_return(isclose("ct_isclose", a, b, rtol, atol, equal_nan));
}

ct_status ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol,
                      bool equal_nan, bool *result)
{
    CT_API_ENTER;
    ct_tensor *close = isclose("ct_allclose", a, b, rtol, atol, equal_nan);
    ct_tensor *all = close ? ct_all(close) : NULL;
    ct_release(close);
    return leave(read_flag(all, result));
}
