/* The generator behind ct_rand, ct_randn and ct_randint, exposed for tests. */
#ifndef CT_RANDOM_INTERNAL_H
#define CT_RANDOM_INTERNAL_H

#include <stdint.h>

/* Philox 4x32-10 of one counter block with one key: the same function the random kernels
 * run (kernels/random.ct), so that it can be checked against the published answers. */
void ct_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* PyTorch's default seed (torch.initial_seed() of a fresh process). */
#define CT_DEFAULT_SEED UINT64_C(67280421310721)

#endif
