/* ctorch checkpoints: named tensor collections (state dicts) saved and loaded in the safetensors
 * format, with device maps.
 *
 * The file: an 8-byte little-endian header length N, N bytes of UTF-8 JSON padded with spaces to
 * a multiple of 8, then the data section, every tensor's raw little-endian row-major bytes:
 *     {"__metadata__": {"ctorch.version": "0.1.0", "ctorch.device.fc.weight": "opencl:0", ...},
 *      "fc.weight": {"dtype": "F32", "shape": [10, 64], "data_offsets": [0, 2560]}, ...}
 * dtypes: F32, F64, I32, I64, U8, BOOL. Files of Python's safetensors and of PyTorch (through
 * safetensors.torch.save_file) load, and ctorch's files open there.
 *
 * __metadata__ holds strings only. ctorch writes "ctorch.version" and, for every tensor,
 * "ctorch.device.<name>" = the device it was saved from ("cpu", "opencl:0", "cuda:1"); a loader
 * that does not know ctorch ignores them. Other metadata keys of a state dict are saved and loaded
 * as they are (ct_state_dict_set_metadata).
 *
 * Data is laid out largest element size first (8-byte, then 4-byte, then 1-byte dtypes), so every
 * tensor starts at a multiple of its element size in the file; the header lists the tensors in the
 * state dict's order, and loading keeps the header's order. */
#ifndef CTORCH_IO_H
#define CTORCH_IO_H

#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- state dicts: ordered tensors with unique names ----
 * A state dict holds a reference to each of its tensors. Names are UTF-8 strings (the empty name
 * too), unique, and never "__metadata__" (the format reserves it). Not thread-safe: one thread
 * changes a state dict at a time. */
typedef struct ct_state_dict ct_state_dict;

ct_state_dict *ct_state_dict_create(void);
/* Releases every tensor and frees the state dict. NULL-safe. */
void ct_state_dict_free(ct_state_dict *sd);

/* Appends name -> t and retains t. A name already there is an error (CT_ERR_INVALID_ARGUMENT). */
ct_status ct_state_dict_add(ct_state_dict *sd, const char *name, ct_tensor *t);
/* Replaces the tensor of an existing name (keeping its place), or appends a new one. */
ct_status ct_state_dict_set(ct_state_dict *sd, const char *name, ct_tensor *t);
/* A new reference to the tensor named name; NULL and CT_ERR_INDEX when there is none. */
ct_tensor *ct_state_dict_get(const ct_state_dict *sd, const char *name);
/* The index of name, or -1 when there is none (no error recorded). */
int64_t ct_state_dict_find(const ct_state_dict *sd, const char *name);
bool ct_state_dict_contains(const ct_state_dict *sd, const char *name);
int64_t ct_state_dict_count(const ct_state_dict *sd);
/* The name at index (borrowed: valid until the state dict changes); NULL and CT_ERR_INDEX when
 * index is out of range. */
const char *ct_state_dict_name_at(const ct_state_dict *sd, int64_t index);
/* A new reference to the tensor at index; NULL and CT_ERR_INDEX when out of range. */
ct_tensor *ct_state_dict_tensor_at(const ct_state_dict *sd, int64_t index);
/* Removes name (releasing its tensor); the others keep their order. CT_ERR_INDEX when absent. */
ct_status ct_state_dict_remove(ct_state_dict *sd, const char *name);
/* Removes every name for which matches(name, context) is true (releasing their tensors); the
 * others keep their order. Linear in the entries (removing many names one by one is not). */
ct_status ct_state_dict_remove_matching(ct_state_dict *sd, bool (*matches)(const char *name, void *context),
                                        void *context);

/* PyTorch's DataParallel / DistributedDataParallel name their parameters "module.<name>".
 * strip_prefix renames every name that starts with prefix to the rest of it (others stay as they
 * are: torch.nn.modules.utils.consume_prefix_in_state_dict_if_present); add_prefix puts prefix in
 * front of every name. When two names would become one, or a name would become "__metadata__",
 * nothing is renamed and the error (CT_ERR_INVALID_ARGUMENT) names both. */
ct_status ct_state_dict_strip_prefix(ct_state_dict *sd, const char *prefix);
ct_status ct_state_dict_add_prefix(ct_state_dict *sd, const char *prefix);

/* String metadata saved in __metadata__ (and filled from it by ct_load). Keys and values are UTF-8;
 * "ctorch.version" and keys starting with "ctorch.device." are ctorch's own: a state dict may hold
 * them after a load, but setting them is an error and ct_save writes its own. */
ct_status ct_state_dict_set_metadata(ct_state_dict *sd, const char *key, const char *value);
/* The value of key (borrowed), or NULL when there is none (no error recorded). */
const char *ct_state_dict_metadata(const ct_state_dict *sd, const char *key);
int64_t ct_state_dict_metadata_count(const ct_state_dict *sd);
/* The key / value at index (borrowed); NULL and CT_ERR_INDEX when out of range. */
const char *ct_state_dict_metadata_key_at(const ct_state_dict *sd, int64_t index);
const char *ct_state_dict_metadata_value_at(const ct_state_dict *sd, int64_t index);

/* ---- saving and loading ---- */
/* Writes sd to path in the safetensors format. Tensors on any device are read back (views are
 * saved contiguous). Atomic: the bytes go to a temporary file in path's folder, which is synced
 * and renamed over path, and the folder is synced; on any failure the temporary is removed and
 * an existing file at path is left as it was. What may be at path (checked before writing):
 *   nothing: a new file, its mode from the umask;
 *   a regular file: replaced, the new file keeping its mode (and, where allowed, its owner); a
 *     read-only file (no write bit, or not writable by this user) is refused, even for root;
 *   a symbolic link: followed: the file it leads to is replaced (with the same rules) and the link
 *     stays; a link to nothing is refused;
 *   anything else (a folder, a device, a FIFO, a socket) is refused.
 * A file with several hard links is replaced under this name only. The temporary file is
 * ".<name>.tmp-<pid>-<n>" (a long name keeps only its start, so that it fits the folder); those
 * of earlier saves to the same name whose process no longer runs (killed while saving) are
 * removed, with a warning in the log. Errors: CT_ERR_IO naming the path and the cause;
 * CT_ERR_INVALID_ARGUMENT for an empty path, one that names a folder ("dir/") or a file name
 * longer than its folder takes. */
ct_status ct_save(const ct_state_dict *sd, const char *path);
/* The checks ct_save makes of path before it writes (above), and nothing else: CT_OK where ct_save
 * could write, or the error it would give. For programs that save after long work (a training),
 * to report a bad path before the work starts. */
ct_status ct_save_check_path(const char *path);

/* Reads a safetensors file into a new state dict. map_location says where the tensors go:
 *   NULL                         each to the device it was saved from (cpu when the file does not
 *                                say: files of other programs load onto the cpu);
 *   "cpu", "opencl:1", ...       all of them to that device;
 *   "cuda:1=cpu,cuda:0=opencl:0" a table of from=to pairs: a tensor saved on a device in the table
 *                                goes to its pair, the others to the device they were saved from.
 *                                A `from` without an index ("cuda=cpu") covers every index.
 * A tensor whose device is not on this machine, with no map for it, fails with CT_ERR_DEVICE and a
 * message naming the tensor, the device and a map_location that would work. Nothing in the file
 * is trusted: a malformed file fails with CT_ERR_IO and a message naming the file, the tensor and
 * what is wrong. Returns NULL on failure. */
ct_state_dict *ct_load(const char *path, const char *map_location);

#ifdef __cplusplus
}
#endif
#endif
