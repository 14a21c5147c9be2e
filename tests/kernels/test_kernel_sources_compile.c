/* The one kernel text compiles for every device type: as OpenCL C on every OpenCL device here
 * (PoCL in CI) and as CUDA C through NVRTC (no GPU needed), each program giving every kernel the
 * kernel list names. The CPU compiles the same text into the library itself. Skipped, not
 * failed, where neither compiler is there. */
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
    /* every kernel has a family, one of the embedded sources */
    for (int id = 1; id < CT_KERNEL_COUNT; id++) {
        const char *family = ct_kernel_family((ct_kernel_id)id);
        assert_non_null(family);
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
/* With the CUDA backend's options, for sm_80 and sm_90. NVRTC has no "warnings as errors" switch,
 * so a log that mentions a warning fails here. */
static void the_kernels_compile_as_cuda_c_through_nvrtc(void **state)
{
    (void)state;
    static const char *const architectures[] = {"--gpu-architecture=compute_80",
                                                "--gpu-architecture=compute_90"};
    for (size_t arch = 0; arch < sizeof architectures / sizeof architectures[0]; arch++) {
        int kernels_found = 0;
        for (int f = 0; f < ct_kernel_family_count; f++) {
            char *text = program_text(f);
            nvrtcProgram program;
            assert_int_equal(nvrtcCreateProgram(&program, text, ct_kernel_family_names[f], 0, NULL, NULL),
                             NVRTC_SUCCESS);
            const char *options[] = {architectures[arch], "-default-device"};
            nvrtcResult result = nvrtcCompileProgram(program, 2, options);
            size_t log_size = 0;
            nvrtcGetProgramLogSize(program, &log_size);
            char *log = malloc(log_size + 1);
            nvrtcGetProgramLog(program, log);
            log[log_size] = '\0';
            if (result != NVRTC_SUCCESS)
                fail_msg("family %s does not compile through NVRTC (%s): %s",
                         ct_kernel_family_names[f], architectures[arch], log);
            if (strstr(log, "warning"))
                fail_msg("family %s compiles with warnings through NVRTC (%s): %s",
                         ct_kernel_family_names[f], architectures[arch], log);
            free(log);
            size_t ptx_size = 0;
            nvrtcGetPTXSize(program, &ptx_size);
            char *ptx = malloc(ptx_size + 1);
            nvrtcGetPTX(program, ptx);
            for (int id = 1; id < CT_KERNEL_COUNT; id++) {
                char entry[160];
                snprintf(entry, sizeof entry, ".entry %s(", ct_kernel_name((ct_kernel_id)id));
                if (strstr(ptx, entry)) {
                    kernels_found++;
                    /* the family the backends compile for this kernel is this one */
                    assert_string_equal(ct_kernel_family((ct_kernel_id)id), ct_kernel_family_names[f]);
                }
            }
            free(ptx);
            nvrtcDestroyProgram(&program);
            free(text);
        }
        assert_int_equal(kernels_found, CT_KERNEL_COUNT - 1);
    }
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
        cmocka_unit_test(the_kernels_compile_as_cuda_c_through_nvrtc),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
