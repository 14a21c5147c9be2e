/* State dicts: tensors under unique names, in insertion order, with string metadata. Names are
 * found through an open-addressing hash index over the ordered entries, so that building and
 * querying a state dict of many tensors stays linear. */
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "tensor/tensor_internal.h"

typedef struct entry {
    char *name;
    ct_tensor *tensor;
} entry;

typedef struct metadata_item {
    char *key;
    char *value;
} metadata_item;

struct ct_state_dict {
    entry *entries;
    int64_t count, capacity;
    int64_t *slots; /* entry indices, -1 for empty; slot_count is a power of two */
    size_t slot_count;
    metadata_item *metadata;
    int64_t metadata_count, metadata_capacity;
};

/* The state dict's own references: taken and dropped inside the API boundary, so that they never
 * touch the caller's scopes. */
static void hold(ct_tensor *t)
{
    ct_api_enter();
    ct_retain(t);
    ct_api_return(NULL);
}

static void drop(ct_tensor *t)
{
    ct_api_enter();
    ct_release(t);
    ct_api_return(NULL);
}

static char *copy_string(const char *text)
{
    size_t length = strlen(text) + 1;
    char *copy = malloc(length);
    if (copy) memcpy(copy, text, length);
    return copy;
}

/* ---- the hash index ---- */

static size_t hash_name(const char *name)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return (size_t)h;
}

static int64_t index_lookup(const ct_state_dict *sd, const char *name)
{
    if (sd->slot_count == 0) return -1;
    size_t mask = sd->slot_count - 1;
    for (size_t s = hash_name(name) & mask;; s = (s + 1) & mask) {
        int64_t at = sd->slots[s];
        if (at < 0) return -1;
        if (strcmp(sd->entries[at].name, name) == 0) return at;
    }
}

static void index_place(ct_state_dict *sd, int64_t at)
{
    size_t mask = sd->slot_count - 1;
    size_t s = hash_name(sd->entries[at].name) & mask;
    while (sd->slots[s] >= 0) s = (s + 1) & mask;
    sd->slots[s] = at;
}

/* Rebuilds the index with room for `count` entries at a load of at most one half. */
static ct_status index_rebuild(ct_state_dict *sd, int64_t count)
{
    size_t slot_count = 16;
    while (slot_count < (size_t)count * 2) slot_count *= 2;
    if (slot_count != sd->slot_count) {
        int64_t *slots = malloc(slot_count * sizeof *slots);
        if (!slots) return ct_error(CT_ERR_OUT_OF_MEMORY, "state dict: no host memory for the name index");
        free(sd->slots);
        sd->slots = slots;
        sd->slot_count = slot_count;
    }
    for (size_t s = 0; s < sd->slot_count; s++) sd->slots[s] = -1;
    for (int64_t at = 0; at < sd->count; at++) index_place(sd, at);
    return CT_OK;
}

/* ---- checks ---- */

static ct_status check_name(const char *function, const char *name)
{
    if (!name) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument 'name' is NULL", function);
    if (!ct_io_utf8_valid(name, strlen(name)))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: name '%s' is not valid UTF-8; safetensors "
                        "names are UTF-8 strings", function, name);
    if (strcmp(name, CT_IO_METADATA_KEY) == 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the name '" CT_IO_METADATA_KEY "' is reserved "
                        "by the safetensors format for metadata; choose another", function);
    return CT_OK;
}

#define CHECK_SD(function, sd)                                                                     \
    do {                                                                                           \
        if (!(sd)) return ct_error(CT_ERR_NULL_ARGUMENT, function ": argument 'sd' is NULL");      \
    } while (0)

/* ---- lifetime and entries ---- */

ct_state_dict *ct_state_dict_create(void)
{
    ct_state_dict *sd = calloc(1, sizeof *sd);
    if (!sd) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_state_dict_create: no host memory");
    if (index_rebuild(sd, 0) != CT_OK) {
        free(sd);
        return NULL;
    }
    return sd;
}

void ct_state_dict_free(ct_state_dict *sd)
{
    if (!sd) return;
    for (int64_t at = 0; at < sd->count; at++) {
        free(sd->entries[at].name);
        drop(sd->entries[at].tensor);
    }
    for (int64_t k = 0; k < sd->metadata_count; k++) {
        free(sd->metadata[k].key);
        free(sd->metadata[k].value);
    }
    free(sd->entries);
    free(sd->slots);
    free(sd->metadata);
    free(sd);
}

