/* The CUDA libraries, opened at run time (dlopen) so that one ctorch binary runs on machines with
 * and without a GPU: the driver (libcuda.so.1, which only a machine with an NVIDIA driver has),
 * NVRTC (the kernel compiler) and cuBLAS (from the toolkit). Each is a table of function
 * pointers filled from the library by name; nothing here is linked at build time, and the
 * toolkit's headers give the types only.
 *
 * Which file each table comes from: the environment variable names it, else the default name
 * (found through the dynamic loader's search path), else the toolkit's library folder as the build
 * saw it (CTORCH_CUDA_TOOLKIT_LIBDIR, a compile definition). The variables are for the tests, which
 * point the driver and cuBLAS at the stand-in libraries of tests/cuda/ that run the same kernels on
 * the host; they are not part of the user-facing interface.
 *
 *   table    variable                 default name
 *   driver   CTORCH_CUDA_DRIVER       libcuda.so.1
 *   nvrtc    CTORCH_CUDA_NVRTC        libnvrtc.so.13, libnvrtc.so
 *   cublas   CTORCH_CUDA_CUBLAS       libcublas.so.13, libcublas.so
 *
 * NCCL is opened the same way by the distributed layer's NCCL backend (src/distributed/
 * nccl_backend.c), which has its own list and folder.
 *
 * The lists below are the whole of what ctorch calls: a stand-in library implements exactly
 * these. Names go through the headers' macros (cuMemAlloc is cuMemAlloc_v2 in the library, and
 * cublasSgemm is cublasSgemm_v2), so that the symbol looked up is the one the header declares. */
#ifndef CT_CUDA_LIBRARIES_H
#define CT_CUDA_LIBRARIES_H

#include <stdbool.h>
#include <stddef.h>

#include "ctorch/core.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <nvrtc.h>

#define CT_CUDA_DRIVER_FUNCTIONS(X)                                                                  \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                            \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent)   \
    X(cuCtxSynchronize)                                                                              \
    X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)                    \
    X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)        \
    X(cuMemcpyDtoDAsync) X(cuMemcpyPeer) X(cuDeviceCanAccessPeer)                                    \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)                 \
    X(cuLaunchHostFunc)                                                                              \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery)        \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel)              \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing)                            \
    X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)

#define CT_CUDA_NVRTC_FUNCTIONS(X)                                                                   \
    X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcCompileProgram)              \
    X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)                \
    X(nvrtcDestroyProgram)

#define CT_CUDA_CUBLAS_FUNCTIONS(X)                                                                  \
    X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasSetWorkspace) X(cublasSetMathMode)   \
    X(cublasSgemm) X(cublasDgemm) X(cublasSgemmStridedBatched) X(cublasDgemmStridedBatched)          \
    X(cublasGemmEx) X(cublasGemmStridedBatchedEx)

#define CT_CUDA_MEMBER_(f) __typeof__(&f) f;

typedef struct ct_cuda_driver {
    CT_CUDA_DRIVER_FUNCTIONS(CT_CUDA_MEMBER_)
} ct_cuda_driver;
typedef struct ct_cuda_nvrtc {
    CT_CUDA_NVRTC_FUNCTIONS(CT_CUDA_MEMBER_)
} ct_cuda_nvrtc;
typedef struct ct_cuda_cublas {
    CT_CUDA_CUBLAS_FUNCTIONS(CT_CUDA_MEMBER_)
} ct_cuda_cublas;

/* The library's symbol name of a function as the header spells it ("cuMemAlloc_v2"). */
#define CT_CUDA_SYMBOL_(f) #f
#define CT_CUDA_SYMBOL(f) CT_CUDA_SYMBOL_(f)

/* The tables, each opened once (the first call opens the library and looks up every function of
 * its list; later calls return the same answer). NULL when the library cannot be opened or lacks
 * a function, with the reason in `reason`: "CUDA driver library not found (libcuda.so.1: cannot
 * open shared object file: No such file or directory)", and in *failure (where not NULL) its
 * kind: CT_ERR_OUT_OF_MEMORY where the address space had no room to map the library, else
 * CT_ERR_BACKEND. */
const ct_cuda_driver *ct_cuda_driver_library(char *reason, size_t reason_size, ct_status *failure);
const ct_cuda_nvrtc *ct_cuda_nvrtc_library(char *reason, size_t reason_size, ct_status *failure);
const ct_cuda_cublas *ct_cuda_cublas_library(char *reason, size_t reason_size, ct_status *failure);

#endif
