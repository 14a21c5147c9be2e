/* The one kernel text compiles for every device type: as OpenCL C on every OpenCL device here
 * (PoCL in CI) and as CUDA C through NVRTC (no GPU needed), each program giving every kernel the
 * kernel list names. Through NVRTC each family compiles for sm_80 and sm_90 with warnings as
 * errors, and its PTX has an .entry for every kernel of the family's list. The CPU compiles the
 * same text into the library itself. Skipped, not failed, where neither compiler is there. */
#include <stdio.h>

#include "kernels/kernel_ids.h"
#include "kernels/kernel_sources.h"
#include "test_common.h"

#ifdef CT_TEST_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif
#ifdef CT_TEST_HAVE_NVRTC
#include <nvrtc.h>
#endif

/* The prelude followed by one family, as a backend builds it. */
static char *program_text(int family)
{
    size_t size = strlen(ct_kernel_source_prelude) + strlen(ct_kernel_family_sources[family]) + 2;
    char *text = malloc(size);
    snprintf(text, size, "%s\n%s", ct_kernel_source_prelude, ct_kernel_family_sources[family]);
    return text;
}

static void every_kernel_id_has_its_own_name(void **state)
{
    (void)state;
    assert_true(ct_kernel_family_count >= 6);
    for (int id = 1; id < CT_KERNEL_COUNT; id++) {
        const char *name = ct_kernel_name((ct_kernel_id)id);
        assert_true(strlen(name) > 3);
        for (int other = 1; other < id; other++)
            assert_string_not_equal(name, ct_kernel_name((ct_kernel_id)other));
    }
    assert_string_equal(ct_kernel_name(CT_KERNEL_COUNT), "invalid");
    /* every kernel has a family, one of the embedded sources, whose index is its place there
     * (CT_KERNEL_SOURCES and the embedded tables list the families in one order) */
    assert_int_equal(ct_kernel_family_count, CT_KERNEL_FAMILY_COUNT);
    for (int id = 1; id < CT_KERNEL_COUNT; id++) {
        const char *family = ct_kernel_family((ct_kernel_id)id);
        assert_non_null(family);
        assert_int_equal(ct_kernel_family_index(family), ct_kernel_family_of((ct_kernel_id)id));
        bool embedded = false;
        for (int f = 0; f < ct_kernel_family_count; f++)
            embedded |= strcmp(family, ct_kernel_family_names[f]) == 0;
        assert_true(embedded);
    }
    assert_null(ct_kernel_family(CT_K_NONE));
}

#ifdef CT_TEST_HAVE_OPENCL
static void the_kernels_build_as_opencl_c_on_every_device(void **state)
{
    (void)state;
    cl_platform_id platforms[8];
    cl_uint platform_count = 0;
    if (clGetPlatformIDs(8, platforms, &platform_count) != CL_SUCCESS || platform_count == 0) {
        print_message("no OpenCL platform here: skipped\n");
        skip();
    }
    int devices_checked = 0;
    for (cl_uint p = 0; p < platform_count; p++) {
        cl_device_id devices[8];
        cl_uint device_count = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 8, devices, &device_count) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < device_count; d++) {
            cl_int err;
            cl_context context = clCreateContext(NULL, 1, &devices[d], NULL, NULL, &err);
            assert_int_equal(err, CL_SUCCESS);
            int kernels_found = 0;
            for (int f = 0; f < ct_kernel_family_count; f++) {
                char *text = program_text(f);
                const char *source = text;
                cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
                assert_int_equal(err, CL_SUCCESS);
                err = clBuildProgram(program, 1, &devices[d], "-cl-std=CL1.2", NULL, NULL);
                if (err != CL_SUCCESS) {
                    static char log[1 << 16];
                    clGetProgramBuildInfo(program, devices[d], CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
                    fail_msg("family %s does not build as OpenCL C: %s", ct_kernel_family_names[f], log);
                }
                for (int id = 1; id < CT_KERNEL_COUNT; id++) {
                    cl_kernel kernel = clCreateKernel(program, ct_kernel_name((ct_kernel_id)id), &err);
                    if (err == CL_SUCCESS) {
                        kernels_found++;
                        clReleaseKernel(kernel);
                    }
                }
                clReleaseProgram(program);
                free(text);
            }
            assert_int_equal(kernels_found, CT_KERNEL_COUNT - 1);
            clReleaseContext(context);
            devices_checked++;
        }
    }
    assert_true(devices_checked > 0);
}
#endif

#ifdef CT_TEST_HAVE_NVRTC
/* The kernel names of family (NULL-terminated; the caller frees): the ids whose family it is. */
static const char **kernels_of_family(const char *family)
{
    const char **names = calloc(CT_KERNEL_COUNT, sizeof *names);
    int count = 0;
    for (int id = 1; id < CT_KERNEL_COUNT; id++)
        if (strcmp(ct_kernel_family((ct_kernel_id)id), family) == 0) names[count++] = ct_kernel_name((ct_kernel_id)id);
    return names;
}

/* The architectures every kernel must compile for: Ampere (A100) and Hopper (H100). */
static const char *const architectures[] = {"sm_80", "sm_90"};


