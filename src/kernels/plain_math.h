/* exp and erf in float32 as plain arithmetic, for the loops the CPU's compiler vectorises (`omp
 * simd`): glibc's expf and erff are a call per element, which no loop vectorises; they were most
 * of the CPU attention's time, and a fifth of a transformer block's (its GELU). Used by the CPU's
 * kernels (dialect.h: CT_EXP, CT_ERF) and loops (cpu_attention.c); devices keep their builtins.
 * Always inlined: a call in a loop keeps it from vectorising (the GELU ran slower as calls than
 * glibc's erff).
 *
 * exp: Cody-Waite range reduction x = n ln2 + r, |r| <= ln2 / 2, then Cephes' degree-6 polynomial
 * (expf.c), then 2^n put into the exponent bits: within 2 ulps of the exact value. Only + - * and
 * selects, each rounded once (the build has -ffp-contract=off): the same bits from every
 * instruction set and vector width. Results below 2^-126 (x < -87.33) are 0 rather than
 * subnormal; past 88.72 inf, NaN gives NaN. */
#ifndef CT_KERNELS_PLAIN_MATH_H
#define CT_KERNELS_PLAIN_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline __attribute__((always_inline)) float ct_plain_expf(float x)
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

/* erf: below 0.921875 in magnitude z P(z^2), above 1 - exp(-z^2) Q(1 / (1 + z / 2)), from 3.93
 * exactly 1 (erf rounds to 1 in float32 there); odd. P and Q are least-squares fits in float64 on
 * Chebyshev nodes (degree 5 and 7): at most 2.44 ulps from the exact value on 2^22 points of
 * [-4, 4] (glibc's erff: 0.92), within 3 as tests/kernels/test_plain_math.c checks. */
/* erf(z) given a = |z|, u = a * a and gauss = exp(-u), for callers that need exp(-z^2) too. */
static inline __attribute__((always_inline)) float ct_plain_erff_given(float z, float a, float u,
                                                                      float gauss)
{
    float p = -6.008739575490113e-4f;
    p = p * u + 4.997014063980605e-3f;
    p = p * u - 2.6769499851205202e-2f;
    p = p * u + 1.1281905048471902e-1f;
    p = p * u - 3.761250334187016e-1f;
    p = p * u + 1.1283791512630608f;
    float near_zero = a * p;
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = 1.2052307261034373e-1f;
    q = q * t - 4.753889937224333e-1f;
    q = q * t + 5.696045778891293e-1f;
    q = q * t - 1.0887637005702928e-1f;
    q = q * t + 3.503974368062257e-1f;
    q = q * t + 2.589294330719131e-1f;
    q = q * t + 2.8503416546152494e-1f;
    q = q * t - 1.6244775181904278e-4f;
    float away = 1.0f - gauss * q;
    float r = a < 0.921875f ? near_zero : away;
    r = a >= 3.93f ? 1.0f : r;
    r = z < 0.0f ? -r : r;
    return z != z ? z : r;
}

static inline __attribute__((always_inline)) float ct_plain_erff(float z)
{
    float a = z < 0.0f ? -z : z, u = a * a;
    return ct_plain_erff_given(z, a, u, ct_plain_expf(-u));
}

/* The exact GELU's slope, Phi(y) + y phi(y) = (1 + erf(z)) / 2 + y exp(-z^2) / sqrt(2 pi) with
 * z = y / sqrt(2): erf's tail and phi share the one exponential (a GELU backward computed two,
 * and was a twentieth of a small transformer block's training step). */
static inline __attribute__((always_inline)) float ct_plain_gelu_slopef(float y)
{
    float z = y * 0.70710678118654752440f;
    float a = z < 0.0f ? -z : z, u = a * a;
    float gauss = ct_plain_expf(-u);
    return 0.5f * (1.0f + ct_plain_erff_given(z, a, u, gauss)) + y * 0.39894228040143267794f * gauss;
}

#endif
