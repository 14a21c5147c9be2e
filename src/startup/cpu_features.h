/* The CPU's vector and matrix extensions, from cpuid and the operating system's register state
 * (cpu_features.c). In libctorch_startup, which needs only libc, because its constructor chooses
 * OpenBLAS's kernels from them before OpenBLAS starts; the CPU backend reports the same. */
#ifndef CT_STARTUP_CPU_FEATURES_H
#define CT_STARTUP_CPU_FEATURES_H

#include <stdbool.h>

#include "ctorch/cpu.h"

typedef struct ct_cpu_features {
    char vendor[13]; /* "GenuineIntel", "AuthenticAMD"; "" off x86 */
    char brand[49];  /* cpuid's brand string, spaces trimmed; "" where it has none */
    int family, model;
    ct_cpu_extensions has;
} ct_cpu_features;

/* This CPU's, detected once (the library's constructor does it before anyone asks). */
const ct_cpu_features *ct_cpu_features_get(void);

/* The OPENBLAS_CORETYPE whose kernels use the best of what f offers (OpenBLAS 0.3.x's names),
 * or NULL where OpenBLAS's own choice cannot be bettered. */
const char *ct_openblas_coretype_for(const ct_cpu_features *f);

/* Asks Linux, once per process, to let it use AMX's tile data (arch_prctl ARCH_REQ_XCOMP_PERM):
 * without the permission the first tile instruction kills the process. Whether it is granted;
 * false without AMX or off Linux. */
bool ct_cpu_request_amx_permission(void);

#endif
