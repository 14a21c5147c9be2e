/* The GPT's token data: the library's token files or text (ctorch/data.h), split into training
 * and validation tokens, and the shipped Shakespeare. */
#include <stdio.h>
#include <string.h>

#include "train_gpt.h"

void ct_gpt_tokens_free(ct_gpt_tokens *tokens)
{
    if (!tokens) return;
    ct_token_data_free(tokens->train);
    ct_token_data_free(tokens->val);
    *tokens = (ct_gpt_tokens){0};
}

bool ct_gpt_is_token_file(const char *path)
{
    size_t length = strlen(path);
    if (length >= 4 && strcmp(path + length - 4, ".bin") == 0) return true;
    FILE *f = fopen(path, "rb");
    unsigned char magic[4] = {0};
    bool read = f && fread(magic, 1, 4, f) == 4;
    if (f) fclose(f);
    int32_t value = (int32_t)((uint32_t)magic[0] | (uint32_t)magic[1] << 8 | (uint32_t)magic[2] << 16 |
                              (uint32_t)magic[3] << 24);
    return read && value == CT_TOKEN_FILE_MAGIC;
}

ct_status ct_gpt_tokens_load(const char *path, int64_t vocab_size, double val_fraction, ct_gpt_tokens *out)
{
    *out = (ct_gpt_tokens){.is_text = !ct_gpt_is_token_file(path)};
    if (vocab_size == 0) vocab_size = out->is_text ? CT_GPT_TEXT_VOCAB : CT_GPT2_VOCAB;
    ct_token_data *all = ct_token_data_load(path, out->is_text && vocab_size >= 256 ? 0 : vocab_size);
    if (!all) return ct_train_fail_library("--data");
    out->count = ct_token_data_size(all);
    ct_status status = ct_token_data_split(all, val_fraction, &out->train, &out->val);
    ct_token_data_free(all);
    if (status != CT_OK) {
        ct_gpt_tokens_free(out);
        return ct_train_fail_library("--val-fraction");
    }
    return CT_OK;
}

ct_status ct_gpt_tokens_load_val(const char *path, int64_t vocab_size, ct_gpt_tokens *tokens)
{
    bool is_text = !ct_gpt_is_token_file(path);
    if (vocab_size == 0) vocab_size = is_text ? CT_GPT_TEXT_VOCAB : CT_GPT2_VOCAB;
    ct_token_data *val = ct_token_data_load(path, is_text && vocab_size >= 256 ? 0 : vocab_size);
    if (!val) return ct_train_fail_library("--val-data");
    ct_token_data_free(tokens->val);
    tokens->val = val;
    tokens->count = ct_token_data_size(tokens->train) + ct_token_data_size(val);
    return CT_OK;
}

const char *ct_gpt_default_text_path(void)
{
    const char *path = ct_default_text_path();
    if (!path) ct_train_fail_library("the shipped Shakespeare (give --data FILE)");
    return path;
}