static ct_status append(ct_state_dict *sd, const char *function, const char *name, ct_tensor *t)
{
    if (sd->count == sd->capacity) {
        int64_t capacity = sd->capacity ? sd->capacity * 2 : 16;
        entry *entries = realloc(sd->entries, (size_t)capacity * sizeof *entries);
        if (!entries) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for entry '%s'", function, name);
        sd->entries = entries;
        sd->capacity = capacity;
    }
    if ((size_t)(sd->count + 1) * 2 > sd->slot_count && index_rebuild(sd, sd->count + 1) != CT_OK)
        return ct_last_error();
    char *copy = copy_string(name);
    if (!copy) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for name '%s'", function, name);
    hold(t);
    sd->entries[sd->count] = (entry){copy, t};
    index_place(sd, sd->count++);
    return CT_OK;
}

ct_status ct_state_dict_add(ct_state_dict *sd, const char *name, ct_tensor *t)
{
    CHECK_SD("ct_state_dict_add", sd);
    ct_status status = check_name("ct_state_dict_add", name);
    if (status != CT_OK) return status;
    if (!t) return ct_null_argument("ct_state_dict_add", "t"), ct_last_error();
    if (index_lookup(sd, name) >= 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_state_dict_add: the state dict already has '%s'; "
                        "names are unique (ct_state_dict_set replaces)", name);
    return append(sd, "ct_state_dict_add", name, t);
}

ct_status ct_state_dict_set(ct_state_dict *sd, const char *name, ct_tensor *t)
{
    CHECK_SD("ct_state_dict_set", sd);
    ct_status status = check_name("ct_state_dict_set", name);
    if (status != CT_OK) return status;
    if (!t) return ct_null_argument("ct_state_dict_set", "t"), ct_last_error();
    int64_t at = index_lookup(sd, name);
    if (at < 0) return append(sd, "ct_state_dict_set", name, t);
    hold(t);
    drop(sd->entries[at].tensor);
    sd->entries[at].tensor = t;
    return CT_OK;
}

int64_t ct_state_dict_find(const ct_state_dict *sd, const char *name)
{
    if (!sd) return ct_null_argument("ct_state_dict_find", "sd"), -1;
    if (!name) return ct_null_argument("ct_state_dict_find", "name"), -1;
    return index_lookup(sd, name);
}

bool ct_state_dict_contains(const ct_state_dict *sd, const char *name) { return ct_state_dict_find(sd, name) >= 0; }

int64_t ct_state_dict_count(const ct_state_dict *sd)
{
    if (!sd) return ct_null_argument("ct_state_dict_count", "sd"), 0;
    return sd->count;
}

ct_tensor *ct_state_dict_get(const ct_state_dict *sd, const char *name)
{
    CT_API_ENTER;
    if (!sd) return ct_api_return(ct_error_null(CT_ERR_NULL_ARGUMENT, "ct_state_dict_get: argument 'sd' is NULL"));
    if (!name) return ct_api_return(ct_error_null(CT_ERR_NULL_ARGUMENT, "ct_state_dict_get: argument 'name' is NULL"));
    int64_t at = index_lookup(sd, name);
    if (at < 0)
        return ct_api_return(ct_error_null(CT_ERR_INDEX, "ct_state_dict_get: the state dict has no "
                                           "tensor named '%s' (it has %lld)", name, (long long)sd->count));
    return ct_api_return(ct_retain(sd->entries[at].tensor));
}

static bool check_index(const char *function, const ct_state_dict *sd, int64_t index, int64_t count)
{
    if (!sd) {
        ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument 'sd' is NULL", function);
        return false;
    }
    if (index < 0 || index >= count) {
        ct_error(CT_ERR_INDEX, "%s: index %lld is out of range; there are %lld", function,
                 (long long)index, (long long)count);
        return false;
    }
    return true;
}

const char *ct_state_dict_name_at(const ct_state_dict *sd, int64_t index)
{
    if (!check_index("ct_state_dict_name_at", sd, index, sd ? sd->count : 0)) return NULL;
    return sd->entries[index].name;
}

ct_tensor *ct_state_dict_tensor_at(const ct_state_dict *sd, int64_t index)
{
    CT_API_ENTER;
    if (!check_index("ct_state_dict_tensor_at", sd, index, sd ? sd->count : 0)) return ct_api_return(NULL);
    return ct_api_return(ct_retain(sd->entries[index].tensor));
}

