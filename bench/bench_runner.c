/* Running the benchmark groups and printing their results as a table or as JSON lines. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cpu_report.h"
#include "ctorch.h"
#include "json_write.h"
#include "option_suggest.h"

/* Does the pattern pattern[0..length) match name (see ct_bench_selected)? */
static bool pattern_matches(const char *pattern, size_t length, const char *name)
{
    bool start = length > 0 && pattern[0] == '^';
    if (start) pattern++, length--;
    bool end = length > 0 && pattern[length - 1] == '$';
    if (end) length--;
    size_t name_length = strlen(name);
    if (length > name_length) return false;
    if (start && end) return length == name_length && strncmp(name, pattern, length) == 0;
    if (start) return strncmp(name, pattern, length) == 0;
    if (end) return strncmp(name + name_length - length, pattern, length) == 0;
    for (size_t i = 0; i + length <= name_length; i++)
        if (strncmp(name + i, pattern, length) == 0) return true;
    return false;
}

bool ct_bench_selected(const char *filter, const char *name)
{
    if (!filter) return true;
    for (const char *p = filter;;) {
        const char *comma = strchr(p, ',');
        size_t length = comma ? (size_t)(comma - p) : strlen(p);
        if (length > 0 && pattern_matches(p, length, name)) return true;
        if (!comma) return false;
        p = comma + 1;
    }
}

typedef struct printer {
    bool json;
    int missed, results;
} printer;

static void print_result(const ct_bench_result *r, void *context)
{
    printer *p = context;
    p->results++;
    if (!r->met) p->missed++;
    /* A result without a baseline (0: none on this device) shows "-" in the table, null in JSON. */
    bool baseline = r->baseline > 0;
    if (p->json) {
        cJSON *line = ct_json_object();
        ct_json_add_string(line, "name", r->name);
        if (r->device[0]) ct_json_add_string(line, "device", r->device);
        ct_json_add_number(line, "value", r->value);
        ct_json_add_string(line, "unit", r->unit);
        if (baseline) {
            ct_json_add_number(line, "baseline", r->baseline);
            ct_json_add_number(line, "ratio", r->ratio);
        } else {
            ct_json_add_string(line, "baseline", NULL);
            ct_json_add_string(line, "ratio", NULL);
        }
        ct_json_add_string(line, "target", r->target);
        ct_json_add_bool(line, "met", r->met);
        ct_json_print_line(stdout, line);
    } else if (baseline) {
        printf("%-28s %-8s %12.3f %-9s %12.3f %8.3f  %-16s %s\n", r->name, r->device[0] ? r->device : "-",
               r->value, r->unit, r->baseline, r->ratio, r->target, r->met ? "met" : "MISSED");
    } else {
        printf("%-28s %-8s %12.3f %-9s %12s %8s  %-16s %s\n", r->name, r->device[0] ? r->device : "-",
               r->value, r->unit, "-", "-", r->target, r->met ? "met" : "MISSED");
    }
    fflush(stdout);
}

static void count_result(const ct_bench_result *r, void *context)
{
    (void)r;
    ((printer *)context)->results++;
}

static const char usage[] =
    "usage: ctorch bench [--json] [--device D] [--quick] [--big|--no-big] [FILTER]";

