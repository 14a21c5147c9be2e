/* The C twin of a PyTorch tutorial's snippet, error 1: a checkpoint saved on a GPU, loaded where there is none.
 *
 *   torch.save(net.state_dict(), path_state_dict)      # on a machine with a GPU
 *   state_dict_load = torch.load(path_state_dict)      # on a machine without one:
 *   RuntimeError: Attempting to deserialize object on a CUDA device but
 *   torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use
 *   torch.load with map_location=torch.device('cpu') to map your storages to the CPU.
 *
 *   state_dict_load = torch.load(path_state_dict, map_location="cpu")   # the fix
 *
 * What it does:
 * 1. Saves the state dict of a model on the accelerator (opencl:0 if there is one, else the
 *    CPU). ct_save writes the safetensors format, and its header records where each tensor was:
 *    "ctorch.device.0.weight": "opencl:0".
 * 2. Loads it with no map: the tensors go back to the device they were saved from.
 * 3. Makes the file a machine with a CUDA device would have written (the same bytes, but the
 *    header says cuda:0) and loads it with no map: that fails, and ctorch's message names the
 *    tensor, the missing device and a map_location that works.
 * 4. Loads it with map_location "cpu", and with the table "cuda:0=<the accelerator>", into a
 *    fresh model each time: both compute the outputs of the model that was saved.
 * The files go in a temporary folder, removed at the end. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch.h"

/* Reports a failed call and leaves through the clean-up at the end of main. */
#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

/* The model: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)). */
static ct_module *make_model(void)
{
    return ct_sequential((ct_module *[]){ct_linear(3, 4, true), ct_relu_module(), ct_linear(4, 2, true)}, 3);
}

/* The largest |a - b| over the elements, both read on the CPU. */
static ct_status max_abs_difference(const ct_tensor *a, const ct_tensor *b, double *out)
{
    ct_scope_push();
    ct_tensor *a_cpu = ct_to(a, CT_DEVICE_CPU), *b_cpu = ct_to(b, CT_DEVICE_CPU);
    ct_tensor *largest = ct_max(ct_abs(ct_sub(a_cpu, b_cpu)), NULL, 0, false);
    ct_status status = largest ? ct_item(largest, out) : ct_last_error();
    ct_scope_pop();
    return status;
}

/* Copies the safetensors file src to dst with every recorded device `from` replaced by `to`:
 * the file ct_save would have written on a machine where the tensors were on `to`. The format
 * (include/ctorch/io.h): an 8-byte little-endian header length, the JSON header padded with
 * spaces to a multiple of 8, then the tensors' bytes. Returns how many devices it replaced, or
 * -1 with a message on stderr. */
static int rewrite_saved_device(const char *src, const char *dst, const char *from, const char *to)
{
    int replaced = -1;
    errno = 0;
    unsigned char *file = NULL;
    char *header = NULL, *rewritten = NULL;
    FILE *in = fopen(src, "rb"), *out = NULL;
    long size = -1;
    if (!in || fseek(in, 0, SEEK_END) != 0 || (size = ftell(in)) < 8 || fseek(in, 0, SEEK_SET) != 0 ||
        !(file = malloc((size_t)size)) || fread(file, 1, (size_t)size, in) != (size_t)size) {
        fprintf(stderr, "error: cannot read '%s': %s\n", src, errno ? strerror(errno) : "too short");
        goto done;
    }
    uint64_t length = 0;
    for (int i = 0; i < 8; i++) length |= (uint64_t)file[i] << (8 * i);
    if (length > (uint64_t)size - 8) {
        fprintf(stderr, "error: '%s' has a header length past its end\n", src);
        goto done;
    }

    /* The header as a C string, and the quoted device names: "opencl:0" -> "cuda:0". */
    char quoted_from[CT_DEVICE_STRING_MAX + 2], quoted_to[CT_DEVICE_STRING_MAX + 2];
    snprintf(quoted_from, sizeof quoted_from, "\"%s\"", from);
    snprintf(quoted_to, sizeof quoted_to, "\"%s\"", to);
    size_t from_len = strlen(quoted_from), to_len = strlen(quoted_to);
    header = malloc(length + 1);
    rewritten = malloc(length + (length / from_len + 1) * to_len + 8); /* room for every case */
    if (!header || !rewritten) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    memcpy(header, file + 8, length);
    header[length] = '\0';
    size_t new_length = 0;
    int count = 0;
    for (const char *p = header;;) {
        const char *hit = strstr(p, quoted_from);
        size_t keep = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(rewritten + new_length, p, keep);
        new_length += keep;
        if (!hit) break;
        memcpy(rewritten + new_length, quoted_to, to_len);
        new_length += to_len;
        p = hit + from_len;
        count++;
    }
    while (new_length % 8 != 0) rewritten[new_length++] = ' ';

    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((uint64_t)new_length >> (8 * i));
    size_t data_bytes = (size_t)size - 8 - (size_t)length;
    if (!(out = fopen(dst, "wb")) || fwrite(prefix, 1, 8, out) != 8 ||
        fwrite(rewritten, 1, new_length, out) != new_length ||
        fwrite(file + 8 + length, 1, data_bytes, out) != data_bytes) {
        fprintf(stderr, "error: cannot write '%s': %s\n", dst, strerror(errno));
        goto done;
    }
    replaced = count;

done:
    if (in) fclose(in);
    if (out && fclose(out) != 0 && replaced >= 0) {
        fprintf(stderr, "error: cannot write '%s': %s\n", dst, strerror(errno));
        replaced = -1;
    }
    free(file);
    free(header);
    free(rewritten);
    return replaced;
}

