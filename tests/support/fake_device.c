#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "support/fake_device.h"

static atomic_size_t bytes_copied;

static bool fake_init(char *reason, size_t size) { (void)reason; (void)size; return true; }
static int fake_count(void) { return CT_FAKE_DEVICE_COUNT; }
static ct_status fake_properties(int index, ct_device_props *props)
{
    snprintf(props->name, sizeof props->name, "fake accelerator %d (host memory)", index);
    snprintf(props->vendor, sizeof props->vendor, "ctorch tests");
    props->total_memory = props->max_allocation = (size_t)1 << 30;
    props->compute_units = 1;
    props->is_gpu = true;
    return CT_OK;
}
static ct_status fake_mem_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    (void)index;
    *free_bytes = *total_bytes = (size_t)1 << 30;
    return CT_OK;
}
static void *fake_alloc(int index, size_t bytes) { (void)index; return bytes <= ((size_t)1 << 30) ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL; }
static void fake_free(int index, void *handle) { (void)index; free(handle); }
static ct_status fake_h2d(int index, void *dst, size_t off, const void *src, size_t bytes)
{
    (void)index;
    bytes_copied += bytes;
    memcpy((char *)dst + off, src, bytes);
    return CT_OK;
}
static ct_status fake_d2h(int index, void *dst, const void *src, size_t off, size_t bytes)
{
    (void)index;
    bytes_copied += bytes;
    memcpy(dst, (const char *)src + off, bytes);
    return CT_OK;
}
static ct_status fake_d2d(int index, void *dst, size_t doff, const void *src, size_t soff, size_t bytes)
{
    (void)index;
    memmove((char *)dst + doff, (const char *)src + soff, bytes);
    return CT_OK;
}
static ct_status fake_sync(int index) { (void)index; return CT_OK; }

static const ct_backend fake_backend = {
    .type = CT_OPENCL, .init = fake_init, .device_count = fake_count,
    .get_properties = fake_properties, .mem_get_info = fake_mem_info,
    .raw_alloc = fake_alloc, .raw_free = fake_free,
    .copy_host_to_device = fake_h2d, .copy_device_to_host = fake_d2h,
    .copy_device_to_device = fake_d2d, .launch = ct_cpu_launch, .gemm = ct_cpu_gemm,
    .synchronize = fake_sync,
};

void ct_test_install_fake_opencl(void) { ct_backend_install_for_testing(CT_OPENCL, &fake_backend); }

size_t ct_test_fake_bytes_copied(void) { return bytes_copied; }
