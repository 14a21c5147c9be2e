/* ct_save: a state dict into a safetensors file, atomically (atomic_file.c: temporary file, fsync,
 * rename, fsync of the folder), onto a target checked first (save_target.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/save_internal.h"
#include "tensor/tensor_internal.h"

/* ---- the JSON header, written by hand so that integers stay integers ---- */

typedef struct text {
    char *data;
    size_t length, capacity;
    bool failed;
} text;

static void put(text *t, const char *bytes, size_t n)
{
    if (t->failed) return;
    if (t->length + n + 1 > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 1024;
        while (capacity < t->length + n + 1) capacity *= 2;
        char *data = realloc(t->data, capacity);
        if (!data) {
            t->failed = true;
            return;
        }
        t->data = data;
        t->capacity = capacity;
    }
    memcpy(t->data + t->length, bytes, n);
    t->length += n;
    t->data[t->length] = '\0';
}

static void put_text(text *t, const char *s) { put(t, s, strlen(s)); }

static void put_format(text *t, const char *fmt, ...) CT_PRINTF(2, 3);
static void put_format(text *t, const char *fmt, ...)
{
    char buf[64];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    if (n > 0) put(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* A JSON string of valid UTF-8: quotes, backslashes and control characters escaped. */
static void put_json_string(text *t, const char *s)
{
    put_text(t, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"') put_text(t, "\\\"");
        else if (*p == '\\') put_text(t, "\\\\");
        else if (*p == '\n') put_text(t, "\\n");
        else if (*p == '\t') put_text(t, "\\t");
        else if (*p == '\r') put_text(t, "\\r");
        else if (*p < 0x20) put_format(t, "\\u%04x", *p);
        else put(t, (const char *)p, 1);
    }
    put_text(t, "\"");
}

/* ---- the layout of the data section ---- */

typedef struct planned {
    ct_tensor *tensor;
    const char *name;
    size_t bytes;
    uint64_t begin; /* in the data section */
} planned;

static int compare_largest_element_first(const void *a, const void *b)
{
    const planned *x = *(const planned *const *)a, *y = *(const planned *const *)b;
    size_t sx = ct_dtype_size(x->tensor->dtype), sy = ct_dtype_size(y->tensor->dtype);
    if (sx != sy) return sx > sy ? -1 : 1;
    return (x > y) - (x < y); /* stable: the state dict's order */
}

static void put_header(text *h, const ct_state_dict *sd, const planned *plan, int64_t count)
{
    char device[CT_DEVICE_STRING_MAX];
    put_text(h, "{\"" CT_IO_METADATA_KEY "\":{\"" CT_IO_VERSION_KEY "\":\"" CT_VERSION_STRING "\"");
    for (int64_t k = 0; k < ct_state_dict_metadata_count(sd); k++) {
        const char *key = ct_state_dict_metadata_key_at(sd, k);
        if (ct_io_metadata_key_is_reserved(key)) continue; /* from a load: ctorch writes its own */
        put_text(h, ",");
        put_json_string(h, key);
        put_text(h, ":");
        put_json_string(h, ct_state_dict_metadata_value_at(sd, k));
    }
    for (int64_t i = 0; i < count; i++) {
        size_t key_size = sizeof CT_IO_DEVICE_KEY_PREFIX + strlen(plan[i].name);
        char *key = malloc(key_size);
        if (!key) {
            h->failed = true;
            return;
        }
        snprintf(key, key_size, CT_IO_DEVICE_KEY_PREFIX "%s", plan[i].name);
        put_text(h, ",");
        put_json_string(h, key);
        free(key);
        put_text(h, ":");
        put_json_string(h, ct_device_format(plan[i].tensor->storage->device, device, sizeof device));
    }
    put_text(h, "}");
    for (int64_t i = 0; i < count; i++) {
        const ct_tensor *t = plan[i].tensor;
        put_text(h, ",");
        put_json_string(h, plan[i].name);
        put_text(h, ":{\"dtype\":\"");
        put_text(h, ct_io_dtype_code(t->dtype));
        put_text(h, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) put_format(h, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        put_format(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)plan[i].begin,
                   (unsigned long long)(plan[i].begin + plan[i].bytes));
    }
    put_text(h, "}");
    while (!h->failed && h->length % 8 != 0) put_text(h, " ");
}

/* ---- writing the file ---- */

/* A tensor's bytes, little-endian and row-major. A contiguous CPU tensor is written from its
 * storage; others are read back through the tensor layer first. */
static ct_status write_tensor(ct_io_atomic_file *w, const planned *item)
{
    const ct_tensor *t = item->tensor;
    if (item->bytes == 0) return CT_OK;
    if (t->storage->device.type == CT_CPU && ct_is_contiguous(t) && ct_io_host_is_little_endian())
        return ct_io_atomic_write(w, (const char *)ct_tensor_handle(t) + (size_t)t->offset * ct_dtype_size(t->dtype),
                           item->bytes);
    void *host = malloc(item->bytes);
    if (!host)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_save: '%s': no host memory to read back tensor '%s' "
                        "(%zu bytes)", w->path, item->name, item->bytes);
    ct_status status = ct_tensor_to_array(t, host, item->bytes);
    if (status == CT_OK) {
        ct_io_to_little_endian(host, item->bytes / ct_dtype_size(t->dtype), ct_dtype_size(t->dtype));
        status = ct_io_atomic_write(w, host, item->bytes);
    }
    free(host);
    return status;
}

