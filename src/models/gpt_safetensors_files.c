/* A GPT in safetensors: nanoGPT's names with the config in __metadata__, or Hugging Face's GPT-2
 * model.safetensors (no "transformer." prefix, Conv1D weights [in, out]). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"
#include "io/io_internal.h"
#include "models/gpt_files.h"
#include "tensor/tensor_internal.h"

static const char *FN_LOAD = "ct_gpt_checkpoint_load";

/* ---- the file's header, for telling the two apart ---- */

/* The parsed JSON header of a safetensors file, or NULL with CT_ERR_IO naming the file. */
static cJSON *read_header(const char *fn, const char *path)
{
    int fd = ct_open_regular_file(fn, path, path);
    if (fd < 0) return NULL;
    unsigned char length_bytes[8];
    cJSON *json = NULL;
    uint64_t length = 0;
    if (read(fd, length_bytes, 8) == 8)
        for (int b = 7; b >= 0; b--) length = length << 8 | length_bytes[b];
    char *text = length > 0 && length <= CT_IO_HEADER_MAX ? malloc((size_t)length + 1) : NULL;
    if (text && read(fd, text, (size_t)length) == (ssize_t)length) {
        text[length] = '\0';
        json = cJSON_Parse(text);
    }
    free(text);
    close(fd);
    if (!json || !cJSON_IsObject(json)) {
        cJSON_Delete(json);
        return ct_error_null(CT_ERR_IO, "%s: '%s' is neither an llm.c checkpoint (magic %d) nor a safetensors "
                             "file (8-byte header length, then a JSON header)", fn, path, CT_LLMC_CHECKPOINT_MAGIC);
    }
    return json;
}

static bool shape_of(const cJSON *json, const char *name, int64_t shape[2])
{
    const cJSON *entry = cJSON_GetObjectItemCaseSensitive(json, name);
    const cJSON *dims = entry ? cJSON_GetObjectItemCaseSensitive(entry, "shape") : NULL;
    if (!cJSON_IsArray(dims) || cJSON_GetArraySize(dims) != 2) return false;
    for (int d = 0; d < 2; d++) shape[d] = (int64_t)cJSON_GetArrayItem(dims, d)->valuedouble;
    return true;
}

/* Hugging Face's c_attn is [C, 3C], nanoGPT's [3C, C]; a file without "transformer." is HF's. */
static ct_gpt_format format_of_header(const cJSON *json)
{
    int64_t shape[2];
    if (shape_of(json, "transformer.h.0.attn.c_attn.weight", shape))
        return shape[1] == 3 * shape[0] ? CT_GPT_FORMAT_HF : CT_GPT_FORMAT_NANOGPT;
    if (shape_of(json, "_orig_mod.transformer.h.0.attn.c_attn.weight", shape)) return CT_GPT_FORMAT_NANOGPT;
    if (cJSON_GetObjectItemCaseSensitive(json, "wte.weight") || shape_of(json, "h.0.attn.c_attn.weight", shape))
        return CT_GPT_FORMAT_HF;
    if (cJSON_GetObjectItemCaseSensitive(json, "transformer.wte.weight")) return CT_GPT_FORMAT_NANOGPT;
    return CT_GPT_FORMAT_AUTO;
}

ct_status ct_gpt_safetensors_format(const char *fn, const char *path, ct_gpt_format *out)
{
    cJSON *json = read_header(fn, path);
    if (!json) return ct_last_error();
    *out = format_of_header(json);
    cJSON_Delete(json);
    if (*out == CT_GPT_FORMAT_AUTO)
        return ct_error(CT_ERR_IO, "%s: '%s' is a safetensors file but not a GPT's: it has neither "
                        "transformer.wte.weight (nanoGPT) nor wte.weight (Hugging Face)", fn, path);
    return CT_OK;
}

/* ---- reading ---- */

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Buffers that are not parameters: the causal mask of older files ([1, 1, T, T]) and masked_bias. */
static ct_status drop_buffers(ct_state_dict *sd)
{
    for (int64_t i = ct_state_dict_count(sd) - 1; i >= 0; i--) {
        const char *name = ct_state_dict_name_at(sd, i);
        const ct_tensor *t = ct_state_dict_tensor_borrowed(sd, i);
        if ((ends_with(name, ".attn.bias") && t->ndim == 4) || ends_with(name, ".attn.masked_bias")) {
            ct_status status = ct_state_dict_remove(sd, name);
            if (status != CT_OK) return status;
        }
    }
    return CT_OK;
}

/* Hugging Face's names get nanoGPT's prefix and the Conv1D weights nanoGPT's [out, in]: a new
 * state dict, with the metadata. */
