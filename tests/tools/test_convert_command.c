/* `ctorch convert IN OUT`: llm.c's .bin -> nanoGPT's safetensors -> .bin gives the same bytes,
 * through Hugging Face's file too; the output's format from its extension or --format; a
 * nanoGPT-named file it writes loads into nanoGPT's own GPT class in PyTorch
 * (tests/models/scripts/check_nanogpt_file.py; skipped, saying so, where PyTorch is absent). */
#include <stdlib.h>
#include <unistd.h>

#include "../models/gpt_files_test.h"
#include "tool_test.h"

static int setup(void **state) { (void)state; gpt_test_setup(); return 0; }
static int teardown(void **state) { (void)state; gpt_test_cleanup(); return 0; }

static char *convert(const char *args, int expected_status)
{
    int status = -1;
    char *out = run_tool(args, &status);
    if (status != expected_status) fail_msg("ctorch %s exited %d, not %d:\n%s", args, status, expected_status, out);
    return out;
}

static void llmc_to_safetensors_and_back_gives_the_same_bytes(void **state)
{
    (void)state;
    ct_gpt_config c = gpt_test_config(true);
    ct_state_dict *sd = gpt_test_state_dict(&c, 11);
    char bin[300], nano[300], hf[300], back[300], args[1400];
    snprintf(bin, sizeof bin, "%s", gpt_test_path("gpt2_tiny.bin", 0));
    snprintf(nano, sizeof nano, "%s", gpt_test_path("gpt2_tiny.safetensors", 1));
    snprintf(hf, sizeof hf, "%s", gpt_test_path("model.safetensors", 2));
    snprintf(back, sizeof back, "%s", gpt_test_path("back.bin", 3));
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, bin, CT_GPT_FORMAT_LLMC), CT_OK);

    snprintf(args, sizeof args, "convert '%s' '%s'", bin, nano);
    char *out = convert(args, 0);
    assert_non_null(strstr(out, "(llmc) -> "));
    assert_non_null(strstr(out, "(nanogpt): GPT of 2 layers, 2 heads, 8 channels, vocabulary 50 (padded 64), block 16"));
    free(out);
    snprintf(args, sizeof args, "convert '%s' '%s'", nano, back);
    free(convert(args, 0));
    gpt_test_assert_same_bytes(bin, back);

    snprintf(args, sizeof args, "convert '%s' '%s' --format hf", bin, hf);
    free(convert(args, 0));
    ct_gpt_format format;
    assert_int_equal(ct_gpt_checkpoint_format(hf, &format), CT_OK);
    assert_int_equal(format, CT_GPT_FORMAT_HF);
    unlink(back);
    snprintf(args, sizeof args, "convert '%s' '%s'", hf, back);
    free(convert(args, 0));
    /* Hugging Face's file does not know the unpadded vocabulary: the header's V is its rows */
    ct_gpt_config read;
    ct_state_dict *from_back = ct_gpt_checkpoint_load(back, NULL, &read);
    assert_non_null(from_back);
    assert_int_equal(read.vocab_size, 50); /* the metadata ctorch wrote says it */
    gpt_test_assert_same(from_back, sd);
    gpt_test_assert_same_bytes(bin, back);
    ct_state_dict_free(from_back);
    ct_state_dict_free(sd);
}

static void bad_command_lines_and_files_say_what_would_be_right(void **state)
{
    (void)state;
    char args[1400], text[300];
    snprintf(text, sizeof text, "%s", gpt_test_path("notes.txt", 0));
    FILE *f = fopen(text, "w");
    fputs("not a model\n", f);
    fclose(f);
    snprintf(args, sizeof args, "convert '%s' '%s'", text, gpt_test_path("out.pt", 1));
    char *out = convert(args, 2);
    assert_non_null(strstr(out, "ends in neither .bin (llm.c) nor .safetensors (nanoGPT)"));
    free(out);
    snprintf(args, sizeof args, "convert '%s' '%s'", text, gpt_test_path("out.bin", 1));
    out = convert(args, 1);
    assert_non_null(strstr(out, "is neither an llm.c checkpoint"));
    free(out);
    assert_int_equal(access(gpt_test_path("out.bin", 1), F_OK), -1);
    out = convert("convert a.bin b.bin --format onnx", 2);
    assert_non_null(strstr(out, "--format 'onnx' is not a format; give nanogpt, hf or llmc"));
    free(out);
    out = convert("convert a.bin", 2);
    assert_non_null(strstr(out, "give IN and OUT"));
    free(out);
}

static const char *torch_python(void)
{
    static char path[600];
    const char *chosen = getenv("CTORCH_PYTHON");
    if (chosen && *chosen) return chosen;
    const char *home = getenv("HOME");
    snprintf(path, sizeof path, "%s/.cache/ctorch/torch-cpu/bin/python", home ? home : "");
    return access(path, X_OK) == 0 ? path : "python3";
}

static void a_nanogpt_file_loads_into_nanogpt_s_gpt_in_pytorch(void **state)
{
    (void)state;
    const char *python = torch_python();
    char probe[800];
    snprintf(probe, sizeof probe, "'%s' -c 'import torch, safetensors' >/dev/null 2>&1", python);
    if (system(probe) != 0) {
        printf("%s cannot import torch and safetensors: skipped (CTORCH_PYTHON names a Python that can)\n", python);
        skip();
    }
    char nano[2][300], args[1400], command[2400];
    for (int bias = 0; bias < 2; bias++) {
        ct_gpt_config c = gpt_test_config(bias);
        ct_state_dict *sd = gpt_test_state_dict(&c, 12);
        snprintf(nano[bias], sizeof nano[bias], "%.299s", gpt_test_path(bias ? "bias.safetensors" : "nobias.safetensors", bias));
        if (!bias) { /* no biases: straight from the state dict (llm.c's file would add zero ones) */
            assert_int_equal(ct_gpt_checkpoint_save(sd, &c, nano[bias], CT_GPT_FORMAT_NANOGPT), CT_OK);
        } else {
            const char *bin = gpt_test_path("gpt.bin", 2);
            assert_int_equal(ct_gpt_checkpoint_save(sd, &c, bin, CT_GPT_FORMAT_LLMC), CT_OK);
            snprintf(args, sizeof args, "convert '%s' '%s'", bin, nano[bias]);
            free(convert(args, 0));
        }
        ct_state_dict_free(sd);
    }
    snprintf(command, sizeof command, "'%s' '%s/tests/models/scripts/check_nanogpt_file.py' '%s' '%s' 2>&1", python,
             CTORCH_SOURCE_DIR, nano[0], nano[1]);
    int status = -1;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("%s exited %d:\n%s", command, status, out);
    assert_non_null(strstr(out, "'bias': False"));
    assert_non_null(strstr(out, "'bias': True"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(llmc_to_safetensors_and_back_gives_the_same_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_command_lines_and_files_say_what_would_be_right, setup, teardown),
        cmocka_unit_test_setup_teardown(a_nanogpt_file_loads_into_nanogpt_s_gpt_in_pytorch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