/* Compiles source for arch with warnings as errors and checks that the PTX has an .entry for each
 * of kernels (NULL-terminated). NVRTC 13 has no option that turns every warning into an error
 * (it refuses --Werror=all-warnings, -Werror and -Wall as unrecognized options; only single
 * diagnostics by number with --diag-error): a compile whose log holds a warning fails here as an
 * error would, and ptxas's own warnings are errors through --ptxas-options=--warning-as-error.
 * --Ofast-compile=max keeps the test short: both architectures take ~4 s of CPU instead of ~43 s
 * with NVVM's full optimisation (2 busy cores; reduce alone 8-17 s per architecture); the front end,
 * which gives the warnings and errors, and the code generation to PTX and SASS are the same
 * path, only less optimised (the backend compiles at run time with full optimisation).
 * false with a message naming the program, the architecture and NVRTC's log otherwise. */
static bool nvrtc_compile_checked(const char *source, const char *name, const char *arch,
                                  const char *const *kernels, char *message, size_t message_size)
{
    char arch_option[64];
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", arch);
    /* As the CUDA backend compiles (-default-device --fmad=false), for a real architecture: PTX,
     * then SASS. */
    const char *options[] = {arch_option, "-default-device", "--fmad=false",
                             "--ptxas-options=--warning-as-error", "--Ofast-compile=max"};
    nvrtcProgram program;
    nvrtcResult result = nvrtcCreateProgram(&program, source, name, 0, NULL, NULL);
    if (result != NVRTC_SUCCESS) {
        snprintf(message, message_size, "%s: nvrtcCreateProgram failed: %s", name, nvrtcGetErrorString(result));
        return false;
    }
    result = nvrtcCompileProgram(program, (int)(sizeof options / sizeof options[0]), options);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    char *log = calloc(log_size + 1, 1);
    nvrtcGetProgramLog(program, log);
    bool ok = result == NVRTC_SUCCESS && !strstr(log, "warning");
    if (!ok) {
        snprintf(message, message_size, "%s does not compile for %s through NVRTC without warnings (%s): %s",
                 name, arch, nvrtcGetErrorString(result), log);
    } else {
        size_t ptx_size = 0;
        nvrtcGetPTXSize(program, &ptx_size);
        char *ptx = calloc(ptx_size + 1, 1);
        nvrtcGetPTX(program, ptx);
        for (int k = 0; kernels[k] && ok; k++) {
            char entry[160];
            snprintf(entry, sizeof entry, ".entry %s(", kernels[k]);
            if (!strstr(ptx, entry)) {
                snprintf(message, message_size, "%s for %s: the PTX has no \"%s\"", name, arch, entry);
                ok = false;
            }
        }
        free(ptx);
    }
    free(log);
    nvrtcDestroyProgram(&program);
    return ok;
}

static void the_kernels_compile_as_cuda_c_through_nvrtc_for_sm_80_and_sm_90(void **state)
{
    (void)state;
    static char message[1 << 16];
    int listed = 0;
    for (int f = 0; f < ct_kernel_family_count; f++) {
        const char **kernels = kernels_of_family(ct_kernel_family_names[f]);
        for (int k = 0; kernels[k]; k++) listed++;
        char *text = program_text(f);
        for (size_t a = 0; a < sizeof architectures / sizeof architectures[0]; a++)
            if (!nvrtc_compile_checked(text, ct_kernel_family_names[f], architectures[a],
                                       (const char *const *)kernels, message, sizeof message))
                fail_msg("%s", message);
        free(text);
        free((void *)kernels);
    }
    assert_int_equal(listed, CT_KERNEL_COUNT - 1); /* every kernel was looked for */
}

/* The error path: a source that does not compile, and one that only warns, fail with NVRTC's log
 * in the message; a kernel missing from the PTX is named. */
static void a_broken_source_fails_with_the_log_in_the_message(void **state)
{
    (void)state;
    static char message[1 << 14];
    const char *const kernels[] = {"broken_kernel", NULL};
    const char *broken = "extern \"C\" __global__ void broken_kernel(float *x) { x[0] = no_such_name; }\n";
    assert_false(nvrtc_compile_checked(broken, "broken", "sm_80", kernels, message, sizeof message));
    assert_non_null(strstr(message, "broken does not compile for sm_80"));
    assert_non_null(strstr(message, "NVRTC_ERROR_COMPILATION"));
    assert_non_null(strstr(message, "identifier \"no_such_name\" is undefined"));

    const char *warns = "extern \"C\" __global__ void broken_kernel(float *x) { int unused_here = 1; x[0] = 1; }\n";
    assert_false(nvrtc_compile_checked(warns, "warns", "sm_90", kernels, message, sizeof message));
    assert_non_null(strstr(message, "warns does not compile for sm_90"));
    assert_non_null(strstr(message, "unused_here"));

    const char *fine = "extern \"C\" __global__ void other_kernel(float *x) { x[0] = 1; }\n";
    assert_false(nvrtc_compile_checked(fine, "fine", "sm_90", kernels, message, sizeof message));
    assert_non_null(strstr(message, "the PTX has no \".entry broken_kernel(\""));
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kernel_id_has_its_own_name),
#ifdef CT_TEST_HAVE_OPENCL
        cmocka_unit_test(the_kernels_build_as_opencl_c_on_every_device),
#endif
#ifdef CT_TEST_HAVE_NVRTC
        cmocka_unit_test(the_kernels_compile_as_cuda_c_through_nvrtc_for_sm_80_and_sm_90),
        cmocka_unit_test(a_broken_source_fails_with_the_log_in_the_message),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
