/* Printing: the exact text PyTorch gives for the same tensor (default print options), with the
 * device always named. The expected strings follow torch/_tensor_str.py. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"

/* t's text must be expected; t is released. */
static void assert_prints(ct_tensor *t, const char *expected)
{
    assert_non_null(t);
    char *text = ct_tensor_to_string(t);
    assert_non_null(text);
    if (strcmp(text, expected) != 0) fail_msg("printed\n%s\nexpected\n%s", text, expected);
    free(text);
    ct_release(t);
}

static ct_tensor *from(const void *data, ct_dtype dtype, const int64_t *shape, int ndim)
{
    return ct_tensor_from_data(data, dtype, shape, ndim, CT_DEVICE_CPU);
}

static void float_matrices_print_with_nested_brackets_and_aligned_rows(void **state)
{
    (void)state;
    assert_prints(from((const float[]){1, 2, 3, 4}, CT_F32, (const int64_t[]){2, 2}, 2),
                  "tensor([[1., 2.],\n"
                  "        [3., 4.]], device='cpu')");
    assert_prints(from((const float[]){1.5f, -2.25f, 3}, CT_F32, (const int64_t[]){3}, 1),
                  "tensor([ 1.5000, -2.2500,  3.0000], device='cpu')");
    assert_prints(from((const float[]){-0.5f, 0.25f, 100.125f}, CT_F32, (const int64_t[]){3}, 1),
                  "tensor([ -0.5000,   0.2500, 100.1250], device='cpu')");
    assert_prints(from((const float[]){0, 0}, CT_F32, (const int64_t[]){2}, 1), "tensor([0., 0.], device='cpu')");
    assert_prints(from((const int64_t[]){1, 2, 3, 4}, CT_I64, (const int64_t[]){2, 1, 2}, 3),
                  "tensor([[[1, 2]],\n"
                  "\n"
                  "        [[3, 4]]], device='cpu')");
}

static void integers_and_bools_print_plainly_with_a_common_width(void **state)
{
    (void)state;
    assert_prints(from((const int64_t[]){1, -20, 300, 4}, CT_I64, (const int64_t[]){2, 2}, 2),
                  "tensor([[  1, -20],\n"
                  "        [300,   4]], device='cpu')");
    assert_prints(from((const int32_t[]){1, 2, 3}, CT_I32, (const int64_t[]){3}, 1),
                  "tensor([1, 2, 3], device='cpu', dtype=int32)");
    assert_prints(from((const uint8_t[]){0, 255, 7}, CT_U8, (const int64_t[]){3}, 1),
                  "tensor([  0, 255,   7], device='cpu', dtype=uint8)");
    assert_prints(from((const uint8_t[]){1, 0, 1}, CT_BOOL, (const int64_t[]){3}, 1),
                  "tensor([ True, False,  True], device='cpu')");
}

static void scientific_notation_when_the_range_calls_for_it(void **state)
{
    (void)state;
    assert_prints(from((const float[]){1e-5f, 1}, CT_F32, (const int64_t[]){2}, 1),
                  "tensor([1.0000e-05, 1.0000e+00], device='cpu')");
    assert_prints(from((const float[]){1, 1e5f}, CT_F32, (const int64_t[]){2}, 1),
                  "tensor([1.0000e+00, 1.0000e+05], device='cpu')");
    assert_prints(from((const double[]){123456789.0, 1}, CT_F64, (const int64_t[]){2}, 1),
                  "tensor([1.2346e+08, 1.0000e+00], device='cpu', dtype=float64)");
}

static void nan_and_infinities_print_like_python(void **state)
{
    (void)state;
    assert_prints(from((const float[]){1.5f, NAN, INFINITY, -INFINITY}, CT_F32, (const int64_t[]){4}, 1),
                  "tensor([1.5000,    nan,    inf,   -inf], device='cpu')");
    assert_prints(from((const float[]){1, -NAN, -INFINITY}, CT_F32, (const int64_t[]){3}, 1),
                  "tensor([1., nan, -inf], device='cpu')");
}

static void zero_dim_and_empty_tensors(void **state)
{
    (void)state;
    assert_prints(ct_full(NULL, 0, 3.5, CT_F32, CT_DEVICE_CPU), "tensor(3.5000, device='cpu')");
    assert_prints(ct_full(NULL, 0, 2, CT_F32, CT_DEVICE_CPU), "tensor(2., device='cpu')");
    assert_prints(ct_full(NULL, 0, 7, CT_I64, CT_DEVICE_CPU), "tensor(7, device='cpu')");
    assert_prints(ct_full(NULL, 0, -7, CT_I32, CT_DEVICE_CPU), "tensor(-7, device='cpu', dtype=int32)");
    assert_prints(ct_zeros((const int64_t[]){0, 3}, 2, CT_F32, CT_DEVICE_CPU), "tensor([], device='cpu', size=(0, 3))");
    assert_prints(ct_zeros((const int64_t[]){0}, 1, CT_F32, CT_DEVICE_CPU), "tensor([], device='cpu')");
    /* An empty tensor has no values to show its dtype, so every dtype but float32 is named. */
    assert_prints(ct_zeros((const int64_t[]){0}, 1, CT_I64, CT_DEVICE_CPU), "tensor([], device='cpu', dtype=int64)");
    assert_prints(ct_zeros((const int64_t[]){2, 0, 1}, 3, CT_BOOL, CT_DEVICE_CPU),
                  "tensor([], device='cpu', size=(2, 0, 1), dtype=bool)");
}

