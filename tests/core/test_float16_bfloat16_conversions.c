/* float16 and bfloat16 bits: every 16-bit pattern converts to float32 as the formats define it, and
 * float32 values round to the nearest 16-bit value, ties to even, overflowing to infinity, as
 * c10::Half and c10::BFloat16 do. The reference below finds the nearest value by search over the
 * decoded patterns, in double, sharing no arithmetic with the conversions it checks. */
#include <math.h>

#include "test_common.h"

/* The value of a float16 pattern from the format's definition. */
static double f16_value(uint16_t bits)
{
    int sign = bits >> 15, exponent = (bits >> 10) & 31, mantissa = bits & 1023;
    double magnitude;
    if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
    else if (exponent == 0) magnitude = ldexp(mantissa, -24);
    else magnitude = ldexp(1024 + mantissa, exponent - 25);
    return sign ? -magnitude : magnitude;
}

static double bf16_value(uint16_t bits)
{
    int sign = bits >> 15, exponent = (bits >> 7) & 255, mantissa = bits & 127;
    double magnitude;
    if (exponent == 255) magnitude = mantissa ? NAN : INFINITY;
    else if (exponent == 0) magnitude = ldexp(mantissa, -133);
    else magnitude = ldexp(128 + mantissa, exponent - 134);
    return sign ? -magnitude : magnitude;
}

/* The nearest pattern to x >= 0 (finite), ties to the even pattern; the largest finite value's
 * successor is infinity, reached where x is at or past the midpoint between them. */
static uint16_t nearest(double x, double (*value)(uint16_t), uint16_t infinity)
{
    uint16_t lo = 0, hi = infinity; /* value(lo) <= x < value(hi), by bisection over patterns */
    if (x >= value(infinity)) return infinity;
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (value(mid) <= x) lo = mid;
        else hi = mid;
    }
    double below = value(lo), above = hi == infinity ? 2 * value((uint16_t)(infinity - 1)) - value((uint16_t)(infinity - 2)) : value(hi);
    if (x - below < above - x) return lo;
    if (x - below > above - x) return hi;
    return (lo & 1) ? hi : lo;
}

static uint16_t reference_round(float f, double (*value)(uint16_t), uint16_t infinity)
{
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    return (uint16_t)(sign | nearest(fabs((double)f), value, infinity));
}

static void every_pattern_converts_to_its_value(void **state)
{
    (void)state;
    for (uint32_t bits = 0; bits < 65536; bits++) {
        double h = f16_value((uint16_t)bits), b = bf16_value((uint16_t)bits);
        float hf = ct_f16_to_float((uint16_t)bits), bf = ct_bf16_to_float((uint16_t)bits);
        if (isnan(h)) assert_true(isnan(hf));
        else if ((double)hf != h || !signbit(hf) != !signbit(h)) fail_msg("f16 %04x: %a, not %a", bits, hf, h);
        if (isnan(b)) assert_true(isnan(bf));
        else if ((double)bf != b || !signbit(bf) != !signbit(b)) fail_msg("bf16 %04x: %a, not %a", bits, bf, b);
        /* and back, unchanged (NaN stays NaN) */
        uint16_t h_back = ct_float_to_f16(hf), b_back = ct_float_to_bf16(bf);
        if (isnan(h)) assert_true((h_back & 0x7c00) == 0x7c00 && (h_back & 0x3ff) != 0);
        else assert_int_equal(h_back, bits);
        if (isnan(b)) assert_true((b_back & 0x7f80) == 0x7f80 && (b_back & 0x7f) != 0);
        else assert_int_equal(b_back, bits);
    }
}

static float float_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void check_float(float f)
{
    if (isnan(f)) return;
    uint16_t h = ct_float_to_f16(f), b = ct_float_to_bf16(f);
    uint16_t h_ref = reference_round(f, f16_value, 0x7c00), b_ref = reference_round(f, bf16_value, 0x7f80);
    if (h != h_ref) fail_msg("float16 of %a: %04x, nearest is %04x", (double)f, h, h_ref);
    if (b != b_ref) fail_msg("bfloat16 of %a: %04x, nearest is %04x", (double)f, b, b_ref);
}

static void floats_round_to_the_nearest_ties_to_even(void **state)
{
    (void)state;
    /* a sweep of every exponent with many mantissas, both signs */
    for (uint64_t bits = 0; bits < 0x100000000u; bits += 65521) check_float(float_of((uint32_t)bits));
    /* every midpoint between neighbouring 16-bit values and the floats next to it: the ties */
    for (uint32_t bits = 0; bits < 0x7c00; bits++) {
        double mid = (f16_value((uint16_t)bits) + f16_value((uint16_t)(bits + 1))) / 2;
        float m = (float)mid; /* exact: float has 13 more bits */
        check_float(m), check_float(nextafterf(m, 0)), check_float(nextafterf(m, INFINITY));
        check_float(-m);
    }
    for (uint32_t bits = 0; bits < 0x7f80; bits++) {
        double mid = (bf16_value((uint16_t)bits) + bf16_value((uint16_t)(bits + 1))) / 2;
        float m = (float)mid;
        check_float(m), check_float(nextafterf(m, 0)), check_float(nextafterf(m, INFINITY));
    }
    /* the edges: float16's largest value, the overflow threshold (65520 ties up to infinity),
     * its smallest subnormal and half of it (a tie to zero) */
    assert_int_equal(ct_float_to_f16(65504.0f), 0x7bff);
    assert_int_equal(ct_float_to_f16(65519.99f), 0x7bff);
    assert_int_equal(ct_float_to_f16(65520.0f), 0x7c00);
    assert_int_equal(ct_float_to_f16(-1e30f), 0xfc00);
    assert_int_equal(ct_float_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(ct_float_to_f16(0x1p-25f), 0x0000);
    assert_int_equal(ct_float_to_f16(0x1.8p-24f), 0x0002);
    assert_int_equal(ct_float_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds up to infinity */
    assert_int_equal(ct_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);   /* a tie to even: down */
    assert_int_equal(ct_float_to_bf16(1.0f + 0x3p-8f), 0x3f82);   /* a tie to even: up */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pattern_converts_to_its_value),
        cmocka_unit_test(floats_round_to_the_nearest_ties_to_even),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
