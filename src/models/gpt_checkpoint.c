/* GPT checkpoints in any of the three formats: the format told from the file's contents, and
 * reading and writing through each format's own file (gpt_llmc_file.c, gpt_safetensors_files.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"
#include "models/gpt_files.h"


static const char *const NAMES[] = {"auto", "nanogpt", "hf", "llmc"};

const char *ct_gpt_format_name(ct_gpt_format format)
{
    return (int)format >= 0 && (int)format < 4 ? NAMES[format] : NULL;
}

ct_status ct_gpt_format_parse(const char *name, ct_gpt_format *out)
{
    if (!name) return ct_null_argument("ct_gpt_format_parse", "name"), ct_last_error();
    if (!out) return ct_null_argument("ct_gpt_format_parse", "out"), ct_last_error();
    for (int k = 0; k < 4; k++)
        if (strcmp(name, NAMES[k]) == 0) {
            *out = (ct_gpt_format)k;
            return CT_OK;
        }
    return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_gpt_format_parse: '%s' is not a GPT file format; the formats are "
                    "nanogpt, hf, llmc (and auto)", name);
}

static ct_status format_of(const char *fn, const char *path, ct_gpt_format *out)
{
    int fd = ct_open_regular_file(fn, path, path);
    if (fd < 0) return ct_last_error();
    unsigned char head[4] = {0};
    ssize_t got = read(fd, head, 4);
    close(fd);
    int32_t magic = (int32_t)((uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24);
    if (got == 4 && magic == CT_LLMC_CHECKPOINT_MAGIC) {
        *out = CT_GPT_FORMAT_LLMC;
        return CT_OK;
    }
    return ct_gpt_safetensors_format(fn, path, out);
}

ct_status ct_gpt_checkpoint_format(const char *path, ct_gpt_format *out)
{
    if (!path) return ct_null_argument("ct_gpt_checkpoint_format", "path"), ct_last_error();
    if (!out) return ct_null_argument("ct_gpt_checkpoint_format", "out"), ct_last_error();
    return format_of("ct_gpt_checkpoint_format", path, out);
}

ct_gpt_load_options ct_gpt_load_options_default(void)
{
    return (ct_gpt_load_options){.format = CT_GPT_FORMAT_AUTO, .n_head = 0, .map_location = NULL};
}

ct_state_dict *ct_gpt_checkpoint_load(const char *path, const ct_gpt_load_options *options, ct_gpt_config *config)
{
    static const char *FN = "ct_gpt_checkpoint_load";
    if (!path) return ct_null_argument(FN, "path");
    ct_gpt_load_options o = options ? *options : ct_gpt_load_options_default();
    if (!ct_gpt_format_name(o.format))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: format %d is not a ct_gpt_format", FN, (int)o.format);
    if (o.n_head < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: n_head is %lld; it must be >= 1 (0: from the file)", FN,
                             (long long)o.n_head);
    if (o.format == CT_GPT_FORMAT_AUTO && format_of(FN, path, &o.format) != CT_OK) return NULL;
    if (o.format != CT_GPT_FORMAT_LLMC) return ct_gpt_safetensors_load(path, &o, config, NULL);
    ct_gpt_config c;
    ct_state_dict *sd = ct_gpt_llmc_load(path, o.map_location, &c);
    if (sd && o.n_head > 0 && o.n_head != c.n_head) {
        ct_state_dict_free(sd);
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: '%s' says n_head %lld; %lld was given", FN, path,
                             (long long)c.n_head, (long long)o.n_head);
    }
    if (sd && config) *config = c;
    return sd;
}

ct_status ct_gpt_checkpoint_save(const ct_state_dict *sd, const ct_gpt_config *config, const char *path,
                                 ct_gpt_format format)
{
    static const char *FN = "ct_gpt_checkpoint_save";
    if (!sd) return ct_null_argument(FN, "sd"), ct_last_error();
    if (!config) return ct_null_argument(FN, "config"), ct_last_error();
    if (!path) return ct_null_argument(FN, "path"), ct_last_error();
    if (format != CT_GPT_FORMAT_NANOGPT && format != CT_GPT_FORMAT_HF && format != CT_GPT_FORMAT_LLMC)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: format %d; give CT_GPT_FORMAT_NANOGPT, _HF or _LLMC", FN, (int)format);
    if (format != CT_GPT_FORMAT_LLMC) return ct_gpt_safetensors_save(sd, config, path, format);
    /* checked first, so that a bad state dict never starts a file */
    ct_state_dict *canonical = ct_gpt_files_canonical(FN, "the state dict", sd, config);
    if (!canonical) return ct_last_error();
    ct_status status = ct_save_check_path(path);
    if (status == CT_OK) status = ct_gpt_llmc_save(canonical, config, path);
    ct_state_dict_free(canonical);
    return status;
}
