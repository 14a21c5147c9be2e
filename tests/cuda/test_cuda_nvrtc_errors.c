/* A kernel family that NVRTC (the real one: it needs no GPU) cannot compile reaches the user as
 * an error of the op that needed it, with the family, the device and the start of NVRTC's log;
 * with the source put back the same op works. The broken source goes in through the backend's
 * test hook, in place of the embedded text. */
#include "standin_test.h"

#ifdef CTORCH_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

static void test_a_compile_error_reaches_the_user_with_the_log(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
#ifdef CTORCH_HAVE_CUDA
    const char *broken = "CT_KERNEL fill_f32(CT_KERNEL_BUFFERS, const ct_kparams p)\n"
                         "{\n    long i = CT_IDX;\n    if (i < p.n) undeclared_name[i] = 1;\n}\n";
    assert_int_equal(ct_cuda_replace_family_source_for_testing("fill", broken), CT_OK);
    int64_t shape[1] = {10};
    assert_null(ct_full(shape, 1, 2.0, CT_F32, CUDA0));
    assert_int_equal(ct_last_error(), CT_ERR_BACKEND);
    const char *message = ct_last_error_message();
    const char *parts[] = {"cuda:0", "kernel family 'fill' does not compile", "compute_80",
                           "undeclared_name", "is undefined"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!strstr(message, parts[i])) fail_msg("message '%s' lacks '%s'", message, parts[i]);
    ct_clear_error();

    /* Put back, the family compiles and the op runs. */
    assert_int_equal(ct_cuda_replace_family_source_for_testing("fill", NULL), CT_OK);
    ct_tensor *t = ct_full(shape, 1, 2.0, CT_F32, CUDA0);
    if (!t) fail_msg("%s", ct_last_error_message());
    float values[10];
    read_floats(t, values, 10);
    for (int i = 0; i < 10; i++) assert_true(values[i] == 2.0f);
    ct_release(t);
    assert_int_equal(ct_cuda_replace_family_source_for_testing("no such family", NULL),
                     CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_compile_error_reaches_the_user_with_the_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
