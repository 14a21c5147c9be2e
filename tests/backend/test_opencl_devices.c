/* The OpenCL devices: found through the ICD loader and numbered GPUs and accelerators first;
 * two PoCL devices under POCL_DEVICES="pthread pthread"; their properties; free memory as total
 * minus what ctorch holds where the driver has no query, and `ctorch info`, started from here,
 * lists the same devices and says so; finding them leaves the ICD loader's variables whole, and
 * a driver named twice gives its devices once; indices past the last device and allocations
 * larger than the device are errors with the sizes. */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "opencl_test.h"
#include "support/run_command.h"
#include "tensor/tensor_internal.h"

static void devices_are_ordered_accelerators_first_then_cpus(void **state)
{
    (void)state;
#ifdef CTORCH_HAVE_OPENCL
    /* discovery order: cpu, gpu, cpu, accelerator, gpu (two platforms' devices in a row) */
    bool is_accelerator[5] = {false, true, false, true, true};
    int order[5];
    ct_opencl_order_devices(is_accelerator, 5, order);
    int expected[5] = {1, 3, 4, 0, 2};
    assert_memory_equal(order, expected, sizeof expected);
#endif
    REQUIRE_OPENCL_DEVICES(1);
    /* on the devices here: once a CPU-type device comes, no GPU follows */
    bool seen_cpu_type = false;
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) {
        ct_device_props props;
        assert_int_equal(ct_get_device_properties((ct_device){CT_OPENCL, i}, &props), CT_OK);
        if (props.is_gpu) assert_false(seen_cpu_type);
        seen_cpu_type = seen_cpu_type || !props.is_gpu;
    }
}

static void pocl_devices_gives_two_devices(void **state)
{
    (void)state;
    const char *pocl_devices = getenv("POCL_DEVICES");
    if (!pocl_devices || strcmp(pocl_devices, "pthread pthread") != 0) {
        print_message("POCL_DEVICES is not \"pthread pthread\": skipped\n");
        skip();
    }
    REQUIRE_OPENCL_DEVICES(1);
    assert_true(ct_is_available(CT_OPENCL));
    assert_string_equal(ct_backend_unavailable_reason(CT_OPENCL), "");
    assert_true(ct_device_count(CT_OPENCL) >= 2);
    ct_device parsed;
    assert_int_equal(ct_device_parse("opencl:1", &parsed), CT_OK);
    assert_true(ct_device_equal(parsed, OPENCL1));
}

static void properties_describe_each_device(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) {
        ct_device_props props;
        assert_int_equal(ct_get_device_properties((ct_device){CT_OPENCL, i}, &props), CT_OK);
        assert_true(strlen(props.name) > 0);
        assert_true(strlen(props.vendor) > 0);
        assert_true(strlen(props.driver_version) > 0);
        assert_true(props.compute_units >= 1);
        assert_true(props.total_memory > 0);
        assert_true(props.max_allocation > 0 && props.max_allocation <= props.total_memory);
#ifdef CTORCH_HAVE_OPENCL
        assert_int_equal(ct_opencl_physical_index(i), i); /* no visible-devices variable here */
#endif
    }
    /* PoCL devices are CPU devices: usable by name, never chosen as the best device */
    ct_device_props props;
    ct_get_device_properties(OPENCL0, &props);
    if (!props.is_gpu) {
        ct_device best;
        unsetenv("CTORCH_DEVICE");
        assert_int_equal(ct_best_device(&best), CT_OK);
        assert_int_not_equal(best.type, CT_OPENCL);
    }
}

static void free_memory_is_total_minus_what_ctorch_holds(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_device_props props;
    assert_int_equal(ct_get_device_properties(OPENCL0, &props), CT_OK);
    if (!props.free_memory_is_estimate) {
        print_message("the device reports its own free memory: skipped\n");
        skip();
    }
    ct_empty_cache(OPENCL0);
    size_t free_before, total;
    assert_int_equal(ct_mem_get_info(OPENCL0, &free_before, &total), CT_OK);
    assert_int_equal(total, props.total_memory);
    assert_int_equal(free_before, total - ct_memory_reserved(OPENCL0));
    int64_t shape[1] = {16 << 20}; /* 64 MiB of floats */
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, OPENCL0);
    assert_non_null(t);
    size_t free_after;
    assert_int_equal(ct_mem_get_info(OPENCL0, &free_after, &total), CT_OK);
    assert_true(ct_memory_reserved(OPENCL0) >= (size_t)64 << 20);
    assert_int_equal(free_after, total - ct_memory_reserved(OPENCL0));
    ct_release(t);
    ct_empty_cache(OPENCL0);
    assert_int_equal(ct_mem_get_info(OPENCL0, &free_after, &total), CT_OK);
    assert_int_equal(free_after, free_before);
}

/* Runs `ctorch info --json` and returns its parsed output. */
static cJSON *info_json(void)
{
    char command[1024];
    snprintf(command, sizeof command, "'%s' info --json 2>/dev/null", CTORCH_TOOL_PATH);
    int status;
    char *out = ct_test_run_command(command, &status);
    assert_int_equal(status, 0);
    cJSON *root = cJSON_Parse(out);
    if (!root) fail_msg("not JSON: %s", out);
    free(out);
    return root;
}

