/* The GPT's token data: a file read whole onto the host (llm.c's token format, or text as bytes),
 * the validation split at its end, and the windows of each step, computed from the step's number
 * alone so that a resumed run, a run under DDP and a run with gradient accumulation take the same
 * windows as one process that never stopped. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train_gpt.h"

enum { HEADER_INTS = 256 };

void ct_gpt_tokens_free(ct_gpt_tokens *tokens)
{
    if (!tokens) return;
    free(tokens->ids);
    *tokens = (ct_gpt_tokens){0};
}

static ct_status read_token_file(FILE *f, const char *path, long size, ct_gpt_tokens *out)
{
    int32_t header[HEADER_INTS];
    if (size < (long)sizeof header || fread(header, sizeof header, 1, f) != 1)
        return ct_train_fail(CT_ERR_IO, "--data '%s': a token file's header is %zu bytes; the file has %ld",
                             path, sizeof header, size);
    if (header[1] != 1)
        return ct_train_fail(CT_ERR_IO, "--data '%s': token file version %d; llm.c's format is version 1",
                             path, (int)header[1]);
    int64_t count = header[2];
    int64_t held = (size - (long)sizeof header) / 2;
    if (count <= 0 || count != held)
        return ct_train_fail(CT_ERR_IO, "--data '%s': the header counts %lld tokens but the file holds %lld",
                             path, (long long)count, (long long)held);
    out->ids = malloc((size_t)count * sizeof *out->ids);
    if (!out->ids) return ct_train_fail(CT_ERR_OUT_OF_MEMORY, "--data '%s': no memory for %lld tokens", path,
                                        (long long)count);
    if (fread(out->ids, sizeof *out->ids, (size_t)count, f) != (size_t)count)
        return ct_train_fail(CT_ERR_IO, "--data '%s': reading its tokens failed", path);
    out->count = count;
    out->vocab_size = CT_GPT2_VOCAB;
    return CT_OK;
}

static ct_status read_text(FILE *f, const char *path, long size, ct_gpt_tokens *out)
{
    unsigned char *bytes = malloc(size > 0 ? (size_t)size : 1);
    out->ids = malloc(size > 0 ? (size_t)size * sizeof *out->ids : 1);
    if (!bytes || !out->ids) {
        free(bytes);
        return ct_train_fail(CT_ERR_OUT_OF_MEMORY, "--data '%s': no memory for %ld bytes", path, size);
    }
    size_t got = fread(bytes, 1, (size_t)size, f);
    for (size_t i = 0; i < got; i++) out->ids[i] = bytes[i];
    free(bytes);
    if (got != (size_t)size) return ct_train_fail(CT_ERR_IO, "--data '%s': reading it failed", path);
    out->count = size;
    out->vocab_size = CT_GPT_TEXT_VOCAB;
    out->is_text = true;
    return CT_OK;
}

ct_status ct_gpt_tokens_load(const char *path, ct_gpt_tokens *out)
{
    *out = (ct_gpt_tokens){0};
    FILE *f = fopen(path, "rb");
    if (!f) return ct_train_fail(CT_ERR_IO, "--data '%s': cannot be opened", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    int32_t magic = 0;
    bool token_file = size >= 4 && fread(&magic, 4, 1, f) == 1 && magic == CT_GPT_TOKENS_MAGIC;
    rewind(f);
    /* A .bin that is not llm.c's tokens is a mistake, not text. */
    const char *dot = strrchr(path, '.');
    if (!token_file && dot && strcmp(dot, ".bin") == 0) {
        fclose(f);
        return ct_train_fail(CT_ERR_IO, "--data '%s': magic %d; llm.c's token files start with %d (text files "
                             "are read as bytes, but not with the extension .bin)", path, (int)magic,
                             CT_GPT_TOKENS_MAGIC);
    }
    ct_status status = token_file ? read_token_file(f, path, size, out) : read_text(f, path, size, out);
    fclose(f);
    if (status != CT_OK) {
        ct_gpt_tokens_free(out);
        return status;
    }
    for (int64_t i = 0; i < out->count; i++)
        if (out->ids[i] > out->max_id) out->max_id = out->ids[i];
    out->train_count = out->count;
    return CT_OK;
}

