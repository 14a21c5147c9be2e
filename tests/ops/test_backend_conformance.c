/* Backend conformance: every op of ctorch on every device against the CPU (the table and the
 * runner are in backend_conformance/). Three runs from ctest:
 *   test_backend_conformance         the real accelerators (OpenCL, CUDA); skipped without any
 *   test_backend_conformance --fake  the fake two-device "opencl" backend of tests/support
 *   test_backend_conformance --cuda  the CUDA devices only: ctest points ctorch at the stand-in
 *                                    driver of tests/cuda/ (test_backend_conformance_cuda_standin),
 *                                    whose devices run the C build of the kernels NVRTC compiled
 * Besides the values, it checks that the table is complete: every public call of ops.h,
 * tensor.h and nn_functional.h that returns a tensor has an entry (or a stated reason not to),
 * and every kernel ran on every device. */
#include <stdio.h>

#include "test_common.h"

#include "backend/backend.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "optim/optimizer_internal.h" /* ct_optimizer_set_per_parameter */
#include "backend_conformance/conformance.h"
#include "support/fake_device.h"

static ct_device devices[CONF_MAX_DEVICES];
static int device_count;
static bool fake_run, cuda_run;

/* ---- the values ---- */

static conf_totals harness_totals;
static bool harness_ran;

static void run_harness_once(void)
{
    if (harness_ran) return;
    harness_ran = true;
    printf("conformance on %d %s device(s) against the CPU:\n", device_count,
           fake_run ? "fake" : cuda_run ? "CUDA" : "real");
    harness_totals = conf_run_all(devices, device_count);
    printf("total: %ld checks, %ld passed\n", harness_totals.checks, harness_totals.passed);
}

static void skip_without_devices(void)
{
    if (device_count == 0) skip();
}

static void test_every_op_matches_the_cpu_on_every_device(void **state)
{
    (void)state;
    skip_without_devices();
    run_harness_once();
    assert_true(harness_totals.checks > 0);
    if (harness_totals.passed != harness_totals.checks)
        fail_msg("%ld of %ld checks failed (see MISMATCH lines above)",
                 harness_totals.checks - harness_totals.passed, harness_totals.checks);
}

/* ---- the harness sees what differs ---- */

/* On the CPU a copy of the input; elsewhere wrong in the way case n says. */
static ct_tensor *run_wrong_off_the_cpu(ct_tensor *const *in, const conf_args *a)
{
    if (a->device.type == CT_CPU) return ct_clone(in[0]);
    switch (a->n) {
    case 0: return ct_add_scalar(in[0], 1.0);          /* other values */
    case 1: return ct_unsqueeze(in[0], 0);             /* another shape */
    case 2: return ct_to_dtype(in[0], CT_F64);         /* another dtype */
    case 3: return ct_transpose(in[0], 0, 5);          /* an error */
    default: return ct_to(ct_clone(in[0]), CT_DEVICE_CPU); /* the right values on the CPU */
    }
}

/* A relative change of 2^-21 (4 ulps of float32) off the CPU. */
static ct_tensor *run_four_ulps_off(ct_tensor *const *in, const conf_args *a)
{
    if (a->device.type == CT_CPU) return ct_clone(in[0]);
    return ct_mul_scalar(in[0], 1.0 + 0x1p-21);
}

static const conf_case wrong_cases[] = {
    {.name = "values", .in = {{SHAPE(3, 5)}}, .args = {.n = 0}},
    {.name = "shape", .in = {{SHAPE(3, 5)}}, .args = {.n = 1}},
    {.name = "dtype", .in = {{SHAPE(3, 5)}}, .args = {.n = 2}},
    {.name = "error", .in = {{SHAPE(3, 5)}}, .args = {.n = 3}},
    {.name = "device", .in = {{SHAPE(3, 5)}}, .args = {.n = 4}},
    {0}};
