/* The CPU and its matrix engines (ct_cpu_get_info), and the warning when an engine runs kernels far
 * below what the CPU offers: a product at a fifth of the machine is otherwise silent (issue 22:
 * OpenBLAS 0.3.21 ran Prescott's SSE3 kernels on an AVX-512 Xeon it did not know). */
#include <cblas.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef CTORCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include "backend/cpu/cpu_backend.h"
#include "core/core_internal.h"
#include "startup/before_libraries.h"
#include "startup/cpu_features.h"

static const struct {
    const char *name;
    size_t offset;
} extension_fields[] = {
#define CT_EXTENSION(name) {#name, offsetof(ct_cpu_extensions, name)}
    CT_EXTENSION(avx2),        CT_EXTENSION(fma),         CT_EXTENSION(avx512f),
    CT_EXTENSION(avx512cd),    CT_EXTENSION(avx512bw),    CT_EXTENSION(avx512dq),
    CT_EXTENSION(avx512vl),    CT_EXTENSION(avx512_vnni), CT_EXTENSION(avx512_bf16),
    CT_EXTENSION(avx512_fp16), CT_EXTENSION(amx_tile),    CT_EXTENSION(amx_bf16),
    CT_EXTENSION(amx_int8),
#undef CT_EXTENSION
};

static void list_extensions(const ct_cpu_extensions *has, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < CT_ARRAY_LEN(extension_fields); i++) {
        if (!*(const bool *)((const char *)has + extension_fields[i].offset)) continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? " " : "", extension_fields[i].name);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
}

/* How far an engine's kernels or the CPU go: 1 older than AVX2, 2 AVX2 with FMA, 3 AVX-512. */
enum { LEVEL_OLDER = 1, LEVEL_AVX2 = 2, LEVEL_AVX512 = 3 };

static int cpu_level(const ct_cpu_extensions *has)
{
    if (has->avx512f && has->avx512cd && has->avx512bw && has->avx512dq && has->avx512vl) return LEVEL_AVX512;
    return has->avx2 && has->fma ? LEVEL_AVX2 : LEVEL_OLDER;
}

/* OpenBLAS's x86 core names by the instructions their kernels use; any other is older. */
static int openblas_level(const char *core)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    static const char *const avx2[] = {"Haswell", "Zen"};
    for (size_t i = 0; i < CT_ARRAY_LEN(avx512); i++)
        if (strcasecmp(core, avx512[i]) == 0) return LEVEL_AVX512;
    for (size_t i = 0; i < CT_ARRAY_LEN(avx2); i++)
        if (strcasecmp(core, avx2[i]) == 0) return LEVEL_AVX2;
    return LEVEL_OLDER;
}

static void report_openblas(ct_cpu_matrix_engine *e, const ct_cpu_features *f)
{
    snprintf(e->name, sizeof e->name, "OpenBLAS");
    const char *config = openblas_get_config(), *core = openblas_get_corename();
    snprintf(e->details, sizeof e->details, "%s", config ? config : "");
    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": the version is the second word. */
    if (config && strncmp(config, "OpenBLAS ", 9) == 0)
        snprintf(e->version, sizeof e->version, "%.*s", (int)strcspn(config + 9, " "), config + 9);
    snprintf(e->kernel, sizeof e->kernel, "%s", core ? core : "");
    const char *best = ct_openblas_coretype_for(f);
    snprintf(e->best_kernel, sizeof e->best_kernel, "%s", best ? best : "");
    e->set_by_ctorch = ct_startup_openblas_coretype() != NULL;
    e->below_cpu = core && openblas_level(core) < cpu_level(&f->has);
}

#ifdef CTORCH_HAVE_ONEDNN
/* oneDNN's instruction sets from the least to the most; its effective one is the most it may use
 * here (the CPU, the kernel's AMX permission, ONEDNN_MAX_CPU_ISA). */
