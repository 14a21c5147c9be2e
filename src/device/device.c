/* Device values: parsing "cuda:1", printing them back, checking that they exist. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "device/backend_interface.h"

/* The largest index a device string may name (no machine has a million devices; the bound keeps
 * the index an int). */
#define CT_DEVICE_INDEX_LIMIT 1000000

bool ct_device_equal(ct_device a, ct_device b) { return a.type == b.type && a.index == b.index; }

const char *ct_device_format(ct_device device, char *buf, size_t size)
{
    if (!buf || size == 0) {
        ct_error(CT_ERR_NULL_ARGUMENT, "ct_device_format: buf is NULL or size is 0; pass a buffer "
                 "of CT_DEVICE_STRING_MAX bytes");
        return NULL;
    }
    /* Only -1 means "the current device"; other negative indices are printed as they are, so
     * that the error refusing them names them. */
    if (device.index == -1 || (device.type == CT_CPU && device.index == 0))
        snprintf(buf, size, "%s", ct_device_type_name(device.type));
    else
        snprintf(buf, size, "%s:%d", ct_device_type_name(device.type), device.index);
    return buf;
}

/* "available devices: cpu, opencl:0, opencl:1" into buf, for error messages. */
static const char *list_available(char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "available: cpu");
    for (int type = CT_CUDA; type < CT_DEVICE_TYPE_COUNT && used < size; type++) {
        int count = ct_device_count((ct_device_type)type);
        if (count == 1)
            used += (size_t)snprintf(buf + used, size - used, ", %s:0", ct_device_type_name(type));
        else if (count > 1)
            used += (size_t)snprintf(buf + used, size - used, ", %s:0 to %s:%d",
                                     ct_device_type_name(type), ct_device_type_name(type), count - 1);
    }
    return buf;
}

ct_status ct_device_parse_syntax(const char *text, ct_device *out)
{
    if (!text) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_device_parse: the device string is NULL");
    if (!out) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_device_parse: out is NULL");
    const char *colon = strchr(text, ':');
    size_t type_length = colon ? (size_t)(colon - text) : strlen(text);
    int type = -1;
    for (int t = 0; t < CT_DEVICE_TYPE_COUNT; t++) {
        const char *name = ct_device_type_name((ct_device_type)t);
        if (strlen(name) == type_length && strncmp(text, name, type_length) == 0) type = t;
    }
    if (type < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "device string '%s' is not a device; expected "
                        "'cpu', 'cuda', 'cuda:N', 'opencl' or 'opencl:N'", text);
    int index = -1;
    if (colon) {
        const char *digits = colon + 1;
        char *end = NULL;
        errno = 0;
        long value = strtol(digits, &end, 10);
        if (*digits < '0' || *digits > '9' || *end != '\0')
            return ct_error(CT_ERR_INVALID_ARGUMENT, "device string '%s' has index '%s'; the index "
                            "must be a number from 0, as in '%s:0'", text, digits,
                            ct_device_type_name((ct_device_type)type));
        if (errno == ERANGE || value > CT_DEVICE_INDEX_LIMIT)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "device string '%s' has index %s, which is too "
                            "large: a device index is at most %d", text, digits, CT_DEVICE_INDEX_LIMIT);
        index = (int)value;
    }
    if (type == CT_CPU) {
        if (index > 0)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "device string '%s': there is one cpu device; "
                            "use 'cpu' or 'cpu:0'", text);
        index = 0;
    }
    out->type = (ct_device_type)type;
    out->index = index;
    return CT_OK;
}

ct_status ct_device_resolve(ct_device device, ct_device *out)
{
    char name[CT_DEVICE_STRING_MAX], available[256];
    if (device.type < 0 || device.type >= CT_DEVICE_TYPE_COUNT)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "device type %d is not a device type; use CT_CPU, "
                        "CT_CUDA or CT_OPENCL", (int)device.type);
    /* The name only for a message: every tensor allocation resolves its device. */
    if (!ct_backend_is_compiled(device.type))
        return ct_error(CT_ERR_NOT_COMPILED, "device '%s': ctorch was built without %s support (%s)",
                        ct_device_format(device, name, sizeof name), ct_device_type_name(device.type),
                        list_available(available, sizeof available));
    if (!ct_is_available(device.type))
        return ct_error(CT_ERR_UNAVAILABLE, "device '%s': the %s backend has no usable device: %s (%s)",
                        ct_device_format(device, name, sizeof name), ct_device_type_name(device.type),
                        ct_backend_unavailable_reason(device.type), list_available(available, sizeof available));
    if (device.index < -1)
        return ct_error(CT_ERR_DEVICE, "device '%s' does not exist: a device index is 0 or more, "
                        "or -1 for the current %s device", ct_device_format(device, name, sizeof name),
                        ct_device_type_name(device.type));
    ct_device asked = device;
    if (device.index == -1) device = ct_current_device(device.type);
    int count = ct_device_count(device.type);
    if (device.index >= count) {
        ct_device_format(asked, name, sizeof name);
        char range[32] = "0";
        if (count > 1) snprintf(range, sizeof range, "0 to %d", count - 1);
        return ct_error(CT_ERR_DEVICE, "device '%s' does not exist: there %s %d %s device%s; use "
                        "index %s", name, count == 1 ? "is" : "are", count,
                        ct_device_type_name(device.type), count == 1 ? "" : "s", range);
    }
    if (device.type == CT_CPU && device.index != 0)
        return ct_error(CT_ERR_DEVICE, "device 'cpu:%d' does not exist; use 'cpu'", device.index);
    if (out) *out = device;
    return CT_OK;
}

ct_status ct_device_parse(const char *text, ct_device *out)
{
    if (!out) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_device_parse: out is NULL");
    ct_device device;
    ct_status status = ct_device_parse_syntax(text, &device);
    if (status != CT_OK) return status;
    status = ct_device_resolve(device, NULL);
    if (status != CT_OK) return status;
    *out = device; /* "cuda" stays "the current CUDA device", as torch.device("cuda") does */
    return CT_OK;
}