static void info_says_which_free_memory_is_an_estimate(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    cJSON *root = info_json();
    int opencl_devices = 0;
    cJSON *device;
    cJSON_ArrayForEach(device, cJSON_GetObjectItem(root, "devices")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(device, "device"));
        cJSON *estimate = cJSON_GetObjectItem(device, "free_memory_is_estimate");
        assert_true(cJSON_IsBool(estimate));
        if (strcmp(name, "cpu") == 0) assert_true(cJSON_IsFalse(estimate));
        if (strncmp(name, "opencl:", 7) != 0) continue;
        opencl_devices++;
        ct_device_props props;
        ct_get_device_properties((ct_device){CT_OPENCL, atoi(name + 7)}, &props);
        assert_int_equal(cJSON_IsTrue(estimate), props.free_memory_is_estimate);
        assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(device, "max_allocation")) > 0);
    }
    if (opencl_devices != ct_device_count(CT_OPENCL))
        fail_msg("`ctorch info --json` lists %d OpenCL devices, this process has %d", opencl_devices,
                 ct_device_count(CT_OPENCL));
    cJSON_Delete(root);
}

/* The child of the tests below: finds the OpenCL devices, then prints how many and the loader's
 * list of drivers. */
static int print_loader_list(void)
{
    int count = ct_device_count(CT_OPENCL);
    const char *list = getenv("OCL_ICD_FILENAMES");
    printf("devices=%d OCL_ICD_FILENAMES=%s\n", count, list ? list : "(unset)");
    return 0;
}

/* Runs `environment <this program> --loader-list`; returns its output (malloc'ed). */
static char *run_loader_list(const char *environment)
{
    char self[4096], command[8192];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(length > 0);
    self[length] = '\0';
    snprintf(command, sizeof command, "%s '%s' --loader-list 2>/dev/null", environment, self);
    int status;
    char *out = ct_test_run_command(command, &status);
    assert_int_equal(status, 0);
    if (strncmp(out, "devices=", 8) != 0) fail_msg("the child printed '%s'", out);
    return out;
}

/* Finding the devices leaves the environment as it was, so that the programs this one starts
 * (`ctorch info`, workers) find the same drivers. Khronos' ICD loader cuts OCL_ICD_FILENAMES at
 * its first ':' as it reads it; ctorch restores it. The child is given the list here plus two
 * names that load nothing. */
static void finding_devices_leaves_the_loaders_list_of_drivers_whole(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    const char *drivers = getenv("OCL_ICD_FILENAMES");
    char list[2048], environment[2100], expected[2100];
    snprintf(list, sizeof list, "%s%slibctorch-test-no-driver-1.so:libctorch-test-no-driver-2.so",
             drivers ? drivers : "", drivers && drivers[0] ? ":" : "");
    snprintf(environment, sizeof environment, "OCL_ICD_FILENAMES='%s'", list);
    snprintf(expected, sizeof expected, "OCL_ICD_FILENAMES=%s\n", list);
    char *out = run_loader_list(environment);
    if (!strstr(out, expected)) fail_msg("the child printed '%s', expected '%s'", out, expected);
    free(out);
}

/* Writes `library` into the vendors file folder/name, with no newline after it: the Khronos
 * loader of CUDA's toolkit takes the whole file as the library's name (PoCL's own vendors file
 * has none either). */
static void write_icd_file(const char *folder, const char *name, const char *library)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(library, file);
    assert_int_equal(fclose(file), 0);
}

/* The devices of a driver that two vendors files name (ocl-icd then lists its platform twice)
 * are numbered once: PoCL's, alone in a vendors folder, then named twice there. */
static void a_driver_named_twice_gives_its_devices_once(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    char folder[] = "/tmp/ctorch_icd_XXXXXX", environment[256], path[512];
    assert_non_null(mkdtemp(folder));
    snprintf(environment, sizeof environment, "env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS=%s", folder);
    write_icd_file(folder, "pocl.icd", "libpocl.so.2");
    char *out = run_loader_list(environment);
    int once = atoi(out + 8);
    free(out);
    write_icd_file(folder, "pocl-again.icd", "libpocl.so.2");
    out = run_loader_list(environment);
    int twice = atoi(out + 8);
    free(out);
    snprintf(path, sizeof path, "%s/pocl.icd", folder);
    unlink(path);
    snprintf(path, sizeof path, "%s/pocl-again.icd", folder);
    unlink(path);
    rmdir(folder);
    if (once == 0) {
        print_message("PoCL (libpocl.so.2) named in a vendors folder gives no device here: "
                      "skipped\n");
        skip();
    }
    assert_int_equal(twice, once);
}

static void an_index_past_the_last_device_names_the_valid_range(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    ct_device device;
    int count = ct_device_count(CT_OPENCL);
    char range[64];
    snprintf(range, sizeof range, "there are %d opencl devices; use index 0 to %d", count, count - 1);
    assert_int_equal(ct_device_parse("opencl:7", &device), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, range);
    int64_t shape[1] = {4};
    assert_null(ct_zeros(shape, 1, CT_F32, (ct_device){CT_OPENCL, 7}));
    assert_error(CT_ERR_DEVICE, "device 'opencl:7' does not exist");
}

