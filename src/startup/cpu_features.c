/* The CPU's extensions from cpuid, counted only where the operating system saves their registers
 * (xgetbv's XCR0): a CPU with AVX-512 under a kernel or hypervisor that does not enable its state
 * faults on the first AVX-512 instruction. Linux's /proc/cpuinfo applies the same rule. */
#include <stdatomic.h>
#include <string.h>

#include "startup/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* XCR0: the register state the operating system saves on a context switch. */
enum {
    XCR0_SSE_AVX = (1 << 1) | (1 << 2),                /* XMM, YMM */
    XCR0_AVX512 = (1 << 5) | (1 << 6) | (1 << 7),       /* opmask, upper ZMM0-15, ZMM16-31 */
    XCR0_AMX = (1 << 17) | (1 << 18),                   /* XTILECFG, XTILEDATA */
};

static unsigned long long read_xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static bool bit(unsigned reg, int n) { return (reg >> n) & 1; }

static void copy_register(char *to, unsigned reg) { memcpy(to, &reg, 4); }

static void read_brand(char brand[49])
{
    unsigned regs[12] = {0};
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) return; /* int in clang's cpuid.h */
    for (unsigned leaf = 0; leaf < 3; leaf++)
        __get_cpuid(0x80000002u + leaf, &regs[leaf * 4], &regs[leaf * 4 + 1], &regs[leaf * 4 + 2],
                    &regs[leaf * 4 + 3]);
    char raw[49] = {0};
    memcpy(raw, regs, 48);
    const char *start = raw;
    while (*start == ' ') start++;
    size_t length = strlen(start);
    while (length > 0 && start[length - 1] == ' ') length--;
    memcpy(brand, start, length);
    brand[length] = '\0';
}

static void detect(ct_cpu_features *f)
{
    unsigned max_leaf, eax, ebx, ecx, edx;
    max_leaf = (unsigned)__get_cpuid_max(0, &ebx);
    if (max_leaf < 1) return;
    __cpuid(0, eax, ebx, ecx, edx);
    copy_register(f->vendor, ebx);
    copy_register(f->vendor + 4, edx);
    copy_register(f->vendor + 8, ecx);
    f->vendor[12] = '\0';
    read_brand(f->brand);

    __cpuid(1, eax, ebx, ecx, edx);
    int family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
    if (family == 0xf) family += (eax >> 20) & 0xff;
    if (family == 0x6 || family >= 0xf) model |= ((eax >> 16) & 0xf) << 4;
    f->family = family;
    f->model = model;
    bool fma = bit(ecx, 12), osxsave = bit(ecx, 27), avx = bit(ecx, 28);
    unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
    bool os_avx = avx && (xcr0 & XCR0_SSE_AVX) == XCR0_SSE_AVX;
    bool os_avx512 = os_avx && (xcr0 & XCR0_AVX512) == XCR0_AVX512;
    bool os_amx = (xcr0 & XCR0_AMX) == XCR0_AMX;
    if (max_leaf < 7) return;

    unsigned subleaves;
    __cpuid_count(7, 0, subleaves, ebx, ecx, edx);
    ct_cpu_extensions *has = &f->has;
    has->fma = os_avx && fma;
    has->avx2 = os_avx && bit(ebx, 5);
    has->avx512f = os_avx512 && bit(ebx, 16);
    has->avx512dq = os_avx512 && bit(ebx, 17);
    has->avx512cd = os_avx512 && bit(ebx, 28);
    has->avx512bw = os_avx512 && bit(ebx, 30);
    has->avx512vl = os_avx512 && bit(ebx, 31);
    has->avx512_vnni = os_avx512 && bit(ecx, 11);
    has->amx_bf16 = os_amx && bit(edx, 22);
    has->avx512_fp16 = os_avx512 && bit(edx, 23);
    has->amx_tile = os_amx && bit(edx, 24);
    has->amx_int8 = os_amx && bit(edx, 25);
    if (subleaves >= 1) {
        __cpuid_count(7, 1, eax, ebx, ecx, edx);
        has->avx512_bf16 = os_avx512 && bit(eax, 5);
    }
}

/* All of AVX-512 that OpenBLAS's SkylakeX kernels and oneDNN's avx512_core need. */
static bool has_avx512_core(const ct_cpu_extensions *has)
{
    return has->avx512f && has->avx512cd && has->avx512bw && has->avx512dq && has->avx512vl;
}

/* OpenBLAS (0.3.21, Debian 12's) picks its kernels by the CPU's family and model, and a model it
 * has not seen gets its oldest ones: on Emerald Rapids (family 6, model 207) Prescott's SSE3
 * kernels, a fifth of the machine. By the extensions instead, with names OpenBLAS has known since
 * 0.3.x (Cooperlake since 0.3.11), it runs the right kernels on a CPU newer than itself. A newer
 * OpenBLAS that knows a newer name (SapphireRapids, 0.3.22) loses that name's extras here (its AMX
 * bfloat16 products); matrix products go through oneDNN on such CPUs. */
const char *ct_openblas_coretype_for(const ct_cpu_features *f)
{
    if (has_avx512_core(&f->has)) return f->has.avx512_bf16 ? "Cooperlake" : "SkylakeX";
    if (f->has.avx2 && f->has.fma) {
        if (strcmp(f->vendor, "GenuineIntel") == 0) return "Haswell";
        if (strcmp(f->vendor, "AuthenticAMD") == 0 || strcmp(f->vendor, "HygonGenuine") == 0) return "Zen";
    }
    return NULL;
}

#ifdef __linux__
enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

static bool amx_permitted_now(void)
{
    unsigned long features = 0;
    return syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &features) == 0 &&
           (features & (1ul << XFEATURE_XTILEDATA));
}

static bool request_amx_permission(void)
{
    if (amx_permitted_now()) return true;
    /* Refused by a kernel older than 5.16 (EINVAL) or one that lacks the room on the signal
     * stack for the tile state. */
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return false;
    return amx_permitted_now();
}
#else
static bool request_amx_permission(void) { return false; }
#endif

#else /* not x86: cpuid does not exist; nothing is reported */
static void detect(ct_cpu_features *f) { (void)f; }
const char *ct_openblas_coretype_for(const ct_cpu_features *f)
{
    (void)f;
    return NULL;
}
static bool request_amx_permission(void) { return false; }
#endif

static ct_cpu_features features;
static atomic_bool detected;

/* The library's constructor (before_libraries.c) asks first, before main and any thread of the
 * program's: later callers only read. */
const ct_cpu_features *ct_cpu_features_get(void)
{
    if (!atomic_load_explicit(&detected, memory_order_acquire)) {
        detect(&features);
        atomic_store_explicit(&detected, true, memory_order_release);
    }
    return &features;
}

bool ct_cpu_request_amx_permission(void)
{
    /* 0: not asked yet; 1: granted; 2: refused. Asking twice is harmless. */
    static atomic_int answer;
    int known = atomic_load(&answer);
    if (known) return known == 1;
    bool granted = ct_cpu_features_get()->has.amx_tile && request_amx_permission();
    atomic_store(&answer, granted ? 1 : 2);
    return granted;
}
