/* llm.c's GPT-2 checkpoint (train_gpt2.c's gpt2_build_from_checkpoint and the writer of
 * train_gpt2.py): a 256-int32 header, then every parameter in float32, each of llm.c's 16 tensors
 * holding all layers in turn. Read straight into the tensors' memory; written atomically. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "io/load_internal.h"
#include "io/save_internal.h"
#include "models/gpt_files.h"
#include "tensor/tensor_internal.h"

#define HEADER_BYTES 1024
#define LLMC_VERSION_BF16 5 /* train_gpt2.cu's: every parameter in bfloat16 */

static int32_t int32_at(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* The elements of each part (all layers) and where the parts start, in floats. */
static void part_layout(const ct_gpt_config *c, uint64_t size[CT_GPT_LLMC_PARTS], uint64_t begin[CT_GPT_LLMC_PARTS])
{
    uint64_t C = (uint64_t)c->n_embd, L = (uint64_t)c->n_layer;
    uint64_t per[CT_GPT_LLMC_PARTS] = {(uint64_t)c->padded_vocab_size * C, (uint64_t)c->block_size * C,
                                       L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C, L * C, L * C,
                                       L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
    uint64_t at = 0;
    for (int p = 0; p < CT_GPT_LLMC_PARTS; p++) {
        size[p] = per[p];
        begin[p] = at;
        at += per[p];
    }
}

static uint64_t numel_of(const ct_gpt_tensor_spec *s) { return (uint64_t)s->shape[0] * (uint64_t)(s->ndim == 2 ? s->shape[1] : 1); }

/* Where spec s starts in the file's float section. */
static uint64_t float_offset(const ct_gpt_tensor_spec *s, const uint64_t size[], const uint64_t begin[], int64_t layers)
{
    uint64_t at = begin[s->part];
    if (s->layer >= 0) at += (uint64_t)s->layer * (size[s->part] / (uint64_t)layers);
    return at;
}

static ct_status read_exact(int fd, const char *path, void *buf, size_t n, off_t offset)
{
    char *p = buf;
    while (n > 0) {
        ssize_t got = pread(fd, p, n, offset);
        if (got < 0 && errno == EINTR) continue;
        char reason[128];
        if (got < 0) return ct_error(CT_ERR_IO, "ct_gpt_checkpoint_load: cannot read '%s': %s", path,
                                     strerror_r(errno, reason, sizeof reason));
        if (got == 0) return ct_error(CT_ERR_IO, "ct_gpt_checkpoint_load: '%s' ended early (changed while read?)", path);
        p += got;
        n -= (size_t)got;
        offset += got;
    }
    return CT_OK;
}

static ct_state_dict *load(const char *path, const char *map_location, ct_gpt_config *config)
{
    static const char *FN = "ct_gpt_checkpoint_load";
    ct_io_device_map map;
    if (ct_io_device_map_parse(map_location, &map) != CT_OK) return NULL;
    bool mapped = false;
    ct_device device = ct_io_device_map_apply(&map, CT_DEVICE_CPU, &mapped);
    int fd = ct_open_regular_file(FN, path, path);
    if (fd < 0) return NULL;
    struct stat info;
    unsigned char header[HEADER_BYTES];
    ct_state_dict *sd = NULL;
    ct_gpt_tensor_spec *specs = NULL;
    if (fstat(fd, &info) != 0 || info.st_size < HEADER_BYTES) {
        ct_error(CT_ERR_IO, "%s: '%s' is %lld bytes, shorter than the %d-byte header of an llm.c checkpoint", FN,
                 path, (long long)info.st_size, HEADER_BYTES);
        goto done;
    }
    if (read_exact(fd, path, header, HEADER_BYTES, 0) != CT_OK) goto done;
    if (int32_at(header) != CT_LLMC_CHECKPOINT_MAGIC) {
        ct_error(CT_ERR_IO, "%s: '%s' begins with %d, not llm.c's checkpoint magic %d", FN, path, int32_at(header),
                 CT_LLMC_CHECKPOINT_MAGIC);
        goto done;
    }
    int version = int32_at(header + 4);
    if (version != CT_LLMC_CHECKPOINT_VERSION && version != LLMC_VERSION_BF16) {
        ct_error(CT_ERR_IO, "%s: '%s' is llm.c checkpoint version %d; ctorch reads versions %d (float32, as "
                 "train_gpt2.c reads and train_gpt2.py writes gpt2_124M.bin) and %d (bfloat16, "
                 "gpt2_124M_bf16.bin)", FN, path, version, CT_LLMC_CHECKPOINT_VERSION, LLMC_VERSION_BF16);
        goto done;
    }
    uint64_t element = version == LLMC_VERSION_BF16 ? 2 : 4;
    ct_gpt_config c = {.block_size = int32_at(header + 8), .vocab_size = int32_at(header + 12),
                       .n_layer = int32_at(header + 16), .n_head = int32_at(header + 20),
                       .n_embd = int32_at(header + 24), .padded_vocab_size = int32_at(header + 28),
                       .dropout = 0.0, .bias = true};
    char prefix[700];
    snprintf(prefix, sizeof prefix, "%s: '%s' (llm.c header: maxT, V, L, NH, C, Vp)", FN, path);
    if (ct_gpt_files_check_config(prefix, &c) != CT_OK) goto done;
    uint64_t size[CT_GPT_LLMC_PARTS], begin[CT_GPT_LLMC_PARTS];
    part_layout(&c, size, begin);
    /* in double first: sizes from a damaged header must not wrap around */
    double floats = (double)c.padded_vocab_size * (double)c.n_embd + (double)c.block_size * (double)c.n_embd +
                    (double)c.n_layer * (12.0 * (double)c.n_embd * (double)c.n_embd + 13.0 * (double)c.n_embd) +
                    2.0 * (double)c.n_embd;
    uint64_t expected = floats * (double)element < 0x1p62
                            ? HEADER_BYTES + element * (begin[CT_GPT_LLMC_PARTS - 1] + size[CT_GPT_LLMC_PARTS - 1])
                            : UINT64_MAX;
    if ((uint64_t)info.st_size != expected) {
        ct_error(CT_ERR_IO, "%s: '%s' is %lld bytes; an llm.c checkpoint (version %d) of maxT %lld, V %lld, L %lld, "
                 "NH %lld, C %lld, Vp %lld is %llu (%s)", FN, path, (long long)info.st_size, version, (long long)c.block_size,
                 (long long)c.vocab_size, (long long)c.n_layer, (long long)c.n_head, (long long)c.n_embd,
                 (long long)c.padded_vocab_size, (unsigned long long)expected,
                 (uint64_t)info.st_size < expected ? "truncated?" : "extra bytes after the parameters");
        goto done;
    }
    int64_t count = 0;
    specs = ct_gpt_tensor_specs(&c, &count);
    sd = specs ? ct_state_dict_create() : NULL;
    ct_tensor *wte = NULL;
    for (int64_t k = 0; sd && k < count; k++) {
        const ct_gpt_tensor_spec *s = &specs[k];
        if (s->part == CT_GPT_LM_HEAD) {
            if (ct_state_dict_add(sd, s->name, wte) != CT_OK) goto fail;
            continue;
        }
        ct_tensor *t = ct_tensor_alloc(FN, CT_DEVICE_CPU, CT_F32, s->shape, s->ndim);
        if (!t) goto fail;
        size_t n = (size_t)numel_of(s);
        float *values = ct_tensor_handle(t);
        uint16_t *halves = element == 2 ? malloc(n * sizeof *halves) : NULL; /* bfloat16, widened below */
        void *into = element == 2 ? (void *)halves : (void *)values;
        ct_status status = element == 2 && !halves
                               ? ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu bfloat16 values", FN, n)
                               : read_exact(fd, path, into, n * element,
                                            (off_t)(HEADER_BYTES + element * float_offset(s, size, begin, c.n_layer)));
        if (status == CT_OK) ct_io_to_little_endian(into, n, element);
        if (status == CT_OK && element == 2)
            for (size_t i = 0; i < n; i++) {
                uint32_t bits = (uint32_t)halves[i] << 16;
                memcpy(&values[i], &bits, sizeof bits);
            }
        free(halves);
        if (status == CT_OK && device.type != CT_CPU) {
            ct_tensor *moved = ct_to(t, device);
            ct_release(t);
            t = moved;
        }
        if (status != CT_OK || !t || ct_state_dict_add(sd, s->name, t) != CT_OK) {
            ct_release(t);
            goto fail;
        }
        if (s->part == CT_GPT_WTE) wte = t;
        ct_release(t);
    }
    if (sd && config) *config = c;
    goto done;
fail:
    ct_state_dict_free(sd);
    sd = NULL;
done:
    free(specs);
    close(fd);
    return sd;
}

ct_state_dict *ct_gpt_llmc_load(const char *path, const char *map_location, ct_gpt_config *config)
{
    ct_api_enter();
    ct_state_dict *sd = load(path, map_location, config);
    ct_api_return(NULL);
    return sd;
}

static void put_int32(unsigned char *p, int64_t v)
{
    for (int b = 0; b < 4; b++) p[b] = (unsigned char)((uint32_t)(int32_t)v >> (8 * b));
}

/* The float32 bytes of the canonical state dict's tensor for part/layer; zeros for a bias a GPT
 * without biases lacks. */
static ct_status write_part(ct_io_atomic_file *f, const ct_state_dict *sd, const ct_gpt_tensor_spec *s, float *buf)
{
    size_t n = (size_t)numel_of(s);
    int64_t at = ct_state_dict_find(sd, s->name);
    if (at < 0) memset(buf, 0, n * sizeof *buf);
    else {
        ct_tensor *t = ct_to_dtype(ct_state_dict_tensor_borrowed(sd, at), CT_F32);
        ct_status status = t ? ct_tensor_to_array(t, buf, n * sizeof *buf) : ct_last_error();
        ct_release(t);
        if (status != CT_OK) return status;
    }
    ct_io_to_little_endian(buf, n, 4);
    return ct_io_atomic_write(f, buf, n * sizeof *buf);
}

static ct_status save(const ct_state_dict *sd, const ct_gpt_config *c, const char *path)
{
    static const char *FN = "ct_gpt_checkpoint_save";
    int64_t values[6] = {c->block_size, c->vocab_size, c->n_layer, c->n_head, c->n_embd, c->padded_vocab_size};
    for (int k = 0; k < 6; k++)
        if (values[k] > INT32_MAX)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s': the config's sizes do not fit llm.c's int32 header", FN, path);
    /* every part of the file in llm.c's order, layer after layer, biases included */
    ct_gpt_config with_bias = *c;
    with_bias.bias = true;
    int64_t count = 0;
    ct_gpt_tensor_spec *specs = ct_gpt_tensor_specs(&with_bias, &count);
    if (!specs) return ct_last_error();
    size_t largest = 0;
    for (int64_t k = 0; k < count; k++)
        if ((size_t)numel_of(&specs[k]) > largest) largest = (size_t)numel_of(&specs[k]);
    float *buf = malloc(largest * sizeof *buf);
    unsigned char header[HEADER_BYTES] = {0};
    put_int32(header, CT_LLMC_CHECKPOINT_MAGIC);
    put_int32(header + 4, CT_LLMC_CHECKPOINT_VERSION);
    for (int k = 0; k < 6; k++) put_int32(header + 8 + 4 * k, values[k]);
    ct_io_atomic_file file;
    ct_status status = buf ? ct_io_atomic_open(path, &file)
                           : ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu floats", FN, largest);
    if (status == CT_OK) {
        status = ct_io_atomic_write(&file, header, sizeof header);
        for (int part = 0; status == CT_OK && part < CT_GPT_LLMC_PARTS; part++)
            for (int64_t k = 0; status == CT_OK && k < count; k++)
                if ((int)specs[k].part == part) status = write_part(&file, sd, &specs[k], buf);
        if (status == CT_OK) status = ct_io_atomic_commit(&file);
        else ct_io_atomic_abandon(&file);
    }
    free(buf);
    free(specs);
    return status;
}

ct_status ct_gpt_llmc_save(const ct_state_dict *sd, const ct_gpt_config *config, const char *path)
{
    ct_api_enter();
    ct_status status = save(sd, config, path);
    ct_api_return(NULL);
    return status;
}
