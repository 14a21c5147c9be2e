/* The devices a test runs its checks on (devices.h). */
#include "support/devices.h"

int ct_test_devices(ct_device devices[8])
{
    int count = 0;
    devices[count++] = CT_DEVICE_CPU;
    for (int i = 0; i < ct_device_count(CT_OPENCL) && count < 8; i++)
        devices[count++] = (ct_device){CT_OPENCL, i};
    ct_clear_error();
    return count;
}