static void long_rows_wrap_and_suffixes_move_to_a_new_line(void **state)
{
    (void)state;
    assert_prints(ct_arange(0, 30, 1, CT_F32, CT_DEVICE_CPU),
                  "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
                  "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
                  "        28., 29.], device='cpu')");
    assert_prints(ct_arange(0, 14, 1, CT_F64, CT_DEVICE_CPU),
                  "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.],\n"
                  "       device='cpu', dtype=float64)");
}

static ct_tensor *counting(double n, ct_dtype dtype, const int64_t *shape, int ndim)
{
    ct_tensor *flat = ct_arange(0, n, 1, dtype, CT_DEVICE_CPU);
    ct_tensor *t = ct_reshape(flat, shape, ndim);
    ct_release(flat);
    return t;
}

static void more_than_a_thousand_elements_are_summarised(void **state)
{
    (void)state;
    assert_prints(ct_arange(0, 2000, 1, CT_I64, CT_DEVICE_CPU),
                  "tensor([   0,    1,    2,  ..., 1997, 1998, 1999], device='cpu')");
    assert_prints(counting(2000, CT_F32, (const int64_t[]){40, 50}, 2),
                  "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n"
                  "         4.9000e+01],\n"
                  "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n"
                  "         9.9000e+01],\n"
                  "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n"
                  "         1.4900e+02],\n"
                  "        ...,\n"
                  "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n"
                  "         1.8990e+03],\n"
                  "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n"
                  "         1.9490e+03],\n"
                  "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
                  "         1.9990e+03]], device='cpu')");
    double *values = malloc(2000 * sizeof *values);
    for (int i = 0; i < 2000; i++) values[i] = (i - 1000) / 7.0;
    assert_prints(from(values, CT_F64, (const int64_t[]){2000}, 1),
                  "tensor([-142.8571, -142.7143, -142.5714,  ...,  142.4286,  142.5714,\n"
                  "         142.7143], device='cpu', dtype=float64)");
    free(values);
    uint8_t *flags = malloc(1200);
    for (int i = 0; i < 1200; i++) flags[i] = i % 3 != 0;
    assert_prints(from(flags, CT_BOOL, (const int64_t[]){1200}, 1),
                  "tensor([False,  True,  True,  ..., False,  True,  True], device='cpu')");
    free(flags);
}

static void a_summarised_three_dim_tensor_separates_blocks_with_blank_lines(void **state)
{
    (void)state;
    assert_prints(counting(2000, CT_I64, (const int64_t[]){10, 10, 20}, 3),
                  "tensor([[[   0,    1,    2,  ...,   17,   18,   19],\n"
                  "         [  20,   21,   22,  ...,   37,   38,   39],\n"
                  "         [  40,   41,   42,  ...,   57,   58,   59],\n"
                  "         ...,\n"
                  "         [ 140,  141,  142,  ...,  157,  158,  159],\n"
                  "         [ 160,  161,  162,  ...,  177,  178,  179],\n"
                  "         [ 180,  181,  182,  ...,  197,  198,  199]],\n"
                  "\n"
                  "        [[ 200,  201,  202,  ...,  217,  218,  219],\n"
                  "         [ 220,  221,  222,  ...,  237,  238,  239],\n"
                  "         [ 240,  241,  242,  ...,  257,  258,  259],\n"
                  "         ...,\n"
                  "         [ 340,  341,  342,  ...,  357,  358,  359],\n"
                  "         [ 360,  361,  362,  ...,  377,  378,  379],\n"
                  "         [ 380,  381,  382,  ...,  397,  398,  399]],\n"
                  "\n"
                  "        [[ 400,  401,  402,  ...,  417,  418,  419],\n"
                  "         [ 420,  421,  422,  ...,  437,  438,  439],\n"
                  "         [ 440,  441,  442,  ...,  457,  458,  459],\n"
                  "         ...,\n"
                  "         [ 540,  541,  542,  ...,  557,  558,  559],\n"
                  "         [ 560,  561,  562,  ...,  577,  578,  579],\n"
                  "         [ 580,  581,  582,  ...,  597,  598,  599]],\n"
                  "\n"
                  "        ...,\n"
                  "\n"
                  "        [[1400, 1401, 1402,  ..., 1417, 1418, 1419],\n"
                  "         [1420, 1421, 1422,  ..., 1437, 1438, 1439],\n"
                  "         [1440, 1441, 1442,  ..., 1457, 1458, 1459],\n"
                  "         ...,\n"
                  "         [1540, 1541, 1542,  ..., 1557, 1558, 1559],\n"
                  "         [1560, 1561, 1562,  ..., 1577, 1578, 1579],\n"
                  "         [1580, 1581, 1582,  ..., 1597, 1598, 1599]],\n"
                  "\n"
                  "        [[1600, 1601, 1602,  ..., 1617, 1618, 1619],\n"
                  "         [1620, 1621, 1622,  ..., 1637, 1638, 1639],\n"
                  "         [1640, 1641, 1642,  ..., 1657, 1658, 1659],\n"
                  "         ...,\n"
                  "         [1740, 1741, 1742,  ..., 1757, 1758, 1759],\n"
                  "         [1760, 1761, 1762,  ..., 1777, 1778, 1779],\n"
                  "         [1780, 1781, 1782,  ..., 1797, 1798, 1799]],\n"
                  "\n"
                  "        [[1800, 1801, 1802,  ..., 1817, 1818, 1819],\n"
                  "         [1820, 1821, 1822,  ..., 1837, 1838, 1839],\n"
                  "         [1840, 1841, 1842,  ..., 1857, 1858, 1859],\n"
                  "         ...,\n"
                  "         [1940, 1941, 1942,  ..., 1957, 1958, 1959],\n"
                  "         [1960, 1961, 1962,  ..., 1977, 1978, 1979],\n"
                  "         [1980, 1981, 1982,  ..., 1997, 1998, 1999]]], device='cpu')");
}

