/* The stand-in CUDA driver's devices (standin_internal.h): cuInit reads the environment
 * (standin.h), and each device has one primary context, current per thread. */
#include "standin_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 16

/* CTORCH_CUDA_STANDIN_PROFILE: what every device presents. The default is the stand-in's own
 * small device; "h100" an H100 SXM5 80GB HBM3's figures (as its driver reports them), so that
 * launch shapes can be checked against a real device's 132 multiprocessors. */
static const standin_profile profiles[] = {
    {"default", "ctorch stand-in GPU", 8, 0, 4, 2048, 32, 49152, 166912, 167936, 1024, 65536, 65536,
     1410000, 1215000, 5120, 41943040},
    {"h100", "NVIDIA H100 80GB HBM3 (stand-in)", 9, 0, 132, 2048, 32, 49152, 232448, 233472, 1024,
     65536, 65536, 1980000, 2619000, 5120, 52428800},
};
const standin_profile *standin_device_profile = &profiles[0];

bool standin_init_done;
CUresult standin_init_result = CUDA_ERROR_NOT_INITIALIZED;
int standin_device_count;
device standin_devices[MAX_DEVICES];
long standin_delay_us;
static bool peer_access = true;

/* CUDA_VISIBLE_DEVICES: indices in order; an entry that is not an index of a device (or repeats
 * one) ends the list. */
static int parse_visible(const char *text, int physical_count, int *order)
{
    int count = 0;
    const char *entry = text;
    while (*entry && count < MAX_DEVICES) {
        const char *comma = strchr(entry, ',');
        const char *end = comma ? comma : entry + strlen(entry);
        const char *begin = entry;
        while (begin < end && *begin == ' ') begin++;
        while (end > begin && end[-1] == ' ') end--;
        long index = -1;
        if (begin < end && end - begin < 9) {
            index = 0;
            for (const char *c = begin; c < end; c++) {
                if (*c < '0' || *c > '9') {
                    index = -1;
                    break;
                }
                index = index * 10 + (*c - '0');
            }
        }
        if (index < 0 || index >= physical_count) break;
        for (int i = 0; i < count; i++)
            if (order[i] == index) return count;
        order[count++] = (int)index;
        if (!comma) break;
        entry = comma + 1;
    }
    return count;
}

static long env_long(const char *name, long fallback)
{
    const char *text = getenv(name);
    if (!text || !*text) return fallback;
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end || value < 0) {
        standin_complain("%s=%s is not a count; using %ld", name, text, fallback);
        return fallback;
    }
    return value;
}

/* Memory of physical device i in MiB: CTORCH_CUDA_STANDIN_MEMORY_MB, one value or a list. */
static size_t physical_memory(int i)
{
    const char *text = getenv("CTORCH_CUDA_STANDIN_MEMORY_MB");
    long mb = 512;
    if (text && *text) {
        const char *at = text;
        for (int k = 0; k < i && strchr(at, ','); k++) at = strchr(at, ',') + 1;
        char *end;
        long value = strtol(at, &end, 10);
        if (value > 0) mb = value;
    }
    return (size_t)mb << 20;
}

CUresult cuInit(unsigned int flags)
{
    pthread_mutex_lock(&standin_lock);
    if (flags != 0) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (standin_init_done) return standin_leave(standin_init_result);
    standin_init_done = true;
    standin_register_kernels();
    const char *profile = getenv("CTORCH_CUDA_STANDIN_PROFILE");
    standin_device_profile = &profiles[0];
    if (profile && *profile) {
        bool known = false;
        for (size_t p = 0; p < sizeof profiles / sizeof profiles[0]; p++)
            if (strcmp(profile, profiles[p].key) == 0) {
                standin_device_profile = &profiles[p];
                known = true;
            }
        if (!known) standin_complain("CTORCH_CUDA_STANDIN_PROFILE=%s is no profile (default, h100); "
                                     "using default", profile);
    }
    long physical = env_long("CTORCH_CUDA_STANDIN_DEVICES", 1);
    if (physical > MAX_DEVICES) physical = MAX_DEVICES;
    standin_delay_us = env_long("CTORCH_CUDA_STANDIN_DELAY_US", 0);
    peer_access = env_long("CTORCH_CUDA_STANDIN_PEER", 1) != 0;
    int order[MAX_DEVICES];
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible) {
        standin_device_count = parse_visible(visible, (int)physical, order);
    } else {
        standin_device_count = (int)physical;
        for (int i = 0; i < standin_device_count; i++) order[i] = i;
    }
    for (int i = 0; i < standin_device_count; i++) {
        standin_devices[i].physical = order[i];
        standin_devices[i].total = physical_memory(order[i]);
        standin_devices[i].primary.device = i;
    }
    standin_init_result = standin_device_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
    return standin_leave(standin_init_result);
}

