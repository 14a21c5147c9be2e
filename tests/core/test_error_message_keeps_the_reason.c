/* An error message has room for 1024 bytes. When the input it echoes is long (a 100k-character
 * device string, a map_location of 5000 pairs), the echo is shortened in its middle to "...", and
 * the reason (what is wrong, what would be right) is kept whole. */
#include "core/core_internal.h"
#include "test_common.h"

static char *repeated(const char *piece, int times)
{
    size_t length = strlen(piece);
    char *text = malloc(length * (size_t)times + 1);
    for (int k = 0; k < times; k++) memcpy(text + length * (size_t)k, piece, length);
    text[length * (size_t)times] = '\0';
    return text;
}

static void a_long_device_string_keeps_the_reason(void **state)
{
    (void)state;
    char *text = repeated("x", 100000);
    ct_device device;
    assert_int_equal(ct_device_parse(text, &device), CT_ERR_INVALID_ARGUMENT);
    const char *message = ct_last_error_message();
    assert_true(strlen(message) < 1024);
    assert_non_null(strstr(message, "device string 'xxxxxxxxxxxxxxxxxxxx"));
    assert_non_null(strstr(message, "xxx...xxx"));
    assert_non_null(strstr(message, "' is not a device; expected 'cpu', 'cuda', 'cuda:N', 'opencl' "
                                    "or 'opencl:N'"));
    ct_clear_error();
    free(text);
}

static void a_long_map_location_keeps_the_reason(void **state)
{
    (void)state;
    char *pairs = malloc(5000 * 20);
    size_t used = 0;
    for (int k = 0; k < 5000; k++) used += (size_t)sprintf(pairs + used, "%scuda:%d=cpu", k ? "," : "", k);
    ct_state_dict *sd = ct_load("/nonexistent/model.safetensors", pairs);
    assert_null(sd);
    const char *message = ct_last_error_message();
    assert_true(strlen(message) < 1024);
    assert_non_null(strstr(message, "ct_load: map_location 'cuda:0=cpu,cuda:1=cpu"));
    assert_non_null(strstr(message, "..."));
    assert_non_null(strstr(message, "cuda:4999=cpu' has more than "));
    assert_non_null(strstr(message, " pairs"));
    ct_clear_error();
    free(pairs);
}

static void quotes_and_apostrophes_in_the_reason_stay(void **state)
{
    (void)state;
    char *name = repeated("n", 3000);
    ct_error(CT_ERR_INVALID_ARGUMENT, "the tensor's name '%s' is too long; a name's length is at "
             "most %d bytes (\"safetensors\" says so)", name, 100);
    const char *message = ct_last_error_message();
    assert_true(strlen(message) < 1024);
    assert_non_null(strstr(message, "the tensor's name 'nnnn"));
    assert_non_null(strstr(message, "nnn...nnn"));
    assert_non_null(strstr(message, "' is too long; a name's length is at most 100 bytes "
                                    "(\"safetensors\" says so)"));
    ct_clear_error();
    free(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_long_device_string_keeps_the_reason),
        cmocka_unit_test(a_long_map_location_keeps_the_reason),
        cmocka_unit_test(quotes_and_apostrophes_in_the_reason_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
