/* The seeded generator behind shuffles and splits: splitmix64 (Steele, Lea & Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA 2014), the generator Java's
 * SplittableRandom uses and xoshiro's authors recommend for seeding. It is a few integer
 * operations on one 64-bit word, so every machine produces the same orders from the same seed,
 * unlike rand(). */
#include "core/core_internal.h"
#include "data/data_internal.h"

uint64_t ct_splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

uint64_t ct_splitmix64_below(uint64_t *state, uint64_t bound)
{
    /* Draws below 2^64 mod bound would make the small results more likely: draw again. */
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t r = ct_splitmix64_next(state);
        if (r >= threshold) return r % bound;
    }
}

ct_status ct_data_permutation(int64_t n, uint64_t seed, int64_t *out)
{
    if (n < 0) return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_data_permutation: n is %lld; it must "
                               "be >= 0", (long long)n);
    if (n > 0 && !out) return ct_null_argument("ct_data_permutation", "out"), ct_last_error();
    for (int64_t i = 0; i < n; i++) out[i] = i;
    uint64_t state = seed;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)ct_splitmix64_below(&state, (uint64_t)i + 1);
        int64_t kept = out[i];
        out[i] = out[j];
        out[j] = kept;
    }
    return CT_OK;
}
