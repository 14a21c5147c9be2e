/* ctorch eval --checkpoint FILE: rebuilds the model a `ctorch train --save` checkpoint names, loads
 * it (through --map-location, as torch.load's map_location) on the best device (or --device) and
 * prints its accuracy on the test part of the data it was trained with (the same seeded split). */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "tool.h"
#include "train.h"

#define COMMAND "eval"

typedef struct eval_options {
    const char *checkpoint, *device, *map_location, *data, *model;
    double scale; /* --scale; 0: the checkpoint's (or, without ctorch metadata, the data's default) */
    bool json;
} eval_options;

static void usage(FILE *out)
{
    fprintf(out, "usage: ctorch eval --checkpoint FILE [options]\n\n"
                 "  --checkpoint FILE     a model saved by ctorch train --save, or a PyTorch state dict\n"
                 "                        in safetensors (docs/command-line.md: a model trained in PyTorch)\n"
                 "  --model mlp|cnn       the model a file without ctorch's metadata holds (default: read\n"
                 "                        from its tensors' names and shapes)\n"
                 "  --device D            where to evaluate: cpu, opencl:N, cuda:N (default: the best device)\n"
                 "  --map-location MAP    where the saved tensors load: a device (cpu) or pairs such as\n"
                 "                        opencl:0=cpu,cuda:1=cpu (default: the devices they were saved from)\n"
                 "  --data FILE           the CSV file the model was trained on (default: the shipped digits)\n"
                 "  --scale X             what the training multiplied features by, for a file without\n"
                 "                        ctorch's metadata (default: 1/16 for the shipped digits, else 1);\n"
                 "                        ctorch train's files keep theirs, and another is refused\n"
                 "  --json                one JSON line\n");
}

static int parse(int argc, char **argv, eval_options *o)
{
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (ct_arg_option(COMMAND, argc, argv, &i, "--checkpoint", &v)) o->checkpoint = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--device", &v)) o->device = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--map-location", &v)) o->map_location = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--data", &v)) o->data = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--model", &v)) o->model = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--scale", &v)) {
            if (v && !ct_arg_scale(COMMAND, v, &o->scale)) return CT_EXIT_USAGE;
        }
        else {
            static const char *const options[] = {"--checkpoint", "--model", "--device", "--map-location",
                                                  "--data", "--scale", "--json", "--help", NULL};
            ct_option_unknown(COMMAND, "", argv[i], options, "ctorch eval --help");
            return CT_EXIT_USAGE;
        }
        if (!v) return CT_EXIT_USAGE;
    }
    if (!o->checkpoint) {
        fprintf(stderr, "ctorch " COMMAND ": --checkpoint FILE is required (a model saved by ctorch train --save)\n");
        return CT_EXIT_USAGE;
    }
    ct_train_model model;
    if (o->model && !ct_train_model_parse(o->model, &model)) {
        fprintf(stderr, "ctorch " COMMAND ": --model '%s' is not a model; use mlp or cnn\n", o->model);
        return CT_EXIT_USAGE;
    }
    if (!ct_arg_readable_file(COMMAND, "--checkpoint", o->checkpoint)) return CT_EXIT_USAGE;
    if (o->data && !ct_arg_readable_file(COMMAND, "--data", o->data)) return CT_EXIT_USAGE;
    return 0;
}