static void views_print_their_own_elements(void **state)
{
    (void)state;
    ct_tensor *t = counting(6, CT_F32, (const int64_t[]){2, 3}, 2);
    assert_prints(ct_transpose(t, 0, 1),
                  "tensor([[0., 3.],\n"
                  "        [1., 4.],\n"
                  "        [2., 5.]], device='cpu')");
    /* A summarised view reads only its edges: every other row of a 40 x 60 arange, transposed. */
    ct_tensor *big = counting(2400, CT_I32, (const int64_t[]){40, 60}, 2);
    ct_tensor *rows = ct_slice(big, 0, 0, 40, 2); /* 20 x 60 */
    assert_prints(ct_transpose(rows, 0, 1),
                  "tensor([[   0,  120,  240,  ..., 2040, 2160, 2280],\n"
                  "        [   1,  121,  241,  ..., 2041, 2161, 2281],\n"
                  "        [   2,  122,  242,  ..., 2042, 2162, 2282],\n"
                  "        ...,\n"
                  "        [  57,  177,  297,  ..., 2097, 2217, 2337],\n"
                  "        [  58,  178,  298,  ..., 2098, 2218, 2338],\n"
                  "        [  59,  179,  299,  ..., 2099, 2219, 2339]], device='cpu', dtype=int32)");
    ct_release(rows);
    ct_release(big);
    ct_release(t);
}

static void the_device_is_always_named(void **state)
{
    (void)state;
    ct_tensor *t = from((const double[]){1.5, 2}, CT_F64, (const int64_t[]){2}, 1);
    assert_prints(ct_to(t, (ct_device){CT_OPENCL, 0}), "tensor([1.5000, 2.0000], device='opencl:0', dtype=float64)");
    assert_prints(ct_to(t, (ct_device){CT_OPENCL, 1}), "tensor([1.5000, 2.0000], device='opencl:1', dtype=float64)");
    ct_release(t);
}

static void fprint_writes_the_text_and_a_newline(void **state)
{
    (void)state;
    ct_tensor *t = ct_full((const int64_t[]){2}, 1, 1, CT_I64, CT_DEVICE_CPU);
    char buffer[128] = {0};
    FILE *stream = fmemopen(buffer, sizeof buffer, "w");
    assert_int_equal(ct_fprint(stream, t), CT_OK);
    fclose(stream);
    assert_string_equal(buffer, "tensor([1, 1], device='cpu')\n");
    ct_release(t);
}

static void printing_nothing_is_an_error(void **state)
{
    (void)state;
    assert_null(ct_tensor_to_string(NULL));
    assert_int_equal(ct_last_error(), CT_ERR_NULL_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "ct_tensor_to_string"));
    ct_clear_error();
    assert_int_equal(ct_print(NULL), CT_ERR_NULL_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "ct_print"));
    ct_clear_error();
    ct_tensor *t = ct_zeros((const int64_t[]){1}, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_fprint(NULL, t), CT_ERR_NULL_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "stream"));
    ct_clear_error();
    ct_release(t);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float_matrices_print_with_nested_brackets_and_aligned_rows),
        cmocka_unit_test(integers_and_bools_print_plainly_with_a_common_width),
        cmocka_unit_test(scientific_notation_when_the_range_calls_for_it),
        cmocka_unit_test(nan_and_infinities_print_like_python),
        cmocka_unit_test(zero_dim_and_empty_tensors),
        cmocka_unit_test(long_rows_wrap_and_suffixes_move_to_a_new_line),
        cmocka_unit_test(more_than_a_thousand_elements_are_summarised),
        cmocka_unit_test(a_summarised_three_dim_tensor_separates_blocks_with_blank_lines),
        cmocka_unit_test(views_print_their_own_elements),
        cmocka_unit_test(the_device_is_always_named),
        cmocka_unit_test(fprint_writes_the_text_and_a_newline),
        cmocka_unit_test(printing_nothing_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
