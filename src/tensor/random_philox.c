/* The kernels' Philox function, compiled on the host so that tests can check it against the
 * known answers of Random123. Including the kernel source here (rather than copying the
 * function) guarantees that the function tested is the one the devices run. */
#include "kernels/dialect.h"

#pragma GCC diagnostic ignored "-Wunused-parameter" /* kernels ignore buffers they do not use */
#include "kernels/random.ct"
#include "tensor/random_internal.h"

void ct_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint words[4] = {counter[0], counter[1], counter[2], counter[3]};
    ct_philox4x32_10_rounds(words, key[0], key[1]);
    for (int k = 0; k < 4; k++) out[k] = words[k];
}