static ct_state_dict *from_hf(const ct_state_dict *sd)
{
    ct_state_dict *out = ct_state_dict_create();
    ct_status status = out ? CT_OK : ct_last_error();
    char name[1024];
    for (int64_t i = 0; status == CT_OK && i < ct_state_dict_count(sd); i++) {
        const char *given = ct_state_dict_name_at(sd, i);
        bool prefixed = strncmp(given, "transformer.", 12) == 0 || strcmp(given, "lm_head.weight") == 0;
        snprintf(name, sizeof name, "%s%s", prefixed ? "" : "transformer.", given);
        const ct_tensor *t = ct_state_dict_tensor_borrowed(sd, i);
        bool conv1d = t->ndim == 2 && (ends_with(name, ".attn.c_attn.weight") || ends_with(name, ".attn.c_proj.weight") ||
                                       ends_with(name, ".mlp.c_fc.weight") || ends_with(name, ".mlp.c_proj.weight"));
        ct_tensor *view = conv1d ? ct_transpose(t, 0, 1) : NULL;
        ct_tensor *turned = conv1d ? ct_contiguous(view) : ct_retain((ct_tensor *)t);
        ct_release(view);
        status = turned ? ct_state_dict_add(out, name, turned) : ct_last_error();
        ct_release(turned);
    }
    for (int64_t k = 0; status == CT_OK && k < ct_state_dict_metadata_count(sd); k++)
        if (!ct_io_metadata_key_is_reserved(ct_state_dict_metadata_key_at(sd, k)))
            status = ct_state_dict_set_metadata(out, ct_state_dict_metadata_key_at(sd, k),
                                                ct_state_dict_metadata_value_at(sd, k));
    if (status != CT_OK) {
        ct_state_dict_free(out);
        return NULL;
    }
    return out;
}

static bool metadata_int(const ct_state_dict *sd, const char *key, int64_t *out)
{
    const char *text = ct_state_dict_metadata(sd, key);
    if (!text) return false;
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end) return false;
    *out = v;
    return true;
}

/* n_head from config.json beside a Hugging Face file (0 when there is none). */
static int64_t n_head_beside(const char *path)
{
    const char *slash = strrchr(path, '/');
    char config_path[4096];
    snprintf(config_path, sizeof config_path, "%.*sconfig.json", slash ? (int)(slash - path + 1) : 0, path);
    FILE *f = ct_path_not_regular(config_path) ? NULL : fopen(config_path, "rb");
    if (!f) return 0;
    char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *json = cJSON_Parse(text);
    const cJSON *heads = json ? cJSON_GetObjectItemCaseSensitive(json, "n_head") : NULL;
    int64_t value = cJSON_IsNumber(heads) ? (int64_t)heads->valuedouble : 0;
    cJSON_Delete(json);
    return value;
}

static ct_status config_of(const char *source, const char *path, const ct_state_dict *sd, ct_gpt_format format,
                           int64_t given_heads, ct_gpt_config *out)
{
    int64_t heads = 0, value = 0;
    bool said = metadata_int(sd, "n_head", &heads);
    if (!said && format == CT_GPT_FORMAT_HF) said = (heads = n_head_beside(path)) > 0;
    if (said && given_heads > 0 && heads != given_heads)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s says n_head %lld; %lld was given", FN_LOAD, source,
                        (long long)heads, (long long)given_heads);
    if (!said) heads = given_heads;
    ct_status status = ct_gpt_files_infer_config(FN_LOAD, source, sd, heads, out);
    if (status != CT_OK) return status;
    /* what the shapes cannot say */
    if (metadata_int(sd, "unpadded_vocab_size", &value)) out->vocab_size = value;
    const char *dropout = ct_state_dict_metadata(sd, "dropout");
    if (dropout) out->dropout = strtod(dropout, NULL);
    /* the rest of the metadata must agree with the shapes: the check names a tensor that does not */
    if (metadata_int(sd, "n_layer", &value) && value != out->n_layer)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s says n_layer %lld in its metadata but has the blocks "
                        "transformer.h.0 .. %lld", FN_LOAD, source, (long long)value, (long long)out->n_layer - 1);
    if (metadata_int(sd, "n_embd", &value)) out->n_embd = value;
    if (metadata_int(sd, "block_size", &value)) out->block_size = value;
    if (metadata_int(sd, "vocab_size", &value)) out->padded_vocab_size = value;
    const char *bias = ct_state_dict_metadata(sd, "bias");
    if (bias) out->bias = strcmp(bias, "True") == 0 || strcmp(bias, "true") == 0 || strcmp(bias, "1") == 0;
    return CT_OK;
}

