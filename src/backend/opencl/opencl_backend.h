/* What the rest of the library and the tests may ask the OpenCL backend directly (compiled in
 * when CTORCH_HAVE_OPENCL is defined). Everything else goes through ct_opencl_backend. */
#ifndef CT_OPENCL_BACKEND_H
#define CT_OPENCL_BACKEND_H

#include <stdbool.h>

#include "ctorch/core.h"

/* The variable that selects and orders the visible OpenCL devices (as CUDA_VISIBLE_DEVICES). */
#define CT_OPENCL_VISIBLE_DEVICES_VARIABLE "CTORCH_OPENCL_VISIBLE_DEVICES"

/* Puts the physical order of `count` devices listed in discovery order (platform by platform)
 * into order[]: GPUs and accelerators first, then the others, each group in discovery order. */
void ct_opencl_order_devices(const bool *is_accelerator, int count, int *order);

/* Parses a CTORCH_OPENCL_VISIBLE_DEVICES value with CUDA_VISIBLE_DEVICES' rules: a comma list
 * of physical indices (spaces around an entry allowed) gives the logical order; the first entry
 * that is not a valid index (not a number, out of [0, physical_count), a repeat) ends the list.
 * Writes at most `capacity` physical indices into logical_to_physical; returns how many. */
int ct_opencl_parse_visible_devices(const char *text, int physical_count, int *logical_to_physical,
                                    int capacity);

/* The physical index of visible device `index`, or -1 when there is no such device. */
int ct_opencl_physical_index(int index);

/* Whether visible devices a and b share one context (one platform's devices do): only then
 * does copy_peer copy between them; between two contexts the caller stages on the host. False
 * when either is not a visible device. */
bool ct_opencl_share_context(int a, int b);

/* Builds (once) the program of a kernel's family on visible device `index` and makes the
 * kernel's cl_kernel there, as its first launch would: CT_ERR_BACKEND with the build log when
 * the family does not build. Tests use it to show that every kernel exists on every device. */
ct_status ct_opencl_prepare_kernel(int index, int kernel);

/* Tests only: the next build of `family` on any device uses `source` instead of the embedded
 * text (NULL restores it); the programs of that family built so far are dropped. Call while no
 * other thread launches kernels. CT_ERR_INVALID_ARGUMENT for an unknown family. */
ct_status ct_opencl_replace_family_source_for_testing(const char *family, const char *source);

#endif
