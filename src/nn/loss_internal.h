/* Helpers of the losses composed of ops (loss_elementwise.c, loss_classes.c). */
#ifndef CT_NN_LOSS_INTERNAL_H
#define CT_NN_LOSS_INTERNAL_H

#include "nn/module_internal.h"
#include "ops/nn_internal.h"

/* The intermediate tensors of a composed loss, released together at the end: a formula can nest
 * calls (an op given NULL returns NULL and keeps the first error). */
typedef struct ct_loss_temps {
    ct_tensor *t[32];
    int n;
} ct_loss_temps;

static inline ct_tensor *ct_loss_temp(ct_loss_temps *temps, ct_tensor *t)
{
    if (t && temps->n < 32) temps->t[temps->n++] = t;
    return t;
}

static inline void ct_loss_temps_release(ct_loss_temps *temps)
{
    for (int i = 0; i < temps->n; i++) ct_release(temps->t[i]);
    temps->n = 0;
}

/* The elementwise losses reduced as asked: a new reference (NULL passes on). */
ct_tensor *ct_loss_reduce(const char *function, const ct_tensor *losses, ct_reduction reduction);
/* CT_ERR_INVALID_ARGUMENT unless reduction is MEAN, SUM or NONE (or BATCHMEAN where allowed). */
ct_status ct_loss_check_reduction(const char *function, ct_reduction reduction, bool batchmean);

#endif
