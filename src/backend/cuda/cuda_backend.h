/* What the rest of the library and the tests may ask the CUDA backend directly (compiled in when
 * CTORCH_HAVE_CUDA is defined). Everything else goes through ct_cuda_backend. */
#ifndef CT_CUDA_BACKEND_H
#define CT_CUDA_BACKEND_H

#include "ctorch/core.h"

/* The compute capability of visible device `index` (8 and 6 for sm_86). */
ct_status ct_cuda_compute_capability(int index, int *major, int *minor);

/* Compiles (once) the module of a kernel's family for visible device `index` and finds the
 * kernel in it, as its first launch would: CT_ERR_BACKEND with NVRTC's log when the family does
 * not compile. Tests use it to show that every kernel exists on every device. */
ct_status ct_cuda_prepare_kernel(int index, int kernel);

/* The folder of compiled kernels kept between runs: CTORCH_CUDA_CACHE_DIR when set, else
 * $XDG_CACHE_HOME/ctorch/cuda, else ~/.cache/ctorch/cuda ("" when there is none, or when its name
 * does not fit in size: no disk cache). */
const char *ct_cuda_kernel_cache_dir(char *buf, size_t size);

/* Tests only: the next compile of `family` on any device uses `source` instead of the embedded
 * text (NULL restores it); the modules of that family built so far are dropped. Call while no
 * other thread launches kernels. CT_ERR_INVALID_ARGUMENT for an unknown family. */
ct_status ct_cuda_replace_family_source_for_testing(const char *family, const char *source);

#endif
