/* A stand-in accelerator for tests: the "opencl" type with two devices whose memory is host
 * memory and whose kernels are the CPU's. It lets tests show multi-device behaviour (operands on
 * two devices, moves between devices) where there is only a CPU. Call before any other ctorch
 * call that asks about OpenCL. */
#ifndef CT_TEST_FAKE_DEVICE_H
#define CT_TEST_FAKE_DEVICE_H

#include "ctorch.h"

#define CT_FAKE_DEVICE_COUNT 2

void ct_test_install_fake_opencl(void);
/* The same stand-in as the "cuda" type (its memory is host memory: a device address is a host
 * pointer), for tests of what the layers above do with CUDA tensors where there is no GPU. */
void ct_test_install_fake_cuda(void);
/* Bytes moved into and out of fake devices since the start (to show that no copy happened). */
size_t ct_test_fake_bytes_copied(void);
/* Queued copies that have not run yet (they run when the host waits or later work needs them). */
size_t ct_test_fake_copies_pending(void);

#endif
