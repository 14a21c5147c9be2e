/* float16 and bfloat16 bits on the host, with the arithmetic of the kernels' conversions
 * (src/kernels/dialect.h), so that a value converted here and one converted on a device agree. */
#include <string.h>

#include "ctorch/core.h"

static uint32_t bits_of(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static float float_of(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

uint16_t ct_float_to_f16(float value)
{
    uint32_t u = bits_of(value);
    uint32_t sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    uint32_t out;
    if (u >= 0x47800000u) {          /* 65536 and beyond, infinities, NaN */
        out = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 0x38800000u) {    /* below 2^-14: a subnormal half or zero */
        /* adding 0.5 lines the half's last place up with float's, and the FPU rounds to even */
        out = bits_of(float_of(u) + 0.5f) - 0x3f000000u;
    } else {
        /* rebias the exponent, then round to nearest even on the 13 bits dropped; 65520 and
         * above carry into the exponent of infinity */
        out = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
    }
    return (uint16_t)(out | sign);
}

float ct_f16_to_float(uint16_t bits)
{
    uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
    uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) return float_of(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        /* a subnormal half is mantissa * 2^-24, exactly a float */
        float magnitude = (float)mantissa * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }
    return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t ct_float_to_bf16(float value)
{
    uint32_t u = bits_of(value);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float ct_bf16_to_float(uint16_t bits) { return float_of((uint32_t)bits << 16); }
