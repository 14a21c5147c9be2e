/* Which numbers a dtype holds: a number handed to a tensor of that dtype (a fill value, the
 * values of a sequence) must fit, as PyTorch's "value cannot be converted to type uint8_t without
 * overflow". Converting one that does not would be undefined behaviour in C and differ between
 * devices. */
#include <float.h>
#include <math.h>

#include "tensor/tensor_internal.h"

bool ct_dtype_holds(ct_dtype dtype, double value)
{
    switch (dtype) {
    case CT_F64:
    case CT_BOOL: return true;
    /* A float32 holds infinities and NaN, and finite values up to FLT_MAX (as PyTorch). */
    case CT_F32: return !isfinite(value) || fabs(value) <= FLT_MAX;
    /* ...and the 16-bit formats up to their largest finite value (as torch.full refuses 1e5 for
     * float16) */
    case CT_F16: return !isfinite(value) || fabs(value) <= 65504.0;
    case CT_BF16: return !isfinite(value) || fabs(value) <= 3.3895313892515355e38;
    /* Integers: the value truncated toward zero must be in range (NaN and infinities are not). */
    case CT_I32: return value > -2147483649.0 && value < 2147483648.0;
    case CT_I64: return value >= -9223372036854775808.0 && value < 9223372036854775808.0;
    /* ...and uint8 also the integers -255 to -1, which wrap to 1 to 255: PyTorch takes them from
     * an integer fill value (torch.full(..., -1, dtype=torch.uint8) is 255) */
    case CT_U8: return (value > -1.0 && value < 256.0) || (value >= -255.0 && value < 0 && value == floor(value));
    default: return false;
    }
}

const char *ct_dtype_range_text(ct_dtype dtype)
{
    switch (dtype) {
    case CT_F32: return "finite values up to 3.40282e+38 in magnitude, infinities and NaN";
    case CT_F16: return "finite values up to 65504 in magnitude, infinities and NaN";
    case CT_BF16: return "finite values up to 3.38953e+38 in magnitude, infinities and NaN";
    case CT_I32: return "integers from -2147483648 to 2147483647";
    case CT_I64: return "integers from -9223372036854775808 to 9223372036854775807";
    case CT_U8: return "integers from 0 to 255 (-255 to -1 wrap around to 1 to 255)";
    default: return "any value";
    }
}

ct_status ct_check_value_fits(const char *function, const char *what, double value, ct_dtype dtype)
{
    if (ct_dtype_holds(dtype, value)) return CT_OK;
    return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s %.17g cannot be converted to %s without "
                    "overflow; %s holds %s", function, what, value, ct_dtype_name(dtype),
                    ct_dtype_name(dtype), ct_dtype_range_text(dtype));
}
