/* ctorch devices: identity, parsing, the backends, properties, the current device per thread. */
#ifndef CTORCH_DEVICE_H
#define CTORCH_DEVICE_H

#include "ctorch/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_device_type { CT_CPU = 0, CT_CUDA, CT_OPENCL, CT_DEVICE_TYPE_COUNT } ct_device_type;

/* A device is a value, like torch.device. index -1 means "the current device of that type"
 * (what "cuda" without an index means); every call that takes a device resolves it. Other
 * negative indices are an error (CT_ERR_DEVICE) naming the device. */
typedef struct ct_device {
    ct_device_type type;
    int index;
} ct_device;

#define CT_DEVICE_CPU ((ct_device){CT_CPU, 0})
#define CT_DEVICE_STRING_MAX 32

/* Parses "cpu", "cuda", "cuda:N", "opencl", "opencl:N" and checks that the device exists here.
 * Errors name the input and what is available ("cuda:99": there are 2 CUDA devices, use 0 to 1). */
ct_status ct_device_parse(const char *text, ct_device *out);
/* Only the syntax: for device names of other machines (checkpoint device maps). */
ct_status ct_device_parse_syntax(const char *text, ct_device *out);
/* Writes "cuda:1" (or "cuda" for index -1) into buf; returns buf (NULL and CT_ERR_NULL_ARGUMENT
 * when buf is NULL or size 0). */
const char *ct_device_format(ct_device device, char *buf, size_t size);
bool ct_device_equal(ct_device a, ct_device b);
/* Checks that the device exists and resolves index -1 to the current device of its type (into
 * out; out may be NULL for the check alone). */
ct_status ct_device_resolve(ct_device device, ct_device *out);

/* "cpu", "cuda", "opencl". */
const char *ct_device_type_name(ct_device_type type);
/* Built into this library. */
bool ct_backend_is_compiled(ct_device_type type);
/* Built in, and it found at least one device. */
bool ct_is_available(ct_device_type type);
/* Why a backend is not available ("not compiled in", "no CUDA driver: ..."); "" when it is. */
const char *ct_backend_unavailable_reason(ct_device_type type);
/* Number of (visible) devices of a type; 0 when unavailable. */
int ct_device_count(ct_device_type type);

typedef struct ct_device_props {
    char name[256];
    char vendor[128];
    char driver_version[64];
    size_t total_memory;     /* bytes */
    size_t max_allocation;   /* the largest single allocation, bytes */
    int compute_units;
    /* A CUDA device's compute capability (8.0 is major 8, minor 0); 0 and 0 on other devices. */
    int compute_capability_major, compute_capability_minor;
    bool is_gpu;
    /* ct_mem_get_info's free memory is total minus what ctorch holds (the device has no query
     * of its own), not the driver's figure. */
    bool free_memory_is_estimate;
} ct_device_props;

ct_status ct_get_device_properties(ct_device device, ct_device_props *props);
/* Free and total memory of the device in bytes (torch.cuda.mem_get_info). */
ct_status ct_mem_get_info(ct_device device, size_t *free_bytes, size_t *total_bytes);

/* The current device is kept per thread and per type, and starts at index 0 in every thread:
 * a worker thread that should use opencl:1 must call ct_set_device itself. */
ct_status ct_set_device(ct_device device);
ct_device ct_current_device(ct_device_type type);

/* Sets a device for a region and restores the previous one (with torch.cuda.device(1):). */
typedef struct ct_device_guard {
    ct_device previous;
    bool active;
} ct_device_guard;
ct_status ct_device_guard_enter(ct_device_guard *guard, ct_device device);
void ct_device_guard_exit(ct_device_guard *guard);

/* The best device here: a CUDA GPU, else an OpenCL GPU or accelerator, else the CPU.
 * The environment variable CTORCH_DEVICE (e.g. "opencl:1") overrides the choice; an invalid
 * value is an error that names the variable. */
ct_status ct_best_device(ct_device *out);

/* Waits until all work queued on the device is done. */
ct_status ct_synchronize(ct_device device);

/* The kernel launches and BLAS calls (a matrix product, batched or not, is one) issued to the
 * device since the process started, on every stream and thread: what a piece of work costs in
 * launches is the difference of two readings around it (`ctorch bench` reports it per training
 * and optimizer step). Launches with no work (empty tensors) are not issued and not counted;
 * copies between host and device are counted by ct_transfer_stats_get instead. The CPU counts
 * its kernel calls and BLAS calls the same way. Errors: launches NULL; an invalid device. */
ct_status ct_device_kernel_launches(ct_device device, uint64_t *launches);

#ifdef __cplusplus
}
#endif
#endif
