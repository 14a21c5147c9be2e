/* The devices a test runs its checks on. */
#ifndef CT_TEST_DEVICES_H
#define CT_TEST_DEVICES_H

#include "ctorch.h"

/* The CPU, then every OpenCL device (PoCL's two with POCL_DEVICES="pthread pthread"), at most 8,
 * into devices; returns how many. A machine without OpenCL gives the CPU alone, its error cleared. */
int ct_test_devices(ct_device devices[8]);

#endif