ct_tensor *ct_state_dict_tensor_borrowed(const ct_state_dict *sd, int64_t index)
{
    return sd->entries[index].tensor;
}

ct_status ct_state_dict_remove(ct_state_dict *sd, const char *name)
{
    CHECK_SD("ct_state_dict_remove", sd);
    if (!name) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_state_dict_remove: argument 'name' is NULL");
    int64_t at = index_lookup(sd, name);
    if (at < 0) return ct_error(CT_ERR_INDEX, "ct_state_dict_remove: the state dict has no tensor named '%s'", name);
    free(sd->entries[at].name);
    drop(sd->entries[at].tensor);
    memmove(sd->entries + at, sd->entries + at + 1, (size_t)(sd->count - at - 1) * sizeof *sd->entries);
    sd->count--;
    return index_rebuild(sd, sd->count);
}

ct_status ct_state_dict_remove_matching(ct_state_dict *sd, bool (*matches)(const char *name, void *context),
                                        void *context)
{
    CHECK_SD("ct_state_dict_remove_matching", sd);
    if (!matches) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_state_dict_remove_matching: argument 'matches' is NULL");
    /* One pass that keeps the rest in order, then one rebuild of the index: linear in the entries,
     * where removing them one by one rebuilt the index each time. */
    int64_t kept = 0;
    for (int64_t at = 0; at < sd->count; at++) {
        if (matches(sd->entries[at].name, context)) {
            free(sd->entries[at].name);
            drop(sd->entries[at].tensor);
        } else {
            sd->entries[kept++] = sd->entries[at];
        }
    }
    if (kept == sd->count) return CT_OK;
    sd->count = kept;
    return index_rebuild(sd, sd->count);
}

/* ---- renaming: the `module.` prefix ---- */

typedef struct renamed {
    char *name;
    int64_t index;
} renamed;

static int compare_renamed(const void *a, const void *b)
{
    const renamed *x = a, *y = b;
    int order = strcmp(x->name, y->name);
    return order ? order : (x->index > y->index) - (x->index < y->index);
}

static void free_renamed(renamed *names, int64_t count)
{
    for (int64_t k = 0; k < count; k++) free(names[k].name);
    free(names);
}

/* Gives every entry its new name when no two names collide; otherwise renames nothing. */
static ct_status rename_all(ct_state_dict *sd, const char *function, const char *prefix, bool strip)
{
    size_t prefix_length = strlen(prefix);
    renamed *names = calloc((size_t)sd->count + 1, sizeof *names);
    if (!names) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    for (int64_t at = 0; at < sd->count; at++) {
        const char *old = sd->entries[at].name;
        size_t old_length = strlen(old);
        char *name = malloc(old_length + prefix_length + 1);
        if (!name) {
            free_renamed(names, at);
            return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
        }
        if (!strip) {
            memcpy(name, prefix, prefix_length);
            memcpy(name + prefix_length, old, old_length + 1);
        } else if (strncmp(old, prefix, prefix_length) == 0) {
            memcpy(name, old + prefix_length, old_length - prefix_length + 1);
        } else {
            memcpy(name, old, old_length + 1);
        }
        names[at] = (renamed){name, at};
        if (strcmp(name, CT_IO_METADATA_KEY) == 0) {
            ct_status status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' would become '%s', which the "
                                        "safetensors format reserves; nothing was renamed", function, old, name);
            free_renamed(names, at + 1);
            return status;
        }
    }
    renamed *sorted = malloc((size_t)sd->count * sizeof *sorted + 1);
    if (!sorted) {
        free_renamed(names, sd->count);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    if (sd->count > 0) memcpy(sorted, names, (size_t)sd->count * sizeof *sorted);
    qsort(sorted, (size_t)sd->count, sizeof *sorted, compare_renamed);
    for (int64_t k = 1; k < sd->count; k++)
        if (strcmp(sorted[k - 1].name, sorted[k].name) == 0) {
            ct_status status = ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' and '%s' would both be named "
                                        "'%s'; nothing was renamed", function,
                                        sd->entries[sorted[k - 1].index].name,
                                        sd->entries[sorted[k].index].name, sorted[k].name);
            free(sorted);
            free_renamed(names, sd->count);
            return status;
        }
    free(sorted);
    for (int64_t at = 0; at < sd->count; at++) {
        free(sd->entries[at].name);
        sd->entries[at].name = names[at].name;
    }
    free(names);
    return index_rebuild(sd, sd->count);
}

