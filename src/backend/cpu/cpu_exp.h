/* exp(x) in float32 as plain arithmetic, for loops the compiler vectorises (`omp simd`): glibc's
 * expf is a call per element, which no loop vectorises, and was most of the CPU attention's time.
 * Cody-Waite range reduction x = n ln2 + r, |r| <= ln2 / 2, then Cephes' degree-6 polynomial
 * (expf.c), then 2^n put into the exponent bits: within 2 ulps of the exact value. Only + - * and
 * selects, each rounded once (the build has -ffp-contract=off): the same bits from every
 * instruction set and vector width. Results below 2^-126 (x < -87.33) are 0 rather than
 * subnormal; past 88.72 inf, NaN gives NaN. */
#ifndef CT_CPU_EXP_H
#define CT_CPU_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float ct_cpu_expf(float x)
{
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float round_bias = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float xc = x > -87.5f ? x : -87.5f;   /* NaN takes -87.5 here, and is given back below */
    xc = xc < 89.0f ? xc : 89.0f;
    float shifted = xc * log2e + round_bias;
    float n = shifted - round_bias;
    float r = xc - n * ln2_hi;
    r = r - n * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    uint32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    /* shifted's low mantissa bits hold n + 2^22: 2^n's exponent field is n + 127, at most 255
     * (n = 128, near the top of the range), which takes 2^127 and one doubling instead */
    uint32_t field = bits - 0x4B400000u + 127u;
    uint32_t over = field > 254u ? 1u : 0u;
    uint32_t scale_bits = (field - over) << 23;
    float two_n;
    memcpy(&two_n, &scale_bits, sizeof two_n);
    float y = p * two_n;
    y = y * (over ? 2.0f : 1.0f); /* exact, or inf where exp(x) overflows */
    y = x < -87.33654f ? 0.0f : y;
    return x != x ? x : y;
}

#endif