CUresult cuDriverGetVersion(int *version)
{
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    ENTER();
    if (!count) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    *count = standin_device_count;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    ENTER();
    if (!dev) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (ordinal < 0 || ordinal >= standin_device_count)
        return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    *dev = ordinal;
    return standin_leave(CUDA_SUCCESS);
}

static bool valid_device(CUdevice dev)
{
    return dev >= 0 && dev < standin_device_count;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER();
    if (!name || len <= 0) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    snprintf(name, (size_t)len, "%s", standin_device_profile->name);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    ENTER();
    if (!bytes) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    *bytes = standin_devices[dev].total;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice dev)
{
    ENTER();
    if (!value) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    const standin_profile *p = standin_device_profile;
    int v;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = p->capability_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = p->capability_minor; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = p->multiprocessors; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = MAX_THREADS_PER_BLOCK; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = p->shared_per_block; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = p->shared_per_block_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = p->shared_per_multiprocessor; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: v = p->reserved_shared_per_block; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = p->registers_per_block; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = p->registers_per_multiprocessor; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = p->clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = p->memory_clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = p->memory_bus_bits; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = p->l2_bytes; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = p->threads_per_multiprocessor; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = p->blocks_per_multiprocessor; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = 0x10 + standin_devices[dev].physical; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    default:
        standin_complain("cuDeviceGetAttribute: attribute %d is not modelled", (int)attribute);
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    }
    *value = v;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    ENTER();
    if (!can) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev) || !valid_device(peer)) return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    *can = peer_access && dev != peer;
    return standin_leave(CUDA_SUCCESS);
}

/* ---- primary contexts ---- */

bool standin_context_live(CUcontext ctx, unsigned generation)
{
    return ctx && ctx->active && ctx->generation == generation;
}

CUcontext standin_live_current(void)
{
    CUcontext current = standin_current_context();
    return current && current->active ? current : NULL;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER();
    if (!pctx) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx = &standin_devices[dev].primary;
    if (ctx->refs == 0) {
        ctx->generation++;
        ctx->active = true;
        ctx->failure = CUDA_SUCCESS;
        ctx->null_stream = standin_stream_new(ctx, true, true);
        if (!ctx->null_stream) {
            ctx->active = false;
            return standin_leave(CUDA_ERROR_OUT_OF_MEMORY);
        }
    }
    ctx->refs++;
    *pctx = ctx;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER();
    if (!valid_device(dev)) return standin_leave(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx = &standin_devices[dev].primary;
    if (ctx->refs == 0) return standin_leave(CUDA_ERROR_INVALID_CONTEXT);
    if (--ctx->refs > 0) return standin_leave(CUDA_SUCCESS);
    /* The last release destroys the context: its work finishes, its memory is freed, and every
     * handle made in it is dead. */
    standin_drain_context(ctx);
    standin_free_device_memory(dev);
    ctx->active = false;
    for (CUstream s = standin_streams; s; s = s->next)
        if (s->ctx == ctx) s->destroyed = true;
    ctx->null_stream = NULL;
    pthread_cond_broadcast(&standin_changed);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER();
    if (ctx && !ctx->active) return standin_leave(CUDA_ERROR_INVALID_CONTEXT);
    standin_set_current_context(ctx);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER();
    if (!pctx) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    *pctx = standin_live_current();
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuCtxSynchronize(void)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.synchronizes++;
    CUresult refused = standin_capture_refuse_sync(ctx, NULL, "cuCtxSynchronize");
    if (refused != CUDA_SUCCESS) return standin_leave(refused);
    standin_drain_context(ctx);
    return standin_leave(ctx->failure);
}
