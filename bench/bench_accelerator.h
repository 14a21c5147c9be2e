/* The device the accelerator benchmarks use: the first CUDA or OpenCL device, if any. */
#ifndef CT_BENCH_ACCELERATOR_H
#define CT_BENCH_ACCELERATOR_H

#include <stdbool.h>

#include "ctorch.h"

/* false (and a note on stderr, once) when there is no accelerator here. */
bool ct_bench_accelerator(ct_device *device);

#endif