static void an_allocation_larger_than_the_device_is_out_of_memory_with_the_sizes(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_device_props props;
    ct_get_device_properties(OPENCL0, &props);
    /* more than the whole device */
    int64_t shape[1] = {(int64_t)(props.total_memory / 4) + (1 << 28)};
    assert_null(ct_empty(shape, 1, CT_F32, OPENCL0));
    assert_int_equal(ct_last_error(), CT_ERR_OUT_OF_MEMORY);
    const char *message = ct_last_error_message();
    assert_non_null(strstr(message, "out of memory on opencl:0: tried to allocate"));
    assert_non_null(strstr(message, "in total"));
    assert_non_null(strstr(message, "free"));
    assert_non_null(strstr(message, "reserved"));
    ct_clear_error();
    /* within the device, but more than its largest single allocation */
    if (props.max_allocation < props.total_memory) {
        int64_t big[1] = {(int64_t)(props.max_allocation / 4) + (1 << 20)};
        assert_null(ct_empty(big, 1, CT_F32, OPENCL0));
        assert_error(CT_ERR_OUT_OF_MEMORY, "out of memory on opencl:0");
    }
    /* the device still works afterwards */
    int64_t small[1] = {3};
    ct_tensor *t = ct_full(small, 1, 2.5, CT_F32, OPENCL0);
    double value;
    assert_int_equal(ct_item(ct_select(t, 0, 2), &value), CT_OK);
    assert_true(value == 2.5);
    ct_release(t);
}

static void every_kernel_belongs_to_a_family_the_backend_builds(void **state)
{
    (void)state;
#ifdef CTORCH_HAVE_OPENCL
    for (int id = 1; id < CT_KERNEL_COUNT; id++)
        if (ct_kernel_family_of((ct_kernel_id)id) < 0)
            fail_msg("kernel '%s' has no family in the OpenCL backend", ct_kernel_name((ct_kernel_id)id));
    assert_int_equal(ct_kernel_family_of(CT_K_NONE), -1);
    assert_int_equal(ct_kernel_family_of(CT_KERNEL_COUNT), -1);
#else
    skip();
#endif
}

static void every_kernel_exists_on_every_device(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
#ifdef CTORCH_HAVE_OPENCL
    for (int index = 0; index < ct_device_count(CT_OPENCL); index++)
        for (int id = 1; id < CT_KERNEL_COUNT; id++)
            if (ct_opencl_prepare_kernel(index, id) != CT_OK)
                fail_msg("kernel '%s' on opencl:%d: %s", ct_kernel_name((ct_kernel_id)id), index,
                         ct_last_error_message());
    assert_int_equal(ct_opencl_prepare_kernel(0, CT_K_NONE), CT_ERR_INTERNAL);
    ct_clear_error();
#endif
}

static void a_warm_loop_makes_no_device_allocations(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[2] = {64, 100};
    ct_memory_stats before, after;
    for (int step = 0; step < 12; step++) {
        if (step == 2) assert_int_equal(ct_memory_stats_get(OPENCL0, &before), CT_OK);
        ct_tensor *x = ct_rand(shape, 2, CT_F32, OPENCL0);
        ct_tensor *y = ct_mul(x, x);
        ct_tensor *z = ct_sum(y, (int[]){1}, 1, false);
        ct_release(x), ct_release(y), ct_release(z);
    }
    assert_int_equal(ct_memory_stats_get(OPENCL0, &after), CT_OK);
    assert_int_equal(after.device_allocations, before.device_allocations);
    assert_true(after.cache_hits > before.cache_hits);
    ct_empty_cache(OPENCL0); /* what is left reserved is held by live tensors */
    assert_int_equal(ct_memory_reserved(OPENCL0), ct_memory_allocated(OPENCL0));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--loader-list") == 0) return print_loader_list();
    ct_scope_push();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(devices_are_ordered_accelerators_first_then_cpus),
        cmocka_unit_test(pocl_devices_gives_two_devices),
        cmocka_unit_test(properties_describe_each_device),
        cmocka_unit_test(free_memory_is_total_minus_what_ctorch_holds),
        cmocka_unit_test(info_says_which_free_memory_is_an_estimate),
        cmocka_unit_test(finding_devices_leaves_the_loaders_list_of_drivers_whole),
        cmocka_unit_test(a_driver_named_twice_gives_its_devices_once),
        cmocka_unit_test(an_index_past_the_last_device_names_the_valid_range),
        cmocka_unit_test(an_allocation_larger_than_the_device_is_out_of_memory_with_the_sizes),
        cmocka_unit_test(every_kernel_belongs_to_a_family_the_backend_builds),
        cmocka_unit_test(every_kernel_exists_on_every_device),
        cmocka_unit_test(a_warm_loop_makes_no_device_allocations),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_scope_pop();
    return failed;
}
