/* ct_cpu_get_info's CPU agrees with Linux's /proc/cpuinfo (the kernel reads the same cpuid and, as
 * ctorch does, drops an extension whose registers it does not save): every extension, the vendor,
 * family and model. The matrix engines it names report what the libraries say of themselves.
 * Passes on any x86 CPU: it compares, and expects no particular extension. */
#include <cblas.h>
#include <stdio.h>
#include <strings.h>

#include "test_common.h"

static const struct {
    const char *name;
    size_t offset;
} extensions[] = {
#define EXTENSION(name) {#name, offsetof(ct_cpu_extensions, name)}
    EXTENSION(avx2),        EXTENSION(fma),         EXTENSION(avx512f),  EXTENSION(avx512cd),
    EXTENSION(avx512bw),    EXTENSION(avx512dq),    EXTENSION(avx512vl), EXTENSION(avx512_vnni),
    EXTENSION(avx512_bf16), EXTENSION(avx512_fp16), EXTENSION(amx_tile), EXTENSION(amx_bf16),
    EXTENSION(amx_int8),
#undef EXTENSION
};

/* The value of the first line of /proc/cpuinfo that starts with field (malloc'ed), or NULL. */
static char *cpuinfo_field(const char *field)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return NULL;
    char line[8192], *value = NULL;
    size_t length = strlen(field);
    while (!value && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        /* "model" is not "model name": only blanks between the field and its colon */
        if (strncmp(line, field, length) != 0 || !colon ||
            strspn(line + length, " \t") != (size_t)(colon - line) - length)
            continue;
        value = strdup(colon + 1 + strspn(colon + 1, " "));
        value[strcspn(value, "\n")] = '\0';
    }
    fclose(f);
    return value;
}

/* name is one of the space-separated words of list. */
static bool has_word(const char *list, const char *name)
{
    size_t length = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += length)
        if ((p == list || p[-1] == ' ') && (p[length] == ' ' || p[length] == '\0')) return true;
    return false;
}

static void every_extension_agrees_with_proc_cpuinfo(void **state)
{
    (void)state;
    ct_cpu_info info;
    assert_int_equal(ct_cpu_get_info(&info), CT_OK);
    char *flags = cpuinfo_field("flags");
    if (!flags) { /* not x86 (or no /proc): ctorch reports nothing either */
        for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
            assert_false(*(const bool *)((const char *)&info.has + extensions[i].offset));
        assert_string_equal(info.extensions, "");
        skip();
    }
    for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++) {
        bool linux_has = has_word(flags, extensions[i].name);
        bool ctorch_has = *(const bool *)((const char *)&info.has + extensions[i].offset);
        if (linux_has != ctorch_has)
            fail_msg("%s: /proc/cpuinfo %s it, ctorch %s it", extensions[i].name, linux_has ? "lists" : "lacks",
                     ctorch_has ? "found" : "did not find");
        if (has_word(info.extensions, extensions[i].name) != ctorch_has)
            fail_msg("%s: the list '%s' disagrees with the flag", extensions[i].name, info.extensions);
    }
    printf("extensions: %s\n", info.extensions);
    free(flags);
}

static void vendor_family_and_model_agree_with_proc_cpuinfo(void **state)
{
    (void)state;
    char *vendor = cpuinfo_field("vendor_id"), *family = cpuinfo_field("cpu family");
    char *model = cpuinfo_field("model");
    if (!vendor || !family || !model) {
        free(vendor), free(family), free(model);
        skip();
        return; /* cmocka's skip() is not marked noreturn */
    }
    ct_cpu_info info;
    assert_int_equal(ct_cpu_get_info(&info), CT_OK);
    assert_string_equal(info.vendor, vendor);
    assert_int_equal(info.family, atoi(family));
    assert_int_equal(info.model, atoi(model));
    assert_true(info.model_name[0] != '\0');
    free(vendor), free(family), free(model);
}

static void openblas_reports_the_kernels_it_runs(void **state)
{
    (void)state;
    ct_cpu_info info;
    assert_int_equal(ct_cpu_get_info(&info), CT_OK);
    assert_true(info.engine_count >= 1 && info.engine_count <= CT_CPU_ENGINES_MAX);
    const ct_cpu_matrix_engine *openblas = &info.engines[0];
    assert_string_equal(openblas->name, "OpenBLAS");
    assert_string_equal(openblas->kernel, openblas_get_corename());
    assert_non_null(strstr(openblas_get_config(), openblas->version));
    for (int i = 1; i < info.engine_count; i++) {
        assert_string_equal(info.engines[i].name, "oneDNN");
        assert_true(info.engines[i].kernel[0] != '\0');
    }
    /* Where OpenBLAS's kernels were ctorch's choice, they are the best this CPU has. */
    if (openblas->set_by_ctorch) {
        assert_false(openblas->below_cpu);
        assert_int_equal(strcasecmp(openblas->kernel, openblas->best_kernel), 0);
    }
}

static void a_null_info_is_an_error(void **state)
{
    (void)state;
    assert_int_equal(ct_cpu_get_info(NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_cpu_get_info: info is NULL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_extension_agrees_with_proc_cpuinfo),
        cmocka_unit_test(vendor_family_and_model_agree_with_proc_cpuinfo),
        cmocka_unit_test(openblas_reports_the_kernels_it_runs),
        cmocka_unit_test(a_null_info_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
