/* The conformance table's 16-bit results against the op run in float64 on the CPU (see
 * conf_op.half_ulps): a 16-bit op that accumulated or rounded in its own format shows there. */
#include <stdio.h>

#include "harness.h"

/* A 16-bit result against the op run in float64 on the CPU from the same inputs, each input of
 * the dtype under test converted to float64 (see conf_op.half_ulps). */
bool conf_matches_float64(const conf_op *op, const conf_case *c, conf_args *args,
                          ct_tensor *const *bases, const ct_tensor *ref, const ct_tensor *magnitude,
                          conf_where *w)
{
    snprintf(w->device, sizeof w->device, "float64 reference");
    ct_dtype dtype = args->dtype;
    ct_tensor *in[CONF_MAX_INPUTS] = {0};
    for (int j = 0; j < args->count; j++) {
        ct_tensor *base = ct_tensor_dtype(bases[j]) == dtype ? ct_to_dtype(bases[j], CT_F64) : bases[j];
        in[j] = base ? conf_take_views(base, &c->in[j]) : NULL;
        if (!in[j]) {
            conf_report(w, "float64 inputs failed: %s", ct_last_error_message());
            ct_clear_error();
            return false;
        }
    }
    args->dtype = CT_F64;
    args->device = CT_DEVICE_CPU;
    ct_tensor *wide = op->run(in, args);
    if (!wide) {
        conf_report(w, "failed: %s", ct_last_error_message());
        ct_clear_error();
        return false;
    }
    if (!ct_dtype_is_floating(ct_tensor_dtype(wide))) {
        conf_report(w, "gives %s, not a floating result", ct_dtype_name(ct_tensor_dtype(wide)));
        return false;
    }
    /* The float64 result rounded to the 16-bit format: past the format's range (65504 for
     * float16, float32's for bfloat16) the result is infinity, where float64's is finite. */
    ct_tensor *rounded = ct_to_dtype(wide, ct_tensor_dtype(ref));
    ct_tensor *ref64 = ct_to_dtype(ref, CT_F64), *wide64 = rounded ? ct_to_dtype(rounded, CT_F64) : NULL;
    ct_tensor *magnitude64 = magnitude ? ct_to_dtype(magnitude, CT_F64) : NULL;
    if (!ref64 || !wide64 || (magnitude && !magnitude64)) {
        conf_report(w, "converting to float64 failed: %s", ct_last_error_message());
        ct_clear_error();
        return false;
    }
    return conf_compare(w, ref64, wide64, magnitude64, op->half_ulps > 0 ? op->half_ulps : 2,
                        ct_tensor_dtype(ref));
}
