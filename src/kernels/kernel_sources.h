/* The kernel sources as strings, for the backends that compile at run time (OpenCL, NVRTC).
 * A device program is the prelude (kernel_params.h and dialect.h) followed by one family. */
#ifndef CT_KERNEL_SOURCES_H
#define CT_KERNEL_SOURCES_H

extern const char ct_kernel_source_prelude[];
extern const int ct_kernel_family_count;
extern const char *const ct_kernel_family_names[];   /* "fill", "copy", ... */
extern const char *const ct_kernel_family_sources[];

#endif
