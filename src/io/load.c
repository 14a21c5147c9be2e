/* ct_load: a safetensors file into a state dict, each tensor on the device the map says. The file
 * is read with bounded stdio reads: the length, the header (checked whole before any data is
 * read), then each tensor's byte range, straight into CPU storage or through a staging buffer to
 * a device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "io/load_internal.h"
#include "tensor/tensor_internal.h"

#define STAGING_BYTES ((size_t)16 << 20)

typedef struct reader {
    FILE *file;
    char name[CT_IO_PRINTABLE_MAX]; /* the path, for messages */
    uint64_t data_start;
    unsigned char *staging;
} reader;

static ct_status read_exactly(reader *r, void *dst, size_t n, const char *what)
{
    if (n == 0 || fread(dst, 1, n, r->file) == n) return CT_OK;
    char reason[128];
    if (ferror(r->file))
        return ct_error(CT_ERR_IO, "ct_load: '%s': reading %s failed: %s", r->name, what,
                        strerror_r(errno, reason, sizeof reason));
    return ct_error(CT_ERR_IO, "ct_load: '%s': the file ended while reading %s (did it change while "
                    "being read?)", r->name, what);
}

/* Bytes as they arrive from the file: bools must be 0 or 1; multi-byte elements to host order. */
static ct_status accept_bytes(const reader *r, const ct_io_entry *e, unsigned char *bytes, size_t n,
                              size_t offset)
{
    if (e->dtype == CT_BOOL)
        for (size_t k = 0; k < n; k++)
            if (bytes[k] > 1) {
                char name[CT_IO_PRINTABLE_MAX];
                return ct_error(CT_ERR_IO, "ct_load: '%s': tensor '%s' (BOOL) has the byte %u at "
                                "element %zu; a bool is 0 or 1", r->name,
                                ct_io_printable(e->name, name, sizeof name), bytes[k], offset + k);
            }
    size_t element = ct_dtype_size(e->dtype);
    ct_io_to_little_endian(bytes, n / element, element); /* its own inverse */
    return CT_OK;
}

static ct_status read_tensor(reader *r, const ct_io_entry *e, ct_tensor *t)
{
    size_t bytes = (size_t)(e->end - e->begin);
    if (bytes == 0) return CT_OK;
    char what[CT_IO_PRINTABLE_MAX + 16], name[CT_IO_PRINTABLE_MAX];
    snprintf(what, sizeof what, "tensor '%s'", ct_io_printable(e->name, name, sizeof name));
    if (fseeko(r->file, (off_t)(r->data_start + e->begin), SEEK_SET) != 0) {
        char reason[128];
        return ct_error(CT_ERR_IO, "ct_load: '%s': cannot seek to %s: %s", r->name, what,
                        strerror_r(errno, reason, sizeof reason));
    }
    ct_device device = t->storage->device;
    unsigned char *storage = ct_tensor_handle(t);
    if (device.type == CT_CPU) {
        ct_status status = read_exactly(r, storage, bytes, what);
        return status == CT_OK ? accept_bytes(r, e, storage, bytes, 0) : status;
    }
    if (!r->staging && !(r->staging = malloc(STAGING_BYTES)))
        return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory for a staging buffer", r->name);
    for (size_t done = 0; done < bytes;) {
        size_t chunk = bytes - done < STAGING_BYTES ? bytes - done : STAGING_BYTES;
        ct_status status = read_exactly(r, r->staging, chunk, what);
        if (status == CT_OK) status = accept_bytes(r, e, r->staging, chunk, done);
        if (status == CT_OK) status = ct_transfer_host_to_device(device, storage, done, r->staging, chunk);
        if (status != CT_OK) return status;
        done += chunk;
    }
    return CT_OK;
}

/* Why a device is not here, for the message of a tensor saved on it. */
static const char *why_missing(ct_device device, char *buf, size_t size)
{
    const char *type = ct_device_type_name(device.type);
    ct_status status = ct_device_resolve(device, NULL);
    if (status == CT_ERR_NOT_COMPILED) snprintf(buf, size, "ctorch was built without %s support", type);
    else if (status == CT_ERR_UNAVAILABLE)
        snprintf(buf, size, "it has no usable %s device: %s", type, ct_backend_unavailable_reason(device.type));
    else {
        int count = ct_device_count(device.type);
        snprintf(buf, size, "it has %d %s device%s", count, type, count == 1 ? "" : "s");
    }
    return buf;
}

static ct_status place(const reader *r, const ct_io_device_map *map, const ct_io_entry *e, ct_device *out)
{
    ct_device saved = e->has_saved_device ? e->saved_device : CT_DEVICE_CPU;
    bool mapped;
    *out = ct_io_device_map_apply(map, saved, &mapped);
    if (mapped || ct_device_resolve(saved, NULL) == CT_OK) return CT_OK;
    char name[CT_IO_PRINTABLE_MAX], device[CT_DEVICE_STRING_MAX], reason[256];
    ct_device_format(saved, device, sizeof device);
    return ct_error(CT_ERR_DEVICE, "ct_load: '%s': tensor '%s' was saved on %s, which this machine does "
                    "not have (%s); load it with a map_location such as \"cpu\" or \"%s=cpu\"", r->name,
                    ct_io_printable(e->name, name, sizeof name), device, why_missing(saved, reason, sizeof reason),
                    device);
}

