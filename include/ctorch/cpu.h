/* The host CPU as the CPU backend finds it: its vector and matrix extensions, and the kernels each
 * matrix library chose on it (`ctorch info` prints them). */
#ifndef CTORCH_CPU_H
#define CTORCH_CPU_H

#include <stdbool.h>

#include "ctorch/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The extensions the CPU has and the operating system lets programs use (it saves their
 * registers), named as Linux's /proc/cpuinfo names them. All false off x86. */
typedef struct ct_cpu_extensions {
    bool avx2, fma;
    bool avx512f, avx512cd, avx512bw, avx512dq, avx512vl;
    bool avx512_vnni, avx512_bf16, avx512_fp16;
    bool amx_tile, amx_bf16, amx_int8;
} ct_cpu_extensions;

#define CT_CPU_ENGINES_MAX 4

/* A library that multiplies matrices on the CPU, and the kernels it runs here. */
typedef struct ct_cpu_matrix_engine {
    char name[32];     /* "OpenBLAS", "oneDNN" */
    char version[32];  /* "0.3.21", "2.6.3" */
    char details[160]; /* OpenBLAS: openblas_get_config(); oneDNN: its commit and threading */
    /* The kernels it chose: OpenBLAS's core name ("SkylakeX"), oneDNN's instruction set
     * ("avx512_core_amx"). */
    char kernel[64];
    /* The kernels that would use what this CPU offers; "" where ctorch knows none better. */
    char best_kernel[64];
    bool set_by_ctorch; /* ctorch chose the kernel (OPENBLAS_CORETYPE, before OpenBLAS started) */
    bool below_cpu;     /* its kernels use less than the CPU offers (ctorch warns once) */
} ct_cpu_matrix_engine;

typedef struct ct_cpu_info {
    char model_name[128]; /* "Intel(R) Xeon(R) Processor @ 2.50GHz" */
    char vendor[16];      /* "GenuineIntel", "AuthenticAMD"; "" off x86 */
    int family, model;    /* cpuid's, extended parts included (6 and 207: Emerald Rapids) */
    ct_cpu_extensions has;
    char extensions[192]; /* the ones of has that are true, space-separated: "avx2 fma avx512f" */
    /* Linux lets this process use AMX's tile data (asked for once, when the CPU backend starts or
     * here, whichever comes first; false without AMX). */
    bool amx_permitted;
    int engine_count;
    ct_cpu_matrix_engine engines[CT_CPU_ENGINES_MAX];
} ct_cpu_info;

/* Fills info. Errors: info NULL. */
ct_status ct_cpu_get_info(ct_cpu_info *info);

#ifdef __cplusplus
}
#endif
#endif