int main(void)
{
    int exit_code = 1;
    ct_module *model = NULL, *fresh = NULL;
    ct_state_dict *sd = NULL, *loaded = NULL;
    char dir[512] = "", path[600] = "", cuda_path[600] = "";
    ct_scope_push(); /* the tensors of main are released by the pop at the end */

    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ctorch-map-location-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "error: cannot make a temporary folder from '%s': %s\n", dir, strerror(errno));
        dir[0] = '\0';
        goto done;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(cuda_path, sizeof cuda_path, "%s/model_saved_on_cuda.safetensors", dir);

    ct_device device = ct_device_count(CT_OPENCL) > 0 ? (ct_device){CT_OPENCL, 0} : CT_DEVICE_CPU;
    /* A device this machine lacks: cuda:0 here, the next CUDA index where there are some. */
    ct_device missing = {CT_CUDA, ct_device_count(CT_CUDA)};
    char name[CT_DEVICE_STRING_MAX], missing_name[CT_DEVICE_STRING_MAX];
    ct_device_format(device, name, sizeof name);
    ct_device_format(missing, missing_name, sizeof missing_name);

    /* 1. The model on the accelerator, its outputs, and its state dict saved. */
    ct_manual_seed(3);
    model = make_model();
    CHECK(model);
    CHECK(ct_module_to(model, device) == CT_OK);
    int64_t shape[2] = {5, 3};
    ct_tensor *inputs = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *expected = ct_module_forward(model, ct_to(inputs, device));
    CHECK(expected);
    sd = ct_module_state_dict(model, NULL);
    CHECK(sd);
    CHECK(ct_save(sd, path) == CT_OK);
    printf("saved the model's state dict from %s to %s\n", name, path);

    /* 2. With no map, every tensor goes back to the device it was saved from. */
    loaded = ct_load(path, NULL);
    CHECK(loaded);
    for (int64_t i = 0; i < ct_state_dict_count(loaded); i++) {
        ct_tensor *t = ct_state_dict_tensor_at(loaded, i);
        CHECK(t);
        char key[128];
        snprintf(key, sizeof key, "ctorch.device.%s", ct_state_dict_name_at(loaded, i));
        printf("  %-8s saved from %-8s loaded onto %s\n", ct_state_dict_name_at(loaded, i),
               ct_state_dict_metadata(loaded, key), ct_device_format(ct_tensor_device(t), name, sizeof name));
    }
    ct_state_dict_free(loaded);
    loaded = NULL;

    /* 3. The same checkpoint as a machine with a CUDA device would have written it. */
    int replaced = rewrite_saved_device(path, cuda_path, ct_device_format(device, name, sizeof name),
                                        missing_name);
    if (replaced != (int)ct_state_dict_count(sd)) {
        if (replaced >= 0) fprintf(stderr, "error: %d devices rewritten, expected one per tensor\n", replaced);
        goto done;
    }
    printf("\nthe same checkpoint, as saved on %s: %s\n", missing_name, cuda_path);
    loaded = ct_load(cuda_path, NULL);
    if (loaded || ct_last_error() != CT_ERR_DEVICE) {
        fprintf(stderr, "error: loading tensors saved on %s with no map should fail with CT_ERR_DEVICE (%s)\n",
                missing_name, loaded ? "it loaded" : ct_last_error_message());
        goto done;
    }
    printf("ct_load(path, NULL) fails:\n  %s: %s\n", ct_status_name(ct_last_error()), ct_last_error_message());

    /* 4. The fix: a map_location, onto the CPU or through a table onto the accelerator. */
    char table[2 * CT_DEVICE_STRING_MAX + 2];
    snprintf(table, sizeof table, "%s=%s", missing_name, ct_device_format(device, name, sizeof name));
    const char *maps[2] = {"cpu", table};
    for (int m = 0; m < 2; m++) {
        loaded = ct_load(cuda_path, maps[m]);
        CHECK(loaded);
        ct_tensor *weight = ct_state_dict_get(loaded, "0.weight");
        CHECK(weight);
        ct_device target = ct_tensor_device(weight);
        printf("\nct_load(path, \"%s\") puts the tensors on %s\n", maps[m], ct_device_format(target, name, sizeof name));

        /* A fresh model (other initial weights) on that device takes the loaded ones. */
        ct_manual_seed(100 + (uint64_t)m);
        fresh = make_model();
        CHECK(fresh);
        CHECK(ct_module_to(fresh, target) == CT_OK);
        ct_tensor *inputs_there = ct_to(inputs, target);
        double before = 0, difference = 0;
        ct_tensor *outputs = ct_module_forward(fresh, inputs_there);
        CHECK(outputs && max_abs_difference(outputs, expected, &before) == CT_OK);
        ct_load_report report;
        CHECK(ct_module_load_state_dict(fresh, loaded, true, &report) == CT_OK);
        outputs = ct_module_forward(fresh, inputs_there);
        CHECK(outputs && max_abs_difference(outputs, expected, &difference) == CT_OK);
        printf("a fresh model on %s: its outputs differ from the saved model's by %.2g; after loading "
               "%lld tensors, by %.2g\n", name, before, (long long)report.loaded, difference);
        if (!(difference <= 1e-5)) {
            fprintf(stderr, "error: the outputs should be the same (up to rounding)\n");
            goto done;
        }
        ct_module_release(fresh);
        ct_state_dict_free(loaded);
        fresh = NULL;
        loaded = NULL;
    }
    exit_code = 0;

done:
    ct_module_release(fresh);
    ct_module_release(model);
    ct_state_dict_free(loaded);
    ct_state_dict_free(sd);
    ct_scope_pop();
    if (dir[0]) {
        remove(path);
        remove(cuda_path);
        if (rmdir(dir) != 0) fprintf(stderr, "warning: cannot remove '%s': %s\n", dir, strerror(errno));
    }
    return exit_code;
}
