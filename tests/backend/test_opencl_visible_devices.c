/* CTORCH_OPENCL_VISIBLE_DEVICES follows CUDA_VISIBLE_DEVICES' rules: a comma list of physical
 * indices is the logical order; the first entry that is not a valid index (garbage, out of
 * range, a repeat) ends the list; empty hides every device. Devices are found once per process,
 * so each case runs this program again with the variable set (`--list` prints what it sees). */
#include <unistd.h>

#include "opencl_test.h"

/* The child: "count=N physical=a,b" (and the error for opencl:N past the end), or
 * "unavailable: reason". */
static int list_devices(void)
{
    if (!ct_is_available(CT_OPENCL)) {
        printf("unavailable: %s\n", ct_backend_unavailable_reason(CT_OPENCL));
        return 0;
    }
    int count = ct_device_count(CT_OPENCL);
    printf("count=%d physical=", count);
#ifdef CTORCH_HAVE_OPENCL
    for (int i = 0; i < count; i++) printf("%s%d", i ? "," : "", ct_opencl_physical_index(i));
#endif
    /* the last logical device works; the one after it is an error with the range */
    int64_t shape[1] = {2};
    ct_tensor *t = ct_full(shape, 1, 7.0, CT_F32, (ct_device){CT_OPENCL, count - 1});
    double value = 0;
    ct_tensor *last = ct_select(t, 0, 1);
    printf(" works=%d", ct_item(last, &value) == CT_OK && value == 7.0);
    ct_release(last);
    ct_release(t);
    char past[32];
    snprintf(past, sizeof past, "opencl:%d", count);
    ct_device device;
    if (ct_device_parse(past, &device) != CT_OK) printf(" error=%s", ct_last_error_message());
    printf("\n");
    return 0;
}

/* Runs `environment <this program> arguments` through the shell; returns its standard output
 * (and its exit status in *exit_status). */
static char *run_self(const char *environment, const char *arguments, int *exit_status)
{
    static char self[4096], out[1 << 16];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(length > 0);
    self[length] = '\0';
    char command[8192];
    snprintf(command, sizeof command, "%s '%s' %s 2>&1", environment, self, arguments);
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    size_t used = 0, n;
    while ((n = fread(out + used, 1, sizeof out - used - 1, pipe)) > 0) used += n;
    out[used] = '\0';
    *exit_status = pclose(pipe);
    return out;
}

/* Runs this program's --list with the variable set to value (unset for NULL). */
static char *run_with(const char *value)
{
    char environment[512];
    if (value)
        snprintf(environment, sizeof environment, "CTORCH_OPENCL_VISIBLE_DEVICES='%s'", value);
    else
        snprintf(environment, sizeof environment, "env -u CTORCH_OPENCL_VISIBLE_DEVICES");
    int status;
    char *out = run_self(environment, "--list", &status);
    assert_int_equal(status, 0);
    return out;
}

/* Skips unless this machine shows at least two OpenCL devices with the variable unset. */
static void require_two_physical_devices(void)
{
    const char *all = run_with(NULL);
    if (strncmp(all, "count=", 6) != 0 || atoi(all + 6) < 2) {
        print_message("needs two OpenCL devices (POCL_DEVICES=\"pthread pthread\"), saw: %s", all);
        skip();
    }
}

#define assert_contains(text, part)                                                              \
    do {                                                                                         \
        if (!strstr((text), (part))) fail_msg("'%s' lacks '%s'", (text), (part));                \
    } while (0)

static void the_list_is_parsed_with_cuda_rules(void **state)
{
    (void)state;
#ifdef CTORCH_HAVE_OPENCL
    int order[8];
    assert_int_equal(ct_opencl_parse_visible_devices("2,0,1", 3, order, 8), 3);
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 0);
    assert_int_equal(order[2], 1);
    assert_int_equal(ct_opencl_parse_visible_devices(" 1 , 0 ", 3, order, 8), 2);
    assert_int_equal(order[0], 1);
    assert_int_equal(ct_opencl_parse_visible_devices("0,x,1", 3, order, 8), 1);  /* garbage */
    assert_int_equal(ct_opencl_parse_visible_devices("1,9,0", 3, order, 8), 1);  /* out of range */
    assert_int_equal(ct_opencl_parse_visible_devices("1,1,0", 3, order, 8), 1);  /* a repeat */
    assert_int_equal(ct_opencl_parse_visible_devices("1,,0", 3, order, 8), 1);   /* an empty entry */
    assert_int_equal(ct_opencl_parse_visible_devices("0,1x", 3, order, 8), 1);
    assert_int_equal(ct_opencl_parse_visible_devices("-1,0", 3, order, 8), 0);
    assert_int_equal(ct_opencl_parse_visible_devices("99999999999999", 3, order, 8), 0);
    assert_int_equal(ct_opencl_parse_visible_devices("", 3, order, 8), 0);
    assert_int_equal(ct_opencl_parse_visible_devices("0,1,2", 3, order, 2), 2); /* capacity */
    assert_int_equal(ct_opencl_parse_visible_devices("0,", 3, order, 8), 1);
