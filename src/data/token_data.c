/* Token data for language models: llm.c's token files (256 int32 header, then uint16 tokens) and
 * plain text read as bytes, checked when read; the validation split; writing a token file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "data/data_internal.h"
#include "io/save_internal.h"


static ct_token_data *adopt(uint16_t *tokens, int64_t count, int64_t vocab_size, const char *source)
{
    ct_token_data *data = calloc(1, sizeof *data);
    char *copy = strdup(source);
    if (!data || !copy) {
        free(data);
        free(copy);
        free(tokens);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for token data");
    }
    *data = (ct_token_data){tokens, count, vocab_size, copy};
    return data;
}

/* The whole file into memory (a regular file only: a FIFO or /dev/zero would never end). */
static unsigned char *read_file(const char *fn, const char *path, size_t *size)
{
    int fd = ct_open_regular_file(fn, path, path);
    if (fd < 0) return NULL;
    struct stat info;
    char reason[128];
    if (fstat(fd, &info) != 0) {
        close(fd);
        return ct_error_null(CT_ERR_IO, "%s: cannot read '%s': %s", fn, path, strerror_r(errno, reason, sizeof reason));
    }
    size_t want = (size_t)info.st_size;
    unsigned char *bytes = malloc(want ? want : 1);
    if (!bytes) {
        close(fd);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for '%s' (%zu bytes)", fn, path, want);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, bytes + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int error = n < 0 ? errno : 0;
            close(fd);
            free(bytes);
            if (!error)
                return ct_error_null(CT_ERR_IO, "%s: '%s' ended after %zu of its %zu bytes (changed while read?)",
                                     fn, path, got, want);
            return ct_error_null(CT_ERR_IO, "%s: cannot read '%s': %s", fn, path, strerror_r(error, reason, sizeof reason));
        }
        got += (size_t)n;
    }
    close(fd);
    *size = want;
    return bytes;
}

static int32_t int32_at(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static ct_status check_vocab(const char *fn, int64_t vocab_size, int64_t largest)
{
    if (vocab_size < 1 || vocab_size > largest)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: vocab_size is %lld; it must be in 1..%lld", fn,
                        (long long)vocab_size, (long long)largest);
    return CT_OK;
}

/* The first id >= vocab_size, named with its position. */
static ct_status check_ids(const char *fn, const char *source, const uint16_t *tokens, int64_t count,
                           int64_t vocab_size)
{
    for (int64_t i = 0; i < count; i++)
        if (tokens[i] >= vocab_size)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s: token %lld is id %u, outside the vocabulary "
                            "of %lld (ids 0..%lld); give the model's vocab_size, or a file made for it", fn,
                            source, (long long)i, (unsigned)tokens[i], (long long)vocab_size,
                            (long long)vocab_size - 1);
    return CT_OK;
}

static ct_token_data *load_llmc(const char *path, int64_t vocab_size)
{
    static const char *FN = "ct_token_data_load_llmc";
    if (!path) return ct_null_argument(FN, "path");
    if (vocab_size == 0) vocab_size = 65536;
    if (check_vocab(FN, vocab_size, 65536) != CT_OK) return NULL;
    size_t size = 0;
    unsigned char *bytes = read_file(FN, path, &size);
    if (!bytes) return NULL;
    ct_token_data *data = NULL;
    int32_t magic = size >= 4 ? int32_at(bytes) : 0;
    if (size < CT_TOKEN_FILE_HEADER_BYTES && !(size >= 4 && magic != CT_TOKEN_FILE_MAGIC)) {
        ct_error(CT_ERR_IO, "%s: '%s' is %zu bytes, shorter than the %d-byte header of an llm.c token "
                 "file (256 int32: magic %d, version %d, token count)", FN, path, size,
                 CT_TOKEN_FILE_HEADER_BYTES, CT_TOKEN_FILE_MAGIC, CT_TOKEN_FILE_VERSION);
    } else if (magic != CT_TOKEN_FILE_MAGIC) {
        ct_error(CT_ERR_IO, "%s: '%s' begins with %d, not llm.c's token-file magic %d (a GPT-2 token "
                 "file written by llm.c's or nanoGPT's preparation scripts; a text file is read with "
                 "ct_token_data_load_text)", FN, path, magic, CT_TOKEN_FILE_MAGIC);
    } else if (int32_at(bytes + 4) != CT_TOKEN_FILE_VERSION) {
        ct_error(CT_ERR_IO, "%s: '%s' is token-file version %d; ctorch reads version %d (uint16 tokens)",
                 FN, path, int32_at(bytes + 4), CT_TOKEN_FILE_VERSION);
    } else {
        int64_t count = int32_at(bytes + 8);
        uint64_t expected = CT_TOKEN_FILE_HEADER_BYTES + 2 * (uint64_t)(count > 0 ? count : 0);
        if (count <= 0 || expected != size) {
            ct_error(CT_ERR_IO, "%s: '%s': the header says %lld tokens, which take %llu bytes with the "
                     "header; the file has %zu bytes (%s)", FN, path, (long long)count,
                     (unsigned long long)expected, size,
                     size < expected ? "truncated?" : count <= 0 ? "a token file holds at least one token"
                                                                 : "extra bytes after the tokens");
        } else {
            uint16_t *tokens = malloc((size_t)count * sizeof *tokens);
            if (!tokens) {
                ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld tokens", FN, (long long)count);
            } else {
                const unsigned char *p = bytes + CT_TOKEN_FILE_HEADER_BYTES;
                for (int64_t i = 0; i < count; i++) tokens[i] = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
                char source[512];
                snprintf(source, sizeof source, "'%s'", path);
                if (check_ids(FN, source, tokens, count, vocab_size) != CT_OK) free(tokens);
                else data = adopt(tokens, count, vocab_size, source);
            }
        }
    }
    free(bytes);
    return data;
}

