/* The CPU kernels' float32 exp and erf in plain arithmetic (kernels/plain_math.h) against float64's
 * exp and erf from libm, in units in the last place of the float32 result: exp within 2, erf
 * within 3, over dense grids and the edges (0, the ends of their ranges, infinities, NaN). */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "kernels/plain_math.h"
#include "test_common.h"

/* |got - want| in float32 ulps of want (the spacing at want's magnitude; subnormal spacing below
 * FLT_MIN). */
static double ulps(float got, double want)
{
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isinf(want)) return got == (float)want ? 0 : INFINITY;
    double magnitude = fabs(want) < FLT_MIN ? FLT_MIN : fabs(want);
    int exponent;
    frexp(magnitude, &exponent);
    double spacing = ldexp(1.0, exponent - 24);
    return fabs((double)got - want) / spacing;
}

static void erf_is_within_3_ulps(void **state)
{
    (void)state;
    double worst = 0, worst_at = 0;
    const int points = 1 << 20;
    for (int i = 0; i <= points; i++) {
        float z = -4.0f + 8.0f * (float)i / (float)points;
        double e = ulps(ct_plain_erff(z), erf((double)z));
        if (e > worst) worst = e, worst_at = z;
    }
    if (worst > 3.0) fail_msg("erf: %.2f ulps at %.9g", worst, worst_at);
    /* the two pieces' seam, and the edges */
    const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, FLT_MIN, 1e-4f, 0.921875f, nextafterf(0.921875f, 0.0f),
                           3.93f, nextafterf(3.93f, 0.0f), 10.0f, -10.0f, 1e30f, -1e30f};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        double e = ulps(ct_plain_erff(edges[i]), erf((double)edges[i]));
        if (e > 3.0) fail_msg("erf(%.9g) = %.9g: %.2f ulps from %.17g", edges[i], ct_plain_erff(edges[i]), e,
                              erf((double)edges[i]));
    }
    assert_true(signbit(ct_plain_erff(-0.0f)));
    assert_true(ct_plain_erff(INFINITY) == 1.0f && ct_plain_erff(-INFINITY) == -1.0f);
    assert_true(isnan(ct_plain_erff(NAN)));
}

static void exp_is_within_2_ulps(void **state)
{
    (void)state;
    double worst = 0, worst_at = 0;
    const int points = 1 << 20;
    for (int i = 0; i <= points; i++) {
        float x = -87.0f + 175.0f * (float)i / (float)points; /* to 88: exp(88) < FLT_MAX */
        double e = ulps(ct_plain_expf(x), exp((double)x));
        if (e > worst) worst = e, worst_at = x;
    }
    if (worst > 2.0) fail_msg("exp: %.2f ulps at %.9g", worst, worst_at);
    assert_true(ct_plain_expf(0.0f) == 1.0f);
    assert_true(ct_plain_expf(-INFINITY) == 0.0f && ct_plain_expf(-100.0f) == 0.0f);
    assert_true(isinf(ct_plain_expf(89.0f)) && isinf(ct_plain_expf(INFINITY)));
    assert_true(isnan(ct_plain_expf(NAN)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(erf_is_within_3_ulps),
        cmocka_unit_test(exp_is_within_2_ulps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