#else
    skip();
#endif
}

static void unset_shows_every_device_in_physical_order(void **state)
{
    (void)state;
    require_two_physical_devices();
    const char *out = run_with(NULL);
    assert_contains(out, "physical=0,1");
    assert_contains(out, "works=1");
}

static void a_list_reorders_the_devices(void **state)
{
    (void)state;
    require_two_physical_devices();
    const char *out = run_with("1,0");
    assert_contains(out, "count=2 physical=1,0 works=1");
    out = run_with(" 1 , 0 ");
    assert_contains(out, "count=2 physical=1,0");
    out = run_with("1");
    assert_contains(out, "count=1 physical=1 works=1");
    assert_contains(out, "device 'opencl:1' does not exist: there is 1 opencl device; use index 0");
}

static void a_bad_entry_ends_the_list(void **state)
{
    (void)state;
    require_two_physical_devices();
    assert_contains(run_with("0,garbage,1"), "count=1 physical=0 works=1");
    assert_contains(run_with("1,7,0"), "count=1 physical=1 works=1"); /* out of range */
    assert_contains(run_with("1,1,0"), "count=1 physical=1 works=1"); /* a repeat */
}

static void a_list_that_names_no_device_makes_the_backend_unavailable(void **state)
{
    (void)state;
    require_two_physical_devices();
    const char *out = run_with("garbage");
    assert_contains(out, "unavailable: CTORCH_OPENCL_VISIBLE_DEVICES='garbage' names no device");
    assert_contains(out, "from 0 to");
    out = run_with("7");
    assert_contains(out, "unavailable: CTORCH_OPENCL_VISIBLE_DEVICES='7' names no device");
}

static void an_empty_value_hides_every_device(void **state)
{
    (void)state;
    require_two_physical_devices();
    const char *out = run_with("");
    assert_contains(out, "unavailable: CTORCH_OPENCL_VISIBLE_DEVICES is empty, which hides all");
}

static void without_a_platform_the_backend_is_unavailable_and_tests_skip(void **state)
{
    (void)state;
#ifdef CTORCH_HAVE_OPENCL
    /* A machine without OpenCL: the ICD loader finds no driver in a vendors folder that does
     * not exist, nor in OCL_ICD_FILENAMES, which Khronos' loader (the libOpenCL.so.1 of CUDA's
     * toolkit) reads whatever OCL_ICD_VENDORS says, and GPU machines set
     * (libpocl.so.2:libnvidia-opencl.so.1). */
    const char *no_drivers = "env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS=/nonexistent-ctorch-icd-folder";
    const char *vendors = getenv("OCL_ICD_VENDORS");
    if (vendors && strstr(vendors, "nonexistent-ctorch")) {
        print_message("this is the run without drivers: skipped\n");
        skip();
    }
    int status;
    const char *out = run_self(no_drivers, "--list", &status);
    assert_int_equal(status, 0);
    if (strncmp(out, "count=", 6) == 0) {
        print_message("the ICD loader here finds a platform without a vendors folder or "
                      "OCL_ICD_FILENAMES (%.*s): skipped\n", (int)strcspn(out, "\n"), out);
        skip();
    }
    assert_contains(out, "unavailable: no OpenCL platform (clGetPlatformIDs: ");
    /* this suite itself there: the tests that need a device say skipped, and it passes */
    out = run_self(no_drivers, "", &status);
    assert_int_equal(status, 0);
    assert_contains(out, "SKIPPED");
#else
    skip();
#endif
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) return list_devices();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_list_is_parsed_with_cuda_rules),
        cmocka_unit_test(unset_shows_every_device_in_physical_order),
        cmocka_unit_test(a_list_reorders_the_devices),
        cmocka_unit_test(a_bad_entry_ends_the_list),
        cmocka_unit_test(a_list_that_names_no_device_makes_the_backend_unavailable),
        cmocka_unit_test(an_empty_value_hides_every_device),
        cmocka_unit_test(without_a_platform_the_backend_is_unavailable_and_tests_skip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