static int evaluate(const eval_options *o, ct_device device)
{
    ct_train_checkpoint checkpoint;
    ct_train_model model;
    bool forced = o->model && ct_train_model_parse(o->model, &model);
    ct_status loaded = ct_train_checkpoint_load_model(o->checkpoint, o->map_location, forced ? &model : NULL,
                                                      &checkpoint);
    if (loaded != CT_OK) {
        fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        /* A bad --map-location (a device that is not there, or whose backend is not: opencl:0=cuda:7
         * without CUDA), one that is needed, or a --model the file does not hold: the command
         * line's fault. */
        bool usage = loaded == CT_ERR_INVALID_ARGUMENT || loaded == CT_ERR_DEVICE || loaded == CT_ERR_NOT_COMPILED ||
                     loaded == CT_ERR_UNAVAILABLE;
        return usage ? CT_EXIT_USAGE : CT_EXIT_FAILURE;
    }
    if (checkpoint.inferred && !o->json)
        printf("%s has no ctorch metadata: read as the %s (%lld features, %lld classes), "
               "tested on ctorch train's default split (seed %llu)\n", o->checkpoint,
               ct_train_model_name(checkpoint.kind), (long long)checkpoint.features, (long long)checkpoint.classes,
               (unsigned long long)checkpoint.split_seed);
    /* The training's scale: another would test the model on inputs it never saw. */
    double scale = checkpoint.feature_scale ? checkpoint.feature_scale : o->scale;
    if (checkpoint.feature_scale && o->scale && o->scale != checkpoint.feature_scale) {
        fprintf(stderr, "ctorch " COMMAND ": %s was trained on features x %g (its __metadata__'s "
                CT_TRAIN_KEY_FEATURE_SCALE "), not --scale %g: eval applies the training's scale; leave out "
                "--scale\n", o->checkpoint, checkpoint.feature_scale, o->scale);
        ct_train_checkpoint_free(&checkpoint);
        return CT_EXIT_USAGE;
    }
    ct_train_data data;
    if (ct_train_data_load_scaled(o->data, scale, checkpoint.split_seed, &data) != CT_OK) {
        fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        ct_train_checkpoint_free(&checkpoint);
        return CT_EXIT_FAILURE;
    }
    int exit_status = 0;
    double accuracy = 0;
    if (data.features != checkpoint.features || data.classes != checkpoint.classes) {
        fprintf(stderr, "ctorch " COMMAND ": %s was trained on samples of %lld features and %lld classes; "
                "the data has %lld and %lld (pass the training data with --data)\n", o->checkpoint,
                (long long)checkpoint.features, (long long)checkpoint.classes, (long long)data.features,
                (long long)data.classes);
        exit_status = CT_EXIT_USAGE;
    } else if (ct_train_evaluate(checkpoint.model, data.test, device, &accuracy) != CT_OK) {
        fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        exit_status = CT_EXIT_FAILURE;
    }
    if (exit_status == 0) {
        int64_t tested = ct_dataset_size(data.test);
        char device_name[CT_DEVICE_STRING_MAX];
        ct_device_format(device, device_name, sizeof device_name);
        if (o->json) {
            cJSON *line = ct_json_object();
            ct_json_add_string(line, "device", device_name);
            ct_json_add_string(line, "model", ct_train_model_name(checkpoint.kind));
            ct_json_add_string(line, "checkpoint", o->checkpoint);
            ct_json_add_number(line, "test_samples", (double)tested);
            ct_json_add_number(line, "feature_scale", data.feature_scale);
            ct_json_add_number(line, "test_accuracy", accuracy);
            ct_json_print_line(stdout, line);
        } else {
            ct_tool_print_using(stdout, device);
            printf("Test accuracy of the %s in %s: %.2f%% (%lld/%lld), features x %g\n",
                   ct_train_model_name(checkpoint.kind), o->checkpoint, 100 * accuracy,
                   (long long)llround(accuracy * (double)tested), (long long)tested, data.feature_scale);
        }
    }
    ct_train_data_free(&data);
    ct_train_checkpoint_free(&checkpoint);
    return exit_status;
}

int ct_cmd_eval(int argc, char **argv)
{
    eval_options o = {0};
    int status = parse(argc, argv, &o);
    if (status != 0) return status;
    ct_device device;
    if (!ct_tool_choose_device(COMMAND, NULL, o.device, &device)) return CT_EXIT_USAGE;
    return evaluate(&o, device);
}