static ct_status check_prefix(const char *function, const char *prefix)
{
    if (!prefix) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument 'prefix' is NULL", function);
    if (!ct_io_utf8_valid(prefix, strlen(prefix)))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: prefix '%s' is not valid UTF-8", function, prefix);
    return CT_OK;
}

ct_status ct_state_dict_strip_prefix(ct_state_dict *sd, const char *prefix)
{
    CHECK_SD("ct_state_dict_strip_prefix", sd);
    ct_status status = check_prefix("ct_state_dict_strip_prefix", prefix);
    return status != CT_OK ? status : rename_all(sd, "ct_state_dict_strip_prefix", prefix, true);
}

ct_status ct_state_dict_add_prefix(ct_state_dict *sd, const char *prefix)
{
    CHECK_SD("ct_state_dict_add_prefix", sd);
    ct_status status = check_prefix("ct_state_dict_add_prefix", prefix);
    return status != CT_OK ? status : rename_all(sd, "ct_state_dict_add_prefix", prefix, false);
}

/* ---- metadata ---- */

static int64_t metadata_lookup(const ct_state_dict *sd, const char *key)
{
    for (int64_t k = 0; k < sd->metadata_count; k++)
        if (strcmp(sd->metadata[k].key, key) == 0) return k;
    return -1;
}

ct_status ct_state_dict_append_metadata(ct_state_dict *sd, const char *key, const char *value)
{
    if (sd->metadata_count == sd->metadata_capacity) {
        int64_t capacity = sd->metadata_capacity ? sd->metadata_capacity * 2 : 8;
        metadata_item *items = realloc(sd->metadata, (size_t)capacity * sizeof *items);
        if (!items) return ct_error(CT_ERR_OUT_OF_MEMORY, "state dict: no host memory for metadata '%s'", key);
        sd->metadata = items;
        sd->metadata_capacity = capacity;
    }
    char *key_copy = copy_string(key), *value_copy = copy_string(value);
    if (!key_copy || !value_copy) {
        free(key_copy);
        free(value_copy);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "state dict: no host memory for metadata '%s'", key);
    }
    sd->metadata[sd->metadata_count++] = (metadata_item){key_copy, value_copy};
    return CT_OK;
}

ct_status ct_state_dict_set_metadata(ct_state_dict *sd, const char *key, const char *value)
{
    CHECK_SD("ct_state_dict_set_metadata", sd);
    if (!key) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_state_dict_set_metadata: argument 'key' is NULL");
    if (!value) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_state_dict_set_metadata: argument 'value' is NULL");
    if (!ct_io_utf8_valid(key, strlen(key)) || !ct_io_utf8_valid(value, strlen(value)))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_state_dict_set_metadata: key '%s' or its value is "
                        "not valid UTF-8; safetensors metadata is UTF-8 strings", key);
    if (ct_io_metadata_key_is_reserved(key))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_state_dict_set_metadata: key '%s' is ctorch's own "
                        "('" CT_IO_VERSION_KEY "', '" CT_IO_DEVICE_KEY_PREFIX "*'); ct_save writes it", key);
    int64_t at = metadata_lookup(sd, key);
    if (at < 0) return ct_state_dict_append_metadata(sd, key, value);
    char *copy = copy_string(value);
    if (!copy) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_state_dict_set_metadata: no host memory");
    free(sd->metadata[at].value);
    sd->metadata[at].value = copy;
    return CT_OK;
}

const char *ct_state_dict_metadata(const ct_state_dict *sd, const char *key)
{
    if (!sd) return ct_null_argument("ct_state_dict_metadata", "sd");
    if (!key) return ct_null_argument("ct_state_dict_metadata", "key");
    int64_t at = metadata_lookup(sd, key);
    return at < 0 ? NULL : sd->metadata[at].value;
}

int64_t ct_state_dict_metadata_count(const ct_state_dict *sd)
{
    if (!sd) return ct_null_argument("ct_state_dict_metadata_count", "sd"), 0;
    return sd->metadata_count;
}

const char *ct_state_dict_metadata_key_at(const ct_state_dict *sd, int64_t index)
{
    if (!check_index("ct_state_dict_metadata_key_at", sd, index, sd ? sd->metadata_count : 0)) return NULL;
    return sd->metadata[index].key;
}

const char *ct_state_dict_metadata_value_at(const ct_state_dict *sd, int64_t index)
{
    if (!check_index("ct_state_dict_metadata_value_at", sd, index, sd ? sd->metadata_count : 0)) return NULL;
    return sd->metadata[index].value;
}