static const conf_case close_cases[] = {{.name = "[40, 50]", .in = {{SHAPE(40, 50)}}}, {0}};

static void test_the_harness_reports_every_kind_of_difference(void **state)
{
    (void)state;
    skip_without_devices();
    const conf_op wrong = {"wrong off the CPU", 1, CONF_DT(CT_F32), {CONF_ANY}, wrong_cases, 1e6,
                           run_wrong_off_the_cpu, false, NULL, 0};
    conf_totals totals = conf_run_op(&wrong, devices, device_count, true);
    assert_int_equal(totals.checks, 5 * device_count);
    assert_int_equal(totals.passed, 0);
    ct_clear_error();

    const conf_op within = {"4 ulps, 8 allowed", 1, CONF_DT(CT_F32), {CONF_ANY}, close_cases, 8,
                            run_four_ulps_off, false, NULL, 0};
    totals = conf_run_op(&within, devices, device_count, true);
    assert_int_equal(totals.passed, device_count);
    const conf_op beyond = {"4 ulps, 2 allowed", 1, CONF_DT(CT_F32), {CONF_ANY}, close_cases, 2,
                            run_four_ulps_off, false, NULL, 0};
    totals = conf_run_op(&beyond, devices, device_count, true);
    conf_release_inputs();
    assert_int_equal(totals.passed, 0);
}

/* ---- every kernel ran ---- */

/* Kernels no public call can launch. */
static const char *const unreachable_kernels[] = {
    "arange_b8",   /* ct_arange refuses bool, as torch.arange does */
    "linspace_b8", /* ct_linspace refuses bool, as torch.linspace does */
    /* conv2d's 16-bit kernels: its products refuse float16 and bfloat16 until ct_backend_gemm
     * takes them (branch half-matmul); then CONV2D_DTYPES in table_nn.c gains CONF_HALF */
    NULL};

static bool listed(const char *name, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], name) == 0) return true;
    return false;
}

/* Kernels a device's DNN library or own code does the work of (oneDNN's convolutions and the
 * float32 and float64 pooling loops on the CPU): their C build is run by
 * tests/backend/test_cpu_engines_agree, with the CPU's engine set to OpenBLAS. The CPU also runs
 * float32 and float64 attention itself, over its BLAS (backend/cpu/cpu_attention.c): the
 * attention kernels' C build runs for the 16-bit dtypes, which the tables ask for
 * (CTORCH_SDPA=fused; auto composes them on the CPU, faster there). */
static bool replaced_by_library(ct_device device, const char *kernel)
{
    if (device.type != CT_CPU) return false;
    size_t length = strlen(kernel);
    const char *suffix = length > 4 ? kernel + length - 4 : "";
    bool wide = strcmp(suffix, "_f32") == 0 || strcmp(suffix, "_f64") == 0;
    if (ct_cpu_pool_own_loops() && wide && strstr(kernel, "_pool2d") != NULL) return true;
    if (strncmp(kernel, "attention_", 10) == 0 && wide) return true;
    if (!ct_cpu_conv_in_onednn()) return false;
    return strncmp(kernel, "im2col_", 7) == 0 || strncmp(kernel, "col2im_", 7) == 0 ||
           strncmp(kernel, "conv2d_bias_fill_", 17) == 0;
}

static void test_every_kernel_ran_on_every_device(void **state)
{
    (void)state;
    skip_without_devices();
    if (getenv("CT_CONFORMANCE_ONLY")) skip(); /* a by-hand run of some entries reaches some kernels */
    run_harness_once();
    int missing = 0;
    for (int k = 0; k <= device_count; k++) {
        ct_device device = k == 0 ? CT_DEVICE_CPU : devices[k - 1];
        char name[CT_DEVICE_STRING_MAX];
        ct_device_format(device, name, sizeof name);
        for (int id = CT_K_NONE + 1; id < CT_KERNEL_COUNT; id++) {
            const char *kernel = ct_kernel_name((ct_kernel_id)id);
            if (listed(kernel, unreachable_kernels) || replaced_by_library(device, kernel) ||
                ct_backend_launch_count(device, (ct_kernel_id)id) > 0)
                continue;
            printf("kernel %s never ran on %s\n", kernel, name);
            missing++;
        }
    }
    if (missing) fail_msg("%d kernel launches missing: add cases that reach them", missing);
}