int ct_bench_main(int argc, char **argv)
{
    printer p = {false, 0, 0};
    const char *filter = NULL;
    ct_bench_config config = *ct_bench_config_get();
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            p.json = true;
        } else if (strcmp(argv[i], "--quick") == 0) {
            config.quick = true;
        } else if (strcmp(argv[i], "--big") == 0) {
            config.big = 1;
        } else if (strcmp(argv[i], "--no-big") == 0) {
            config.big = 0;
        } else if (strcmp(argv[i], "--device") == 0 || strncmp(argv[i], "--device=", 9) == 0) {
            const char *text = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!text) {
                fprintf(stderr, "ctorch bench: --device needs a device (cpu, cuda:0, opencl:1); %s\n", usage);
                return 2;
            }
            if (ct_device_parse(text, &config.device) != CT_OK) {
                fprintf(stderr, "ctorch bench: --device %s: %s\n", text, ct_last_error_message());
                return 2;
            }
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("%s\n"
                   "  --json        one JSON object per result (name, device, value, unit, baseline,\n"
                   "                ratio, target, met); baseline and ratio are null where there is none\n"
                   "  --device D    where matmul, the memory-bound ops, the per-op overhead and the\n"
                   "                models' training run (default: cpu); the accelerator benchmarks\n"
                   "                take the first CUDA or OpenCL device\n"
                   "  --quick       small sizes, 1 warm-up and 3 timed runs: a rehearsal, not a measurement\n"
                   "  --big         also the 256M-float ops and matmul 8192 (default: where the device\n"
                   "                has %d GiB and, for the cpu, %d threads); --no-big never\n"
                   "  FILTER        names to run: substrings, comma-separated; ^ anchors the start, $ the end\n",
                   usage, CT_BENCH_BIG_MIN_GIB, CT_BENCH_BIG_MIN_CPUS);
            return 0;
        } else if (argv[i][0] == '-') {
            static const char *const options[] = {"--json", "--device", "--quick", "--big", "--no-big", "--help",
                                                  NULL};
            ct_option_unknown("bench", "", argv[i], options, usage);
            return 2;
        } else {
            filter = argv[i];
        }
    }
    ct_bench_config_set(&config);
    /* Under mpirun the ranks run the distributed benchmarks together (the others would only
     * compete for the cores); rank 0 prints. */
    bool distributed = ct_dist_launcher_world_size() > 1;
    if (distributed && ct_dist_init() != CT_OK) {
        fprintf(stderr, "ctorch bench: started by mpirun, but the process group did not start: %s\n",
                ct_last_error_message());
        return 1;
    }
    bool prints = !distributed || ct_dist_rank() == 0;
    /* The CPU and its engines' kernels first: every CPU figure below depends on them. In JSON, one
     * line {"cpu": {...}} without name and value (bench/peer_compare.py skips it). */
    if (prints && p.json) {
        cJSON *line = ct_json_object(), *cpu = ct_cpu_report_json();
        if (cpu && !cJSON_AddItemToObject(line, "cpu", cpu)) cJSON_Delete(cpu);
        ct_json_print_line(stdout, line);
    } else if (prints) {
        ct_cpu_report_print(stdout);
        printf("\n");
    }
    if (!p.json && prints)
        printf("%-28s %-8s %12s %-9s %12s %8s  %-16s %s\n", "benchmark", "device", "ctorch", "unit",
               "baseline", "ratio", "target", "");
    if (distributed) {
        ct_bench_distributed(filter, prints ? print_result : count_result, &p);
        ct_bench_ddp(filter, prints ? print_result : count_result, &p);
        ct_dist_finalize();
    } else {
        ct_bench_matmul(filter, print_result, &p);
        ct_bench_half(filter, print_result, &p);
        ct_bench_elementwise(filter, print_result, &p);
        ct_bench_overhead(filter, print_result, &p);
        ct_bench_training(filter, print_result, &p);
        ct_bench_train_models(filter, print_result, &p);
        ct_bench_conv2d(filter, print_result, &p);
        ct_bench_layer_norm(filter, print_result, &p);
        ct_bench_attention(filter, print_result, &p);
        ct_bench_transformer_block(filter, print_result, &p);
        ct_bench_gpt(filter, print_result, &p);
        ct_bench_optimizer_step(filter, print_result, &p);
        ct_bench_graphs(filter, print_result, &p);
        ct_bench_transfer(filter, print_result, &p);
        ct_bench_device_ops(filter, print_result, &p);
        ct_bench_data_parallel(filter, print_result, &p);
        ct_bench_distributed(filter, print_result, &p);
        ct_bench_ddp(filter, print_result, &p);
    }
    if (!p.json && prints && p.missed) printf("%d target%s missed\n", p.missed, p.missed == 1 ? "" : "s");
    if (filter && p.results == 0) { /* a typo must not pass for a run */
        if (prints)
            fprintf(stderr, "ctorch bench: FILTER '%s' matched no benchmark that runs here (names are "
                    "substrings, comma-separated; ^ anchors the start, $ the end; ctorch bench --quick "
                    "lists every name)\n", filter);
        return 2;
    }
    return 0;
}
