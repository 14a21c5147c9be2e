/* What the ops' front ends call to follow autocast (include/ctorch/amp.h). An op of a policy
 * starts with
 *     CT_AUTOCAST(policy, call(casted...), inputs...)
 * right after CT_API_ENTER: where autocast asks for a cast of any input, the op runs again on the
 * cast inputs (which then need none) and returns that; otherwise the op goes on. */
#ifndef CT_OPS_AUTOCAST_H
#define CT_OPS_AUTOCAST_H

#include "ctorch/amp.h"
#include "ctorch/tensor.h"

typedef enum ct_autocast_policy {
    CT_AUTOCAST_LOWER,   /* matrix products: float32 inputs go to the region's dtype */
    CT_AUTOCAST_FLOAT32, /* range-hungry ops: 16-bit inputs go to float32 */
} ct_autocast_policy;

/* Is any region open on this thread (a cheap test before anything else). */
bool ct_autocast_any(void);
/* For up to 3 inputs (NULL entries stay NULL): true when autocast casts at least one, with
 * casted[k] a new reference for every non-NULL input (the input itself, referenced again, where
 * it needs no cast); casted entries NULL after a failed cast (the error is recorded). False when
 * nothing is cast (casted untouched). */
bool ct_autocast_inputs(ct_autocast_policy policy, const ct_tensor *const *inputs, int count,
                        ct_tensor **casted);

/* The op again on its cast inputs c_[0..n): `call` names them c_[0], c_[1], c_[2]; its result
 * goes out through RETURN (ct_api_return in public calls). */
#define CT_AUTOCAST_RUN_(RETURN, policy, call, n, ...)                                           \
    if (ct_autocast_any()) {                                                                     \
        const ct_tensor *in_[3] = {__VA_ARGS__};                                                 \
        ct_tensor *c_[3] = {NULL, NULL, NULL};                                                   \
        if (ct_autocast_inputs(policy, in_, n, c_)) {                                            \
            bool ready_ = true;                                                                  \
            for (int k_ = 0; k_ < (n); k_++) ready_ = ready_ && (!in_[k_] || c_[k_]);            \
            ct_tensor *r_ = ready_ ? (call) : NULL;                                              \
            for (int k_ = 0; k_ < (n); k_++) ct_release(c_[k_]);                                 \
            return RETURN(r_);                                                                   \
        }                                                                                        \
    }

#define CT_AUTOCAST_PASS_(r) (r)
#define CT_AUTOCAST1(policy, call, a) CT_AUTOCAST_RUN_(ct_api_return, policy, call, 1, a)
#define CT_AUTOCAST2(policy, call, a, b) CT_AUTOCAST_RUN_(ct_api_return, policy, call, 2, a, b)
#define CT_AUTOCAST3(policy, call, a, b, c) CT_AUTOCAST_RUN_(ct_api_return, policy, call, 3, a, b, c)
/* In an internal function, whose public caller returns through ct_api_return. */
#define CT_AUTOCAST_INTERNAL3(policy, call, a, b, c) CT_AUTOCAST_RUN_(CT_AUTOCAST_PASS_, policy, call, 3, a, b, c)

#endif
