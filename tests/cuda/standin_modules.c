/* The stand-in CUDA driver's modules and kernels (standin_internal.h): a module is PTX text whose
 * ".entry" names are its functions, each the C build of the src/kernels/ kernel of that name
 * (standin_kernels.h); a launch runs every thread of its grid on the stream's worker, block after
 * block (standin_blocks.c). */
#include "standin_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CUfunc_st {
    CUmodule module;
    int kernel;
    char name[128];
};

struct CUmod_st {
    CUcontext ctx;
    unsigned generation;
    int entry_count;
    char (*entries)[128];
    CUfunction *functions; /* per entry, made on first lookup */
    struct CUmod_st *next;
};

static CUmodule modules;

static ctorch_standin_kernel kernels[CT_KERNEL_COUNT];

void standin_register_kernels(void)
{
#define CTORCH_STANDIN_CALL_REGISTER(family) ctorch_standin_register_##family(kernels);
    CT_KERNEL_SOURCES(CTORCH_STANDIN_CALL_REGISTER)
#undef CTORCH_STANDIN_CALL_REGISTER
}

static bool module_live(CUmodule module)
{
    for (CUmodule m = modules; m; m = m->next)
        if (m == module) return standin_context_live(m->ctx, m->generation);
    return false;
}

static bool identifier_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