static ct_state_dict *load(const char *path, const ct_gpt_load_options *o, ct_gpt_config *config, ct_gpt_format *found)
{
    ct_gpt_format format = o->format;
    if (format == CT_GPT_FORMAT_AUTO && ct_gpt_safetensors_format(FN_LOAD, path, &format) != CT_OK) return NULL;
    ct_state_dict *sd = ct_load(path, o->map_location);
    if (!sd) return NULL;
    char source[600];
    snprintf(source, sizeof source, "'%s' (%s)", path, format == CT_GPT_FORMAT_HF ? "Hugging Face's names" : "nanoGPT's names");
    ct_gpt_config c;
    ct_state_dict *out = NULL;
    ct_status status = ct_state_dict_strip_prefix(sd, "_orig_mod."); /* torch.compile's */
    if (status == CT_OK) status = drop_buffers(sd);
    if (status == CT_OK && format == CT_GPT_FORMAT_HF) {
        ct_state_dict *named = from_hf(sd);
        ct_state_dict_free(sd);
        sd = named;
        if (!sd) status = ct_last_error();
    }
    if (status == CT_OK) status = config_of(source, path, sd, format, o->n_head, &c);
    if (status == CT_OK) out = ct_gpt_files_canonical(FN_LOAD, source, sd, &c);
    ct_state_dict_free(sd);
    if (out && config) *config = c;
    if (out && found) *found = format;
    return out;
}

ct_state_dict *ct_gpt_safetensors_load(const char *path, const ct_gpt_load_options *options,
                                       ct_gpt_config *config, ct_gpt_format *found)
{
    ct_api_enter();
    ct_state_dict *sd = load(path, options, config, found);
    ct_api_return(NULL);
    return sd;
}

/* ---- writing ---- */

static ct_status put_config(ct_state_dict *sd, const ct_gpt_config *c)
{
    char text[64];
    struct { const char *key; int64_t value; } ints[] = {
        {"block_size", c->block_size}, {"vocab_size", c->padded_vocab_size}, {"n_layer", c->n_layer},
        {"n_head", c->n_head}, {"n_embd", c->n_embd}, {"unpadded_vocab_size", c->vocab_size}};
    ct_status status = ct_state_dict_set_metadata(sd, "format", "pt");
    for (size_t k = 0; status == CT_OK && k < sizeof ints / sizeof ints[0]; k++) {
        snprintf(text, sizeof text, "%" PRId64, ints[k].value);
        status = ct_state_dict_set_metadata(sd, ints[k].key, text);
    }
    snprintf(text, sizeof text, "%.17g", c->dropout);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "dropout", text);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "bias", c->bias ? "True" : "False");
    return status;
}

/* Hugging Face's: without the prefix and lm_head.weight, the Conv1D weights [in, out]. */
static ct_state_dict *to_hf(const ct_state_dict *sd, const ct_gpt_config *c)
{
    int64_t count = 0;
    ct_gpt_tensor_spec *specs = ct_gpt_tensor_specs(c, &count);
    ct_state_dict *out = specs ? ct_state_dict_create() : NULL;
    ct_status status = out ? CT_OK : ct_last_error();
    for (int64_t k = 0; status == CT_OK && k < count; k++) {
        if (specs[k].part == CT_GPT_LM_HEAD) continue;
        ct_tensor *t = ct_state_dict_get(sd, specs[k].name);
        ct_tensor *stored = t && specs[k].conv1d ? ct_transpose(t, 0, 1) : ct_retain(t);
        status = stored ? ct_state_dict_add(out, specs[k].name + strlen("transformer."), stored) : ct_last_error();
        ct_release(stored);
        ct_release(t);
    }
    for (int64_t k = 0; status == CT_OK && k < ct_state_dict_metadata_count(sd); k++)
        if (!ct_io_metadata_key_is_reserved(ct_state_dict_metadata_key_at(sd, k)))
            status = ct_state_dict_set_metadata(out, ct_state_dict_metadata_key_at(sd, k),
                                                ct_state_dict_metadata_value_at(sd, k));
    free(specs);
    if (status != CT_OK) {
        ct_state_dict_free(out);
        return NULL;
    }
    return out;
}

static ct_status save(const ct_state_dict *sd, const ct_gpt_config *c, const char *path, ct_gpt_format format)
{
    ct_state_dict *copy = ct_gpt_files_canonical("ct_gpt_checkpoint_save", "the state dict", sd, c);
    if (!copy) return ct_last_error();
    ct_status status = put_config(copy, c);
    ct_state_dict *file = copy;
    if (status == CT_OK && format == CT_GPT_FORMAT_HF) {
        file = to_hf(copy, c);
        if (!file) status = ct_last_error();
    }
    if (status == CT_OK) status = ct_save(file, path);
    if (file != copy) ct_state_dict_free(file);
    ct_state_dict_free(copy);
    return status;
}

ct_status ct_gpt_safetensors_save(const ct_state_dict *sd, const ct_gpt_config *config, const char *path,
                                  ct_gpt_format format)
{
    ct_api_enter();
    ct_status status = save(sd, config, path, format);
    ct_api_return(NULL);
    return status;
}