static ct_status write_file(const char *path, const text *header, planned *const *order, int64_t count)
{
    ct_io_atomic_file file;
    if (ct_io_atomic_open(path, &file) != CT_OK) return ct_last_error();
    uint64_t size = 8 + header->length;
    for (int64_t k = 0; k < count; k++) size += order[k]->bytes;
    if (ct_io_atomic_check_size(&file, size) != CT_OK) {
        ct_status status = ct_last_error();
        ct_io_atomic_abandon(&file);
        return status;
    }
    unsigned char length[8];
    for (int b = 0; b < 8; b++) length[b] = (unsigned char)((uint64_t)header->length >> (8 * b));
    ct_status status = ct_io_atomic_write(&file, length, sizeof length);
    if (status == CT_OK) status = ct_io_atomic_write(&file, header->data, header->length);
    for (int64_t k = 0; k < count && status == CT_OK; k++) status = write_tensor(&file, order[k]);
    if (status != CT_OK) {
        ct_io_atomic_abandon(&file);
        return status;
    }
    return ct_io_atomic_commit(&file);
}

ct_status ct_save_check_path(const char *path)
{
    if (!path) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_save_check_path: argument 'path' is NULL");
    ct_io_save_target target;
    ct_status status = ct_io_save_target_resolve(path, &target);
    ct_io_save_target_free(&target);
    return status;
}

ct_status ct_save(const ct_state_dict *sd, const char *path)
{
    if (!sd) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_save: argument 'sd' is NULL");
    if (!path) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_save: argument 'path' is NULL");
    if (!*path) return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_save: the path is empty");
    int64_t count = ct_state_dict_count(sd);
    planned *plan = calloc((size_t)count + 1, sizeof *plan);
    planned **order = calloc((size_t)count + 1, sizeof *order);
    if (!plan || !order) {
        free(plan);
        free(order);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_save: no host memory for %lld entries", (long long)count);
    }
    for (int64_t i = 0; i < count; i++) {
        ct_tensor *t = ct_state_dict_tensor_borrowed(sd, i);
        plan[i] = (planned){t, ct_state_dict_name_at(sd, i), (size_t)ct_numel(t) * ct_dtype_size(t->dtype), 0};
        order[i] = &plan[i];
    }
    qsort(order, (size_t)count, sizeof *order, compare_largest_element_first);
    uint64_t offset = 0;
    for (int64_t k = 0; k < count; k++) {
        order[k]->begin = offset;
        offset += order[k]->bytes;
    }
    text header = {0};
    put_header(&header, sd, plan, count);
    ct_status status = CT_OK;
    if (header.failed)
        status = ct_error(CT_ERR_OUT_OF_MEMORY, "ct_save: '%s': no host memory for the header", path);
    else if (header.length > CT_IO_HEADER_MAX)
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "ct_save: '%s': the header would be %zu bytes; the "
                          "safetensors format allows %llu", path, header.length,
                          (unsigned long long)CT_IO_HEADER_MAX);
    else
        status = write_file(path, &header, order, count);
    free(header.data);
    free(plan);
    free(order);
    return status;
}