static ct_token_data *load_text(const char *path)
{
    static const char *FN = "ct_token_data_load_text";
    if (!path) return ct_null_argument(FN, "path");
    size_t size = 0;
    unsigned char *bytes = read_file(FN, path, &size);
    if (!bytes) return NULL;
    uint16_t *tokens = size ? malloc(size * sizeof *tokens) : NULL;
    ct_token_data *data = NULL;
    if (size == 0) ct_error(CT_ERR_IO, "%s: '%s' is empty; text data needs at least one byte", FN, path);
    else if (!tokens) ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu tokens", FN, size);
    else {
        for (size_t i = 0; i < size; i++) tokens[i] = bytes[i];
        char source[512];
        snprintf(source, sizeof source, "'%s'", path);
        data = adopt(tokens, (int64_t)size, 256, source);
        tokens = NULL;
    }
    free(tokens);
    free(bytes);
    return data;
}

ct_token_data *ct_token_data_load_llmc(const char *path, int64_t vocab_size) { return load_llmc(path, vocab_size); }
ct_token_data *ct_token_data_load_text(const char *path) { return load_text(path); }

static bool begins_with_magic(const char *path)
{
    int fd = ct_open_regular_fd(path, &(mode_t){0});
    if (fd < 0) return false; /* the loader reports it */
    unsigned char head[4];
    bool magic = read(fd, head, 4) == 4 && int32_at(head) == CT_TOKEN_FILE_MAGIC;
    close(fd);
    return magic;
}

ct_token_data *ct_token_data_load(const char *path, int64_t vocab_size)
{
    if (!path) return ct_null_argument("ct_token_data_load", "path");
    size_t length = strlen(path);
    if ((length >= 4 && strcmp(path + length - 4, ".bin") == 0) || begins_with_magic(path))
        return load_llmc(path, vocab_size);
    if (vocab_size != 0 && vocab_size < 256)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_token_data_load: '%s' is read as text, whose "
                             "bytes need a vocabulary of 256; vocab_size is %lld", path, (long long)vocab_size);
    return load_text(path);
}

ct_token_data *ct_token_data_from_tokens(const int64_t *tokens, int64_t count, int64_t vocab_size)
{
    static const char *FN = "ct_token_data_from_tokens";
    if (!tokens) return ct_null_argument(FN, "tokens");
    if (count < 1) return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: count is %lld; it must be >= 1", FN, (long long)count);
    if (check_vocab(FN, vocab_size, 65536) != CT_OK) return NULL;
    for (int64_t i = 0; i < count; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab_size)
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: tokens[%lld] is %lld; ids must be in 0..%lld",
                                 FN, (long long)i, (long long)tokens[i], (long long)vocab_size - 1);
    uint16_t *copy = malloc((size_t)count * sizeof *copy);
    if (!copy) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld tokens", FN, (long long)count);
    for (int64_t i = 0; i < count; i++) copy[i] = (uint16_t)tokens[i];
    return adopt(copy, count, vocab_size, "the tokens given to ct_token_data_from_tokens");
}

void ct_token_data_free(ct_token_data *data)
{
    if (!data) return;
    free(data->tokens);
    free(data->source);
    free(data);
}

int64_t ct_token_data_size(const ct_token_data *data)
{
    if (!data) return ct_null_argument("ct_token_data_size", "data"), -1;
    return data->count;
}

