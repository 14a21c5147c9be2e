/* The models of `ctorch train` (tools/train_models.c: mlp, cnn), trained on --device with its
 * defaults (Adam, lr 1e-3 for the mlp and 3e-3 for the cnn; cross-entropy) at batch 32 (its
 * default) and at batch 512, in samples per second; the mlp at batch 512 again under bfloat16
 * autocast (`ctorch train --amp bf16`), and where ct_bench_big_sizes says so an MLP of 4 layers
 * 4096 wide at batch 4096 under bfloat16 autocast (the tensor cores' case of issue 15). A step: zero_grad, forward, loss, backward,
 * Adam's step, on a batch already on the device (random digits-like samples: 64 values in
 * [0, 1), 10 classes); the loss stays on the device, as in ctorch train's loop. Timed as every
 * device benchmark (ct_bench_time_synced): calls per run from the warm-up, each run ended by a
 * wait for the device. No baseline: bench/torch_bench.py trains the same models in PyTorch eager,
 * and scripts/gpu-check sets them side by side.
 * The _graph rows (an accelerator only, issue 16): the same steps with Adam capturable, captured
 * once and replayed (ctorch/graph.h), against PyTorch's whole-step CUDA-graph recipe in
 * torch_bench.py (static batch, capturable Adam, torch.cuda.graph). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "train.h"

#define FEATURES 64
#define CLASSES 10

#define WIDE 4096 /* the wide MLP's features, width and classes */

typedef struct model_run {
    ct_dtype amp; /* CT_F32: none */
    ct_module *model;
    ct_optimizer *optimizer;
    ct_tensor *x, *y;
    ct_graph *graph; /* the _graph rows: the captured step */
    bool failed;
    char error[512];
} model_run;

static void step(void *context)
{
    model_run *m = context;
    if (m->failed) return;
    ct_scope_push();
    ct_optimizer_zero_grad(m->optimizer);
    ct_status status = m->amp == CT_F32 ? CT_OK : ct_autocast_push(ct_tensor_device(m->x).type, m->amp);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(m->model, m->x), m->y, 0.0);
    if (m->amp != CT_F32 && status == CT_OK) ct_autocast_pop();
    if (status == CT_OK) status = loss ? ct_backward(loss) : ct_last_error();
    if (status == CT_OK) status = ct_optimizer_step(m->optimizer);
    if (status != CT_OK) {
        snprintf(m->error, sizeof m->error, "training step: %s", ct_last_error_message());
        m->failed = true;
    }
    ct_scope_pop();
}

static void replay(void *context)
{
    model_run *m = context;
    if (!m->failed && ct_graph_replay(m->graph) != CT_OK) {
        snprintf(m->error, sizeof m->error, "replay: %s", ct_last_error_message());
        m->failed = true;
    }
}

static bool capture(model_run *m, ct_device device)
{
    m->graph = ct_bench_capture_step(step, m, device);
    if (!m->graph && !m->failed) snprintf(m->error, sizeof m->error, "capture: %s", ct_last_error_message());
    m->failed = m->failed || !m->graph;
    return !m->failed;
}

/* Linear(4096, 4096) four times with ReLU between, as bench/torch_bench.py's wide_mlp. */
static ct_module *wide_mlp(void)
{
    ct_module *layers[7];
    for (int k = 0; k < 7; k++) layers[k] = k % 2 ? ct_relu_module() : ct_linear(WIDE, WIDE, true);
    return ct_sequential(layers, 7);
}

static bool setup(model_run *m, ct_train_model kind, bool wide, int64_t batch, ct_dtype amp, bool graph,
                  ct_device device)
{
    memset(m, 0, sizeof *m);
    m->amp = amp;
    ct_manual_seed(0);
    int64_t features = wide ? WIDE : FEATURES, classes = wide ? WIDE : CLASSES;
    m->model = wide ? wide_mlp() : ct_train_model_create(kind, FEATURES, CLASSES);
    if (!m->model || ct_module_to(m->model, device) != CT_OK) {
        snprintf(m->error, sizeof m->error, "the model: %s",
                 m->model ? ct_last_error_message() : ct_train_error_message());
        return false;
    }
    ct_adam_options adam = ct_adam_options_default(ct_train_default_lr(kind, CT_TRAIN_ADAM));
    adam.capturable = graph;
    m->optimizer = ct_optim_adam(m->model, &adam);
    int64_t x_shape[2] = {batch, features}, y_shape[1] = {batch};
    m->x = ct_rand(x_shape, 2, CT_F32, device);
    m->y = ct_randint(0, classes, y_shape, 1, CT_I64, device);
    if (!m->optimizer || !m->x || !m->y) {
        snprintf(m->error, sizeof m->error, "the optimizer and the batch: %s", ct_last_error_message());
        return false;
    }
    return true;
}

static void free_run(model_run *m)
{
    ct_graph_free(m->graph);
    ct_optimizer_free(m->optimizer);
    ct_module_release(m->model);
    ct_release(m->x);
    ct_release(m->y);
    memset(m, 0, sizeof *m);
}

void ct_bench_train_models(const char *filter, ct_bench_report report, void *context)
{
    static const struct {
        const char *name;
        ct_train_model kind;
        bool wide;
        int64_t batch;
        ct_dtype amp;
        bool graph;
    } cases[] = {
        {"train_mlp_b32", CT_TRAIN_MLP, false, 32, CT_F32, false},
        {"train_mlp_b512", CT_TRAIN_MLP, false, 512, CT_F32, false},
        {"train_cnn_b32", CT_TRAIN_CNN, false, 32, CT_F32, false},
        {"train_cnn_b512", CT_TRAIN_CNN, false, 512, CT_F32, false},
        {"train_mlp_b512_bf16", CT_TRAIN_MLP, false, 512, CT_BF16, false},
        {"train_mlp4096x4_b4096_bf16", CT_TRAIN_MLP, true, 4096, CT_BF16, false},
        {"train_mlp_b32_graph", CT_TRAIN_MLP, false, 32, CT_F32, true},
        {"train_mlp_b512_graph", CT_TRAIN_MLP, false, 512, CT_F32, true},
        {"train_cnn_b32_graph", CT_TRAIN_CNN, false, 32, CT_F32, true},
        {"train_cnn_b512_graph", CT_TRAIN_CNN, false, 512, CT_F32, true},
    };
    ct_device device = ct_bench_config_get()->device;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_bench_result r = {.unit = "samples/s"};
        snprintf(r.name, sizeof r.name, "%s", cases[i].name);
        if (!ct_bench_selected(filter, r.name)) continue;
        if (cases[i].wide && !ct_bench_big_sizes(device)) continue;
        /* PyTorch's twin needs CUDA graphs; the CPU's replay has rows of its own (bench_graphs.c) */
        if (cases[i].graph && device.type == CT_CPU) continue;
        ct_bench_set_device(&r, device);
        model_run m;
        if (setup(&m, cases[i].kind, cases[i].wide, cases[i].batch, cases[i].amp, cases[i].graph, device) &&
            (!cases[i].graph || capture(&m, device))) {
            ct_bench_compare_synced(&r, cases[i].graph ? replay : step, NULL, &m, device, 3, 10,
                                    (double)cases[i].batch, 0.0);
        }
        if (m.failed || !m.optimizer || !m.x || !m.y) {
            fprintf(stderr, "bench %s: FAILED: %s\n", r.name, m.error);
            r.value = 0.0;
            snprintf(r.target, sizeof r.target, "report");
            r.met = false;
        }
        report(&r, context);
        free_run(&m);
    }
}
