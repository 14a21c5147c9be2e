/* map_location: "cpu", "opencl:1", or a table "cuda:1=cpu,cuda:0=opencl:0". */
#include <ctype.h>
#include <string.h>

#include "io/load_internal.h"

/* Copies [begin, end) without surrounding spaces into buf; false when it does not fit. */
static bool trimmed(const char *begin, const char *end, char *buf, size_t size)
{
    while (begin < end && isspace((unsigned char)*begin)) begin++;
    while (end > begin && isspace((unsigned char)end[-1])) end--;
    if ((size_t)(end - begin) >= size) return false;
    memcpy(buf, begin, (size_t)(end - begin));
    buf[end - begin] = '\0';
    return true;
}

/* Parses one device of the map, with the reason of a failure after the map's text. */
static ct_status parse_device(const char *map, const char *device_text, bool must_exist, ct_device *out)
{
    ct_status status = must_exist ? ct_device_parse(device_text, out) : ct_device_parse_syntax(device_text, out);
    if (status == CT_OK) return CT_OK;
    char reason[512];
    snprintf(reason, sizeof reason, "%s", ct_last_error_message());
    return ct_error(status, "ct_load: map_location '%s': %s", map, reason);
}

ct_status ct_io_device_map_parse(const char *text, ct_io_device_map *out)
{
    memset(out, 0, sizeof *out);
    out->kind = CT_IO_MAP_KEEP;
    if (!text) return CT_OK;
    char item[CT_DEVICE_STRING_MAX * 2 + 8];
    if (!strchr(text, '=')) {
        if (!trimmed(text, text + strlen(text), item, sizeof item))
            return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_load: map_location '%s' is not a device", text);
        out->kind = CT_IO_MAP_ALL;
        return parse_device(text, item, true, &out->all);
    }
    out->kind = CT_IO_MAP_TABLE;
    for (const char *at = text;;) {
        const char *comma = strchr(at, ',');
        const char *end = comma ? comma : at + strlen(at);
        const char *equals = memchr(at, '=', (size_t)(end - at));
        char from[CT_DEVICE_STRING_MAX * 2], to[CT_DEVICE_STRING_MAX * 2];
        if (!trimmed(at, end, item, sizeof item) || !equals || !trimmed(at, equals, from, sizeof from) ||
            !trimmed(equals + 1, end, to, sizeof to) || !*from || !*to || strchr(to, '='))
            return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_load: map_location '%s': '%s' is not a pair "
                            "from=to such as 'cuda:0=cpu'; pairs are separated by commas", text,
                            trimmed(at, end, item, sizeof item) ? item : "(too long)");
        if (out->count == CT_IO_DEVICE_MAP_MAX)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_load: map_location '%s' has more than %d pairs",
                            text, CT_IO_DEVICE_MAP_MAX);
        ct_device from_device, to_device;
        if (parse_device(text, from, false, &from_device) != CT_OK) return ct_last_error();
        if (parse_device(text, to, true, &to_device) != CT_OK) return ct_last_error();
        for (int k = 0; k < out->count; k++)
            if (ct_device_equal(out->pairs[k].from, from_device))
                return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_load: map_location '%s' maps '%s' twice",
                                text, from);
        out->pairs[out->count].from = from_device;
        out->pairs[out->count].to = to_device;
        out->count++;
        if (!comma) return CT_OK;
        at = comma + 1;
    }
}

ct_device ct_io_device_map_apply(const ct_io_device_map *map, ct_device saved, bool *mapped)
{
    *mapped = true;
    if (map->kind == CT_IO_MAP_ALL) return map->all;
    if (map->kind == CT_IO_MAP_TABLE) {
        for (int k = 0; k < map->count; k++) /* an exact pair first, then one for the whole type */
            if (ct_device_equal(map->pairs[k].from, saved)) return map->pairs[k].to;
        for (int k = 0; k < map->count; k++)
            if (map->pairs[k].from.index < 0 && map->pairs[k].from.type == saved.type) return map->pairs[k].to;
    }
    *mapped = false;
    return saved;
}