int64_t ct_token_data_vocab_size(const ct_token_data *data)
{
    if (!data) return ct_null_argument("ct_token_data_vocab_size", "data"), -1;
    return data->vocab_size;
}

ct_status ct_token_data_read(const ct_token_data *data, int64_t start, int64_t count, int64_t *out)
{
    static const char *FN = "ct_token_data_read";
    if (!data) return ct_null_argument(FN, "data"), ct_last_error();
    if (count > 0 && !out) return ct_null_argument(FN, "out"), ct_last_error();
    if (start < 0 || count < 0 || start > data->count || count > data->count - start)
        return ct_error(CT_ERR_INDEX, "%s: tokens [%lld, %lld + %lld) are outside the %lld tokens of %s",
                        FN, (long long)start, (long long)start, (long long)count, (long long)data->count,
                        data->source);
    for (int64_t i = 0; i < count; i++) out[i] = data->tokens[start + i];
    return CT_OK;
}

static ct_token_data *part(const ct_token_data *data, int64_t start, int64_t count, const char *which)
{
    uint16_t *tokens = malloc((size_t)count * sizeof *tokens);
    if (!tokens) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_token_data_split: no host memory for %lld tokens",
                                      (long long)count);
    memcpy(tokens, data->tokens + start, (size_t)count * sizeof *tokens);
    char source[600];
    snprintf(source, sizeof source, "the %s part of %s", which, data->source);
    return adopt(tokens, count, data->vocab_size, source);
}

ct_status ct_token_data_split(const ct_token_data *data, double val_fraction, ct_token_data **train,
                              ct_token_data **val)
{
    static const char *FN = "ct_token_data_split";
    if (train) *train = NULL;
    if (val) *val = NULL;
    if (!data) return ct_null_argument(FN, "data"), ct_last_error();
    if (!train) return ct_null_argument(FN, "train"), ct_last_error();
    if (!val) return ct_null_argument(FN, "val"), ct_last_error();
    if (!(val_fraction >= 0.0 && val_fraction < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: val_fraction is %g; it must be in [0, 1)", FN, val_fraction);
    /* nanoGPT: n_train = int(n * 0.9); the product's rounding error does not take a token away */
    double exact = (1.0 - val_fraction) * (double)data->count;
    int64_t n_train = (int64_t)floor(exact + 1e-9 * fmax(1.0, exact));
    if (n_train > data->count) n_train = data->count;
    int64_t n_val = data->count - n_train;
    if (val_fraction > 0.0 && (n_train < 1 || n_val < 1))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s has %lld tokens; with val_fraction %g the %s part "
                        "would be empty", FN, data->source, (long long)data->count, val_fraction,
                        n_train < 1 ? "training" : "validation");
    ct_token_data *t = part(data, 0, n_train, "training");
    ct_token_data *v = t && n_val > 0 ? part(data, n_train, n_val, "validation") : NULL;
    if (!t || (n_val > 0 && !v)) {
        ct_token_data_free(t);
        return ct_last_error();
    }
    *train = t;
    *val = v;
    return CT_OK;
}

ct_status ct_token_data_save(const ct_token_data *data, const char *path)
{
    static const char *FN = "ct_token_data_save";
    if (!data) return ct_null_argument(FN, "data"), ct_last_error();
    if (!path) return ct_null_argument(FN, "path"), ct_last_error();
    if (data->count > INT32_MAX)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %lld tokens do not fit the int32 count of llm.c's "
                        "header", FN, (long long)data->count);
    size_t bytes = CT_TOKEN_FILE_HEADER_BYTES + 2 * (size_t)data->count;
    unsigned char *image = calloc(1, bytes);
    if (!image) return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu bytes", FN, bytes);
    int32_t header[3] = {CT_TOKEN_FILE_MAGIC, CT_TOKEN_FILE_VERSION, (int32_t)data->count};
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++) image[4 * k + b] = (unsigned char)((uint32_t)header[k] >> (8 * b));
    unsigned char *p = image + CT_TOKEN_FILE_HEADER_BYTES;
    for (int64_t i = 0; i < data->count; i++) {
        p[2 * i] = (unsigned char)(data->tokens[i] & 0xff);
        p[2 * i + 1] = (unsigned char)(data->tokens[i] >> 8);
    }
    ct_io_atomic_file file;
    ct_status status = ct_io_atomic_open(path, &file);
    if (status == CT_OK) {
        status = ct_io_atomic_write(&file, image, bytes);
        if (status == CT_OK) status = ct_io_atomic_commit(&file);
        else ct_io_atomic_abandon(&file);
    }
    free(image);
    return status;
}