ct_status ct_gpt_tokens_split(ct_gpt_tokens *tokens, double val_fraction, int64_t seq_len)
{
    int64_t val = (int64_t)((double)tokens->count * val_fraction);
    int64_t train = tokens->count - val;
    if (train < seq_len + 1 || (val_fraction > 0 && val < seq_len + 1))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--data holds %lld tokens: %lld to train on and %lld to "
                             "validate (--val-fraction %g); each part needs a window of --seq-len + 1 = %lld",
                             (long long)tokens->count, (long long)train, (long long)val, val_fraction,
                             (long long)seq_len + 1);
    tokens->train_count = train;
    return CT_OK;
}

const char *ct_gpt_default_text_path(void)
{
    static _Thread_local char path[PATH_MAX];
    const char *digits = ct_default_dataset_path();
    if (!digits) return NULL;
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", digits);
    snprintf(path, sizeof path, "%s/tinyshakespeare.txt", dirname(folder));
    struct stat st;
    if (stat(path, &st) != 0) {
        ct_train_fail(CT_ERR_IO, "the shipped Shakespeare is not at %s (give --data FILE)", path);
        return NULL;
    }
    return path;
}

/* splitmix64's finaliser: the window offsets of a step from (seed, step, window) alone. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void fill(const ct_gpt_tokens *tokens, int64_t start, int64_t seq_len, int64_t *x, int64_t *y)
{
    for (int64_t t = 0; t < seq_len; t++) {
        x[t] = tokens->ids[start + t];
        y[t] = tokens->ids[start + t + 1];
    }
}

void ct_gpt_train_windows(const ct_gpt_tokens *tokens, const ct_gpt_window_spec *spec, int64_t step, int64_t micro,
                          int64_t *x, int64_t *y)
{
    int64_t T = spec->seq_len, global_rows = spec->micro_steps * spec->world * spec->rows;
    int64_t first = micro * spec->world * spec->rows + spec->rank * spec->rows;
    int64_t span = tokens->train_count - T; /* window starts in [0, span) */
    if (spec->order == CT_GPT_ORDER_RANDOM) {
        for (int64_t b = 0; b < spec->rows; b++) {
            uint64_t h = mix(mix(spec->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(step + 1)) + (uint64_t)(first + b));
            fill(tokens, (int64_t)(h % (uint64_t)span), T, x + b * T, y + b * T);
        }
        return;
    }
    /* llm.c: position p, batch [p, p + rows*T + 1), then p += rows*T, back to 0 when the next does not fit */
    int64_t advance = global_rows * T, position = 0;
    if (advance + 1 <= tokens->train_count) {
        int64_t per_pass = (tokens->train_count - 1) / advance; /* steps that fit before wrapping */
        position = (step % per_pass) * advance;
    }
    for (int64_t b = 0; b < spec->rows; b++) {
        int64_t start = (position + (first + b) * T) % span;
        fill(tokens, start, T, x + b * T, y + b * T);
    }
}

void ct_gpt_val_windows(const ct_gpt_tokens *tokens, int64_t rows, int64_t seq_len, int64_t batch, int64_t *x,
                        int64_t *y)
{
    int64_t base = tokens->train_count, span = tokens->count - base - seq_len;
    if (span <= 0) { /* no split: the training tokens validate */
        base = 0;
        span = tokens->count - seq_len;
    }
    for (int64_t b = 0; b < rows; b++) {
        int64_t start = base + ((batch * rows + b) * seq_len) % span;
        fill(tokens, start, seq_len, x + b * seq_len, y + b * seq_len);
    }
}