/* ---- the table covers the headers ---- */

/* Calls that return a tensor but compute nothing a device could get wrong. */
static const char *const not_in_table[] = {
    "ct_retain",     /* returns its argument */
    "ct_scope_keep", /* returns its argument */
    "ct_empty",      /* its values are unspecified */
    "ct_to",         /* the harness moves every input and result with it */
    "ct_get_rng_state", /* host values on the cpu (tests/tensor/test_rng_state.c) */
    NULL};

/* Every `ct_tensor *ct_name(` declared in the header must have an entry or be listed above;
 * returns how many do not. */
static int uncovered_calls(const char *header)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/include/ctorch/%s", CTORCH_SOURCE_DIR, header);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    static char text[1 << 17];
    size_t length = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[length] = '\0';
    int uncovered = 0, declared = 0;
    const char *marker = "ct_tensor *ct_";
    for (const char *at = strstr(text, marker); at; at = strstr(at + 1, marker)) {
        const char *name = at + strlen("ct_tensor *");
        size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (name[n] != '(' || n >= 64) continue;
        char call[64];
        memcpy(call, name, n);
        call[n] = '\0';
        declared++;
        if (conf_find_op(call) || listed(call, not_in_table)) continue;
        printf("%s: %s has no conformance entry\n", header, call);
        uncovered++;
    }
    if (declared == 0) fail_msg("no `ct_tensor *ct_...(` declaration found in %s", path);
    return uncovered;
}

static void test_every_public_call_has_an_entry(void **state)
{
    (void)state;
    skip_without_devices();
    int uncovered = uncovered_calls("ops.h") + uncovered_calls("tensor.h") +
                    uncovered_calls("nn_functional.h");
    if (uncovered) fail_msg("%d public calls are not in the conformance table", uncovered);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keeps the report in order with cmocka's messages */
    fake_run = argc > 1 && strcmp(argv[1], "--fake") == 0;
    cuda_run = argc > 1 && strcmp(argv[1], "--cuda") == 0;
    if (fake_run) ct_test_install_fake_opencl();
    conf_optimizer_set_per_parameter = ct_optimizer_set_per_parameter;
    const ct_device_type types[] = {CT_OPENCL, CT_CUDA};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < ct_device_count(types[t]) && device_count < CONF_MAX_DEVICES; i++)
            if (!cuda_run || types[t] == CT_CUDA) devices[device_count++] = (ct_device){types[t], i};
    if (cuda_run && device_count == 0) {
        if (!ct_backend_is_compiled(CT_CUDA)) {
            printf("skipped: ctorch was built without the CUDA backend\n");
        } else { /* the stand-in should have given one: a failure, not a skip */
            fprintf(stderr, "--cuda: no CUDA device (%s)\n", ct_backend_unavailable_reason(CT_CUDA));
            return 1;
        }
    }
    ct_clear_error();
    printf("devices:");
    for (int i = 0; i < device_count; i++) {
        char name[32];
        printf(" %s", ct_device_format(devices[i], name, sizeof name));
    }
    printf("\n");
    if (device_count == 0 && !cuda_run)
        printf("skipped: no OpenCL or CUDA device here (the --fake run checks the harness on "
               "the fake two-device backend)\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_public_call_has_an_entry),
        cmocka_unit_test(test_every_op_matches_the_cpu_on_every_device),
        cmocka_unit_test(test_every_kernel_ran_on_every_device),
        cmocka_unit_test(test_the_harness_reports_every_kind_of_difference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
