/* The loader's pieces: the checked header of a safetensors file, and device maps. */
#ifndef CT_IO_LOAD_INTERNAL_H
#define CT_IO_LOAD_INTERNAL_H

#include <cjson/cJSON.h>

#include "io/io_internal.h"

/* One tensor of the header, checked: its dtype is known, its shape x dtype size equals its byte
 * range, and the range lies inside the data section without overlapping another. */
typedef struct ct_io_entry {
    const char *name; /* owned by the header's JSON tree */
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    uint64_t begin, end; /* bytes, from the start of the data section */
    bool has_saved_device; /* the file's metadata says where it was saved */
    ct_device saved_device;
} ct_io_entry;

typedef struct ct_io_header {
    cJSON *json;
    ct_io_entry *entries; /* in the header's order */
    int64_t count;
    const cJSON *metadata; /* the __metadata__ object (strings only), or NULL */
} ct_io_header;

/* Parses and checks `length` bytes of header text of the file `path` (named in errors), whose
 * data section has data_size bytes. On failure records CT_ERR_IO and leaves *out empty. */
ct_status ct_io_header_parse(const char *path, const char *text, size_t length, uint64_t data_size,
                             ct_io_header *out);
void ct_io_header_free(ct_io_header *header);

/* A map_location: keep the saved devices, move everything to one device, or a from=to table. */
#define CT_IO_DEVICE_MAP_MAX 64
typedef enum ct_io_map_kind { CT_IO_MAP_KEEP, CT_IO_MAP_ALL, CT_IO_MAP_TABLE } ct_io_map_kind;
typedef struct ct_io_device_map {
    ct_io_map_kind kind;
    ct_device all;
    int count;
    struct {
        ct_device from, to;
    } pairs[CT_IO_DEVICE_MAP_MAX];
} ct_io_device_map;

/* NULL: keep. Targets must exist on this machine; `from` devices need only be well-formed. */
ct_status ct_io_device_map_parse(const char *text, ct_io_device_map *out);
/* Where a tensor saved on `saved` goes; *mapped says whether the map chose it. */
ct_device ct_io_device_map_apply(const ct_io_device_map *map, ct_device saved, bool *mapped);

#endif
