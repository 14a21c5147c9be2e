/* Running the benchmark groups and printing their results as a table or as JSON lines. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ctorch.h"

bool ct_bench_selected(const char *filter, const char *name)
{
    return !filter || strstr(name, filter) != NULL;
}

typedef struct printer {
    bool json;
    int missed;
} printer;

static void print_result(const ct_bench_result *r, void *context)
{
    printer *p = context;
    if (!r->met) p->missed++;
    if (p->json) {
        printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"baseline\": %.6g, "
               "\"ratio\": %.4f, \"target\": \"%s\", \"met\": %s}\n", r->name, r->value, r->unit,
               r->baseline, r->ratio, r->target, r->met ? "true" : "false");
    } else {
        printf("%-28s %12.3f %-8s %12.3f %8.3f  %-16s %s\n", r->name, r->value, r->unit,
               r->baseline, r->ratio, r->target, r->met ? "met" : "MISSED");
    }
    fflush(stdout);
}

static void ignore_result(const ct_bench_result *r, void *context)
{
    (void)r;
    (void)context;
}

int ct_bench_main(int argc, char **argv)
{
    printer p = {false, 0};
    const char *filter = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            p.json = true;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "ctorch bench: unknown option '%s'; usage: ctorch bench [--json] [FILTER]\n", argv[i]);
            return 2;
        } else
            filter = argv[i];
    }
    /* Under mpirun the ranks run the distributed benchmarks together (the others would only
     * compete for the cores); rank 0 prints. */
    bool distributed = ct_dist_launcher_world_size() > 1;
    if (distributed && ct_dist_init() != CT_OK) {
        fprintf(stderr, "ctorch bench: started by mpirun, but the process group did not start: %s\n",
                ct_last_error_message());
        return 1;
    }
    bool prints = !distributed || ct_dist_rank() == 0;
    if (!p.json && prints)
        printf("%-28s %12s %-8s %12s %8s  %-16s %s\n", "benchmark", "ctorch", "unit", "baseline",
               "ratio", "target", "");
    if (distributed) {
        ct_bench_distributed(filter, prints ? print_result : ignore_result, &p);
        ct_bench_ddp(filter, prints ? print_result : ignore_result, &p);
        ct_dist_finalize();
    } else {
        ct_bench_matmul(filter, print_result, &p);
        ct_bench_elementwise(filter, print_result, &p);
        ct_bench_overhead(filter, print_result, &p);
        ct_bench_training(filter, print_result, &p);
        ct_bench_transfer(filter, print_result, &p);
        ct_bench_device_ops(filter, print_result, &p);
        ct_bench_data_parallel(filter, print_result, &p);
        ct_bench_distributed(filter, print_result, &p);
        ct_bench_ddp(filter, print_result, &p);
    }
    if (!p.json && prints && p.missed) printf("%d target%s missed\n", p.missed, p.missed == 1 ? "" : "s");
    return 0;
}