/* The PTX directive `directive` followed by white space, as a whole word. */
static const char *find_directive(const char *text, const char *directive)
{
    size_t n = strlen(directive);
    for (const char *at = strstr(text, directive); at; at = strstr(at + 1, directive))
        if ((at == text || !identifier_char(at[-1])) && (at[n] == ' ' || at[n] == '\t')) return at;
    return NULL;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.module_loads++;
    if (!module || !image) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    const char *text = image;
    if (memcmp(text, "\177ELF", 4) == 0) {
        standin_complain("cuModuleLoadData: a cubin or fatbin; the stand-in loads PTX text only");
        return standin_leave(CUDA_ERROR_INVALID_IMAGE);
    }
    const char *version = find_directive(text, ".version");
    const char *target = find_directive(text, ".target");
    if (!version || !target) {
        standin_complain("cuModuleLoadData: not PTX (no .version or .target directive)");
        return standin_leave(CUDA_ERROR_INVALID_IMAGE);
    }
    int sm = 0;
    if (sscanf(target + strlen(".target"), " sm_%d", &sm) != 1) {
        standin_complain("cuModuleLoadData: .target names no sm_XY architecture");
        return standin_leave(CUDA_ERROR_INVALID_PTX);
    }
    const standin_profile *profile = standin_device_profile;
    if (sm > profile->capability_major * 10 + profile->capability_minor) {
        standin_complain("cuModuleLoadData: PTX for sm_%d cannot be compiled for a device of "
                         "compute capability %d.%d", sm, profile->capability_major,
                         profile->capability_minor);
        return standin_leave(CUDA_ERROR_INVALID_PTX);
    }
    CUmodule m = standin_checked_calloc(1, sizeof *m);
    int capacity = 0;
    for (const char *at = find_directive(text, ".entry"); at; at = find_directive(at + 1, ".entry")) {
        const char *name = at + strlen(".entry");
        while (*name == ' ' || *name == '\t') name++;
        size_t n = 0;
        while (identifier_char(name[n])) n++;
        if (n == 0 || n >= sizeof m->entries[0]) continue;
        if (m->entry_count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            void *grown = realloc(m->entries, (size_t)capacity * sizeof m->entries[0]);
            if (!grown) abort();
            m->entries = grown;
        }
        memcpy(m->entries[m->entry_count], name, n);
        m->entries[m->entry_count][n] = '\0';
        m->entry_count++;
    }
    m->functions = standin_checked_calloc((size_t)(m->entry_count ? m->entry_count : 1), sizeof *m->functions);
    m->ctx = ctx;
    m->generation = ctx->generation;
    m->next = modules;
    modules = m;
    *module = m;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuModuleUnload(CUmodule module)
{
    ENTER();
    for (CUmodule *link = &modules; *link; link = &(*link)->next)
        if (*link == module) {
            /* Launches of its functions may still be queued. */
            if (module->ctx->active) standin_drain_context(module->ctx);
            *link = module->next;
            for (int i = 0; i < module->entry_count; i++) free(module->functions[i]);
            free(module->functions);
            free(module->entries);
            free(module);
            return standin_leave(CUDA_SUCCESS);
        }
    return standin_leave(CUDA_ERROR_INVALID_HANDLE);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule module, const char *name)
{
    ENTER();
    if (!hfunc || !name) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (!module_live(module)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    for (int i = 0; i < module->entry_count; i++) {
        if (strcmp(module->entries[i], name) != 0) continue;
        if (!module->functions[i]) {
            int kernel = CT_K_NONE;
            for (int k = CT_K_NONE + 1; k < CT_KERNEL_COUNT; k++)
                if (kernels[k].name && strcmp(kernels[k].name, name) == 0) kernel = k;
            if (kernel == CT_K_NONE) {
                standin_complain("cuModuleGetFunction: the PTX has %s but src/kernels has no C "
                                 "kernel of that name", name);
                return standin_leave(CUDA_ERROR_NOT_FOUND);
            }
            CUfunction f = standin_checked_calloc(1, sizeof *f);
            f->module = module;
            f->kernel = kernel;
            snprintf(f->name, sizeof f->name, "%s", name);
            module->functions[i] = f;
        }
        *hfunc = module->functions[i];
        return standin_leave(CUDA_SUCCESS);
    }
    return standin_leave(CUDA_ERROR_NOT_FOUND);
}

static bool function_live(CUfunction f)
{
    for (CUmodule m = modules; m; m = m->next)
        for (int i = 0; i < m->entry_count; i++)
            if (m->functions[i] == f && f) return standin_context_live(m->ctx, m->generation);
    return false;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream handle,
                        void **kernelParams, void **extra)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.launches++;
    if (!function_live(f)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    if (f->module->ctx != ctx) {
        standin_complain("cuLaunchKernel(%s): a function of device %d launched with device %d's "
                         "context current", f->name, f->module->ctx->device, ctx->device);
        return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (s->ctx != ctx) {
        standin_complain("cuLaunchKernel(%s): a stream of device %d with device %d's context "
                         "current", f->name, s->ctx->device, ctx->device);
        return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ ||
        blockDimX > 1024 || blockDimY > 1024 || blockDimZ > 64 || gridDimY > 65535 ||
        gridDimZ > 65535 || gridDimX > 2147483647u ||
        (unsigned long)blockDimX * blockDimY * blockDimZ > MAX_THREADS_PER_BLOCK ||
        sharedMemBytes > (unsigned)standin_device_profile->shared_per_block) {
        standin_complain("cuLaunchKernel(%s): invalid configuration: grid (%u, %u, %u), block (%u, %u, %u), "
                         "%u bytes of shared memory", f->name, gridDimX, gridDimY, gridDimZ, blockDimX,
                         blockDimY, blockDimZ, sharedMemBytes);
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (extra) {
        standin_complain("cuLaunchKernel(%s): arguments through `extra`: not modelled", f->name);
        return standin_leave(CUDA_ERROR_NOT_SUPPORTED);
    }
    if (!kernelParams) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    op *o = standin_op_new(OP_KERNEL);
    o->u.kernel.name = kernels[f->kernel].name;
    o->u.kernel.run = kernels[f->kernel].run;
    int buffer_count = ct_kernel_buffer_count((ct_kernel_id)f->kernel);
    bool wide = buffer_count != CT_KERNEL_MAX_BUFFERS;
    for (int k = 0; k < buffer_count; k++) {
        if (!kernelParams[k]) {
            standin_op_free(o);
            return standin_leave(CUDA_ERROR_INVALID_VALUE);
        }
        CUdeviceptr pointer = *(const CUdeviceptr *)kernelParams[k];
        if (pointer == 0) continue;
        allocation *a = standin_find_allocation((uintptr_t)pointer, 0);
        if (!a || (a->device >= 0 && a->device != ctx->device)) {
            if (a)
                standin_complain("cuLaunchKernel(%s): buffer %d is memory of device %d, launched "
                                 "on device %d (no peer access)", f->name, k, a->device,
                                 ctx->device);
            else
                standin_complain("cuLaunchKernel(%s): buffer %d (0x%llx) is not device memory",
                                 f->name, k, (unsigned long long)pointer);
            standin_op_free(o);
            return standin_leave(CUDA_ERROR_INVALID_VALUE);
        }
        *(wide ? &o->u.kernel.wide[k] : &o->u.kernel.buffers[k]) = standin_host_of(a, (uintptr_t)pointer);
    }
    if (wide) o->u.kernel.buffers[0] = o->u.kernel.wide;
    if (!kernelParams[buffer_count]) {
        standin_op_free(o);
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    }
    memcpy(&o->u.kernel.params, kernelParams[buffer_count], sizeof o->u.kernel.params);
    o->u.kernel.blocks = gridDimX;
    o->u.kernel.block_size = blockDimX;
    o->u.kernel.repeats = (long)gridDimY * gridDimZ * blockDimY * blockDimZ;
    standin_log_launch(o->u.kernel.name, ctx->device, gridDimX, blockDimX, sharedMemBytes);
    standin_enqueue(s, o);
    return standin_leave(CUDA_SUCCESS);
}
