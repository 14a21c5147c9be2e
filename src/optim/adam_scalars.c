/* Adam's bias-correction scalars on the host, from the kernels' own functions (optim.ct): a step
 * whose scalars the host computes and a capturable one whose scalars a device computes then give
 * the same bits. Including the kernel source here, rather than copying the functions, keeps the
 * two from drifting apart (as tensor/random_philox.c does for the random numbers). */
#include "kernels/dialect.h"

#pragma GCC diagnostic ignored "-Wunused-parameter" /* kernels ignore buffers they do not use */
#pragma GCC diagnostic ignored "-Wunused-function"  /* the kernels themselves, unused here */
#include "kernels/optim.ct"
#include "optim/optimizer_internal.h"

void ct_adam_scalars(const ct_adam_options *options, int64_t t, double *step_size, double *root)
{
    *step_size = ct_adam_step_size(options->lr, options->beta1, (long)t);
    *root = ct_adam_root(options->beta2, (long)t);
}