static const struct {
    dnnl_cpu_isa_t isa;
    const char *name;
} onednn_isas[] = {
    {dnnl_cpu_isa_sse41, "sse41"},
    {dnnl_cpu_isa_avx, "avx"},
    {dnnl_cpu_isa_avx2, "avx2"},
    {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
#if DNNL_VERSION_MAJOR < 3
    {dnnl_cpu_isa_avx512_mic, "avx512_mic"},
    {dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops"},
#endif
    {dnnl_cpu_isa_avx512_core, "avx512_core"},
    {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
    {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
    {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
};

/* The position of isa in onednn_isas, or -1 for one this table does not know. */
static int onednn_rank(dnnl_cpu_isa_t isa)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(onednn_isas); i++)
        if (onednn_isas[i].isa == isa) return (int)i;
    return -1;
}

/* The instruction set oneDNN's kernels would use on a CPU with has. */
static dnnl_cpu_isa_t onednn_isa_for(const ct_cpu_extensions *has)
{
    if (cpu_level(has) == LEVEL_AVX512) {
        if (has->amx_tile && has->amx_bf16 && has->amx_int8 && has->avx512_bf16)
            return dnnl_cpu_isa_avx512_core_amx;
        if (has->avx512_bf16) return dnnl_cpu_isa_avx512_core_bf16;
        if (has->avx512_vnni) return dnnl_cpu_isa_avx512_core_vnni;
        return dnnl_cpu_isa_avx512_core;
    }
    return cpu_level(has) == LEVEL_AVX2 ? dnnl_cpu_isa_avx2 : dnnl_cpu_isa_all;
}

static void report_onednn(ct_cpu_matrix_engine *e, const ct_cpu_features *f)
{
    snprintf(e->name, sizeof e->name, "oneDNN");
    const dnnl_version_t *v = dnnl_version();
    snprintf(e->version, sizeof e->version, "%d.%d.%d", v->major, v->minor, v->patch);
    const char *threads = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                          : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "no"
                                                               : "its own";
    bool commit = v->hash && v->hash[0] && strcmp(v->hash, "N/A") != 0; /* Debian's has none */
    snprintf(e->details, sizeof e->details, "%s%s%s%s threads", commit ? "commit " : "", commit ? v->hash : "",
             commit ? ", " : "", threads);
    dnnl_cpu_isa_t effective = dnnl_get_effective_cpu_isa(), best = onednn_isa_for(&f->has);
    int rank = onednn_rank(effective), best_rank = onednn_rank(best);
    if (rank >= 0)
        snprintf(e->kernel, sizeof e->kernel, "%s", onednn_isas[rank].name);
    else
        snprintf(e->kernel, sizeof e->kernel, "isa 0x%x", (unsigned)effective);
    snprintf(e->best_kernel, sizeof e->best_kernel, "%s", best_rank >= 0 ? onednn_isas[best_rank].name : "");
    e->below_cpu = rank >= 0 && best_rank >= 0 && rank < best_rank;
}
#endif

static int collect_engines(ct_cpu_matrix_engine engines[CT_CPU_ENGINES_MAX], const ct_cpu_features *f)
{
    int count = 0;
    memset(engines, 0, sizeof(ct_cpu_matrix_engine) * CT_CPU_ENGINES_MAX);
    report_openblas(&engines[count++], f);
#ifdef CTORCH_HAVE_ONEDNN
    report_onednn(&engines[count++], f);
#endif
    return count;
}

ct_status ct_cpu_get_info(ct_cpu_info *info)
{
    if (!info) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_cpu_get_info: info is NULL");
    memset(info, 0, sizeof *info);
    const ct_cpu_features *f = ct_cpu_features_get();
    if (f->brand[0])
        snprintf(info->model_name, sizeof info->model_name, "%s", f->brand);
    else
        ct_cpu_model_name(info->model_name, sizeof info->model_name);
    snprintf(info->vendor, sizeof info->vendor, "%s", f->vendor);
    info->family = f->family;
    info->model = f->model;
    info->has = f->has;
    list_extensions(&f->has, info->extensions, sizeof info->extensions);
    info->amx_permitted = ct_cpu_request_amx_permission();
    info->engine_count = collect_engines(info->engines, f);
    return CT_OK;
}

/* What to do about an engine below the CPU, for the warning. */
static void advice(const ct_cpu_matrix_engine *e, bool amx_permitted, char *out, size_t size)
{
    if (strcmp(e->name, "OpenBLAS") == 0) {
        const char *users = e->set_by_ctorch ? NULL : getenv("OPENBLAS_CORETYPE");
        const char *best = e->best_kernel[0] ? e->best_kernel : "SkylakeX or Haswell";
        if (users)
            snprintf(out, size, "OPENBLAS_CORETYPE=%s is set; unset it (ctorch then chooses) or set "
                     "OPENBLAS_CORETYPE=%s", users, best);
        else if (!strstr(e->details, "DYNAMIC_ARCH"))
            snprintf(out, size, "this OpenBLAS was built for one CPU without DYNAMIC_ARCH and takes no "
                     "OPENBLAS_CORETYPE; install one built with DYNAMIC_ARCH (Debian's is)");
        else
            snprintf(out, size, "set OPENBLAS_CORETYPE=%s before the program starts", best);
        return;
    }
    const char *limit = getenv("ONEDNN_MAX_CPU_ISA") ? "ONEDNN_MAX_CPU_ISA"
                        : getenv("DNNL_MAX_CPU_ISA") ? "DNNL_MAX_CPU_ISA"
                                                     : NULL;
    if (limit)
        snprintf(out, size, "%s=%s limits it; unset it", limit, getenv(limit));
    else if (strcmp(e->best_kernel, "avx512_core_amx") == 0 && !amx_permitted)
        snprintf(out, size, "Linux refused this process AMX's tile data (arch_prctl ARCH_REQ_XCOMP_PERM "
                 "needs Linux 5.16 or later)");
    else
        snprintf(out, size, "a newer oneDNN may know this CPU");
}

void ct_cpu_warn_slow_matrix_engines(void)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&warned)) return;
    ct_cpu_info info;
    if (ct_cpu_get_info(&info) != CT_OK) return;
    for (int i = 0; i < info.engine_count; i++) {
        const ct_cpu_matrix_engine *e = &info.engines[i];
        if (!e->below_cpu) continue;
        char fix[256];
        advice(e, info.amx_permitted, fix, sizeof fix);
        ct_log_message(CT_LOG_WARN,
                       "cpu: %s %s runs its %s kernels where this CPU (%s, family %d model %d: %s) could "
                       "run %s: its matrix products run below what the machine can do; %s",
                       e->name, e->version, e->kernel, info.model_name, info.family, info.model,
                       info.extensions, e->best_kernel[0] ? e->best_kernel : "better ones", fix);
    }
}