/* Every tensor, allocated on its device and filled, into sd in the header's order. */
static ct_status load_tensors(reader *r, const ct_io_header *header, const ct_device *devices, ct_state_dict *sd)
{
    for (int64_t i = 0; i < header->count; i++) {
        const ct_io_entry *e = &header->entries[i];
        ct_tensor *t = ct_tensor_alloc("ct_load", devices[i], e->dtype, e->shape, e->ndim);
        if (!t) {
            char reason[512], name[CT_IO_PRINTABLE_MAX];
            snprintf(reason, sizeof reason, "%s", ct_last_error_message());
            return ct_error(ct_last_error(), "ct_load: '%s': tensor '%s': %s", r->name,
                            ct_io_printable(e->name, name, sizeof name), reason);
        }
        ct_status status = read_tensor(r, e, t);
        if (status == CT_OK) status = ct_state_dict_add(sd, e->name, t);
        ct_release(t);
        if (status != CT_OK) return status;
    }
    if (header->metadata)
        for (const cJSON *item = header->metadata->child; item; item = item->next)
            if (ct_state_dict_append_metadata(sd, item->string, item->valuestring) != CT_OK) return ct_last_error();
    return CT_OK;
}

/* The header's length and text, bounded by the file and by the format's limit. */
static ct_status read_header(reader *r, uint64_t file_size, char **text, uint64_t *length)
{
    if (file_size < 8)
        return ct_error(CT_ERR_IO, "ct_load: '%s' is %llu bytes; a safetensors file starts with an "
                        "8-byte header length", r->name, (unsigned long long)file_size);
    unsigned char prefix[8];
    ct_status status = read_exactly(r, prefix, sizeof prefix, "the header length");
    if (status != CT_OK) return status;
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--) n = (n << 8) | prefix[b];
    if (n > CT_IO_HEADER_MAX)
        return ct_error(CT_ERR_IO, "ct_load: '%s': the header length is %llu bytes; safetensors headers "
                        "are at most %llu (is this a safetensors file?)", r->name, (unsigned long long)n,
                        (unsigned long long)CT_IO_HEADER_MAX);
    if (n > file_size - 8)
        return ct_error(CT_ERR_IO, "ct_load: '%s': the header length %llu runs past the end of the file "
                        "(%llu bytes; the file is truncated or not safetensors)", r->name,
                        (unsigned long long)n, (unsigned long long)file_size);
    *text = malloc((size_t)n + 1);
    if (!*text) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory for the header", r->name);
    *length = n;
    return read_exactly(r, *text, (size_t)n, "the header");
}

static ct_state_dict *load_file(reader *r, const char *path, const ct_io_device_map *map)
{
    struct stat info;
    char reason[128];
    if (fstat(fileno(r->file), &info) != 0)
        return ct_error_null(CT_ERR_IO, "ct_load: '%s': %s", r->name, strerror_r(errno, reason, sizeof reason));
    if (!S_ISREG(info.st_mode)) return ct_error_null(CT_ERR_IO, "ct_load: '%s' is not a regular file", r->name);
    uint64_t file_size = (uint64_t)info.st_size, length = 0;
    char *text = NULL;
    ct_io_header header = {0};
    ct_device *devices = NULL;
    ct_state_dict *sd = NULL;
    ct_status status = read_header(r, file_size, &text, &length);
    if (status == CT_OK) {
        r->data_start = 8 + length;
        status = ct_io_header_parse(path, text, (size_t)length, file_size - r->data_start, &header);
    }
    free(text);
    if (status == CT_OK && !(devices = malloc(((size_t)header.count + 1) * sizeof *devices)))
        status = ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory", r->name);
    for (int64_t i = 0; i < header.count && status == CT_OK; i++) status = place(r, map, &header.entries[i], &devices[i]);
    if (status == CT_OK && !(sd = ct_state_dict_create())) status = ct_last_error();
    if (status == CT_OK) status = load_tensors(r, &header, devices, sd);
    if (status != CT_OK) {
        ct_state_dict_free(sd);
        sd = NULL;
    }
    free(devices);
    ct_io_header_free(&header);
    return sd;
}

ct_state_dict *ct_load(const char *path, const char *map_location)
{
    if (!path) return ct_error_null(CT_ERR_NULL_ARGUMENT, "ct_load: argument 'path' is NULL");
    ct_io_device_map map;
    if (ct_io_device_map_parse(map_location, &map) != CT_OK) return NULL;
    reader r = {0};
    ct_io_printable(path, r.name, sizeof r.name);
    int fd = ct_open_regular_file("ct_load", path, r.name); /* a FIFO would block fopen */
    if (fd < 0) return NULL;
    r.file = fdopen(fd, "rb");
    if (!r.file) {
        char reason[128];
        ct_error(CT_ERR_IO, "ct_load: cannot open '%s': %s", r.name, strerror_r(errno, reason, sizeof reason));
        close(fd);
        return NULL;
    }
    ct_api_enter(); /* the tensors belong to the state dict, not to the caller's scope */
    ct_state_dict *sd = load_file(&r, path, &map);
    ct_api_return(NULL);
    fclose(r.file);
    free(r.staging);
    return sd;
}
