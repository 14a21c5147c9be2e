/* The C twin of the PyTorch tutorial's second choice of devices: the main GPU is the one with the most
 * free memory.
 *
 *   def get_gpu_memory():
 *       os.system('nvidia-smi -q -d Memory | grep -A4 GPU | grep Free > tmp.txt')
 *       memory_gpu = [int(x.split()[2]) for x in open('tmp.txt', 'r').readlines()]
 *       os.system('rm tmp.txt')
 *       return memory_gpu
 *
 *   gpu_memory = get_gpu_memory()
 *   if gpu_memory:
 *       print("\ngpu free memory: {}".format(gpu_memory))
 *       gpu_list = np.argsort(gpu_memory)[::-1]
 *       gpu_list_str = ",".join(map(str, gpu_list))
 *       os.environ.setdefault("CUDA_VISIBLE_DEVICES", gpu_list_str)
 *   device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
 *   net = nn.DataParallel(net)       # every visible GPU; the outputs gather on cuda:0, the main one
 *
 * ct_devices_by_free_memory is get_gpu_memory and the argsort in one call: the devices of a type,
 * most free memory first. The seed asks nvidia-smi, another program, so that its own process has
 * not started CUDA before CUDA_VISIBLE_DEVICES is set; ctorch too reads
 * CTORCH_OPENCL_VISIBLE_DEVICES once, at the first device query. So the query runs in a child
 * process, and this one then sets the variable (unless the user did, as setdefault) and finds its
 * devices in that order: opencl:0 is the main device. (Without a second process, give the ordered
 * list to ct_data_parallel: its first device is the main one.) Without OpenCL devices the model
 * runs on the CPU. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctorch.h"

#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

enum { MAX_DEVICES = 16, BATCH_SIZE = 16, FEATURES = 3 };

/* What the child process found: the devices' indices, most free memory first, and each one's
 * free memory (by index); count 0 and why when there is none. */
typedef struct gpu_memory {
    int count;
    int order[MAX_DEVICES];
    size_t free_bytes[MAX_DEVICES];
    char reason[256];
} gpu_memory;

static void query_in_this_process(gpu_memory *m)
{
    ct_device devices[MAX_DEVICES];
    if (ct_devices_by_free_memory(CT_OPENCL, devices, MAX_DEVICES, &m->count) != CT_OK) {
        snprintf(m->reason, sizeof m->reason, "%s", ct_last_error_message());
        m->count = 0;
        return;
    }
    for (int i = 0; i < m->count; i++) {
        size_t total = 0;
        m->order[i] = devices[i].index;
        ct_mem_get_info((ct_device){CT_OPENCL, i}, &m->free_bytes[i], &total);
    }
}

/* get_gpu_memory + argsort, in a child process (nvidia-smi's part). false when it could not run. */
static bool get_gpu_memory(gpu_memory *m)
{
    memset(m, 0, sizeof *m);
    int fds[2];
    if (pipe(fds) != 0) return false;
    fflush(stdout); /* nothing buffered is printed twice */
    pid_t child = fork();
    if (child < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (child == 0) {
        close(fds[0]);
        /* Every device, numbered as the machine numbers them (nvidia-smi ignores
         * CUDA_VISIBLE_DEVICES too). */
        unsetenv("CTORCH_OPENCL_VISIBLE_DEVICES");
        gpu_memory found = {0};
        query_in_this_process(&found);
        ssize_t written = write(fds[1], &found, sizeof found);
        _exit(written == (ssize_t)sizeof found ? 0 : 1);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    while (got < sizeof *m && (n = read(fds[0], (char *)m + got, sizeof *m - got)) > 0) got += (size_t)n;
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return got == sizeof *m && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    int exit_code = 1;
    ct_module *net = NULL;
    ct_scope_push();

    gpu_memory memory;
    if (!get_gpu_memory(&memory)) {
        fprintf(stderr, "error: the child process that asks for the devices' free memory failed\n");
        goto done;
    }
    if (memory.count > 0) {
        printf("\ngpu free memory: [");
        for (int i = 0; i < memory.count; i++)
            printf("%s%zu", i ? ", " : "", memory.free_bytes[i] >> 20);
        printf("] MiB\n");
        char gpu_list_str[MAX_DEVICES * 4] = "";
        for (int i = 0; i < memory.count; i++)
            snprintf(gpu_list_str + strlen(gpu_list_str), sizeof gpu_list_str - strlen(gpu_list_str), "%s%d",
                     i ? "," : "", memory.order[i]);
        if (getenv("CTORCH_OPENCL_VISIBLE_DEVICES"))
            printf("CTORCH_OPENCL_VISIBLE_DEVICES is set already: kept (by free memory it would be %s)\n",
                   gpu_list_str);
        setenv("CTORCH_OPENCL_VISIBLE_DEVICES", gpu_list_str, 0); /* os.environ.setdefault */
    } else {
        printf("no free memory to compare (%s)\n", memory.reason);
    }
    const char *visible = getenv("CTORCH_OPENCL_VISIBLE_DEVICES");
    printf("CTORCH_OPENCL_VISIBLE_DEVICES :%s\n", visible ? visible : "");

    /* This process's first device query: the devices in that order. */
    ct_device device = ct_device_count(CT_OPENCL) > 0 ? (ct_device){CT_OPENCL, 0} : CT_DEVICE_CPU;
    char name[CT_DEVICE_STRING_MAX];
    ct_device_props props;
    printf("main device: %s (%s)\n", ct_device_format(device, name, sizeof name),
           ct_get_device_properties(device, &props) == CT_OK ? props.name : "?");

    /* nn.DataParallel(net) over every visible device, gathering on the main one. */
    ct_manual_seed(0);
    ct_module *model = ct_sequential((ct_module *[]){ct_linear(FEATURES, FEATURES, false), ct_relu_module()}, 2);
    CHECK(model);
    CHECK(ct_module_to(model, device) == CT_OK);
    net = ct_data_parallel(model, NULL, 0, device);
    ct_module_release(model); /* the wrapper holds its own reference */
    CHECK(net);
    ct_tensor *inputs = ct_randn((int64_t[]){BATCH_SIZE, FEATURES}, 2, CT_F32, device);
    ct_tensor *outputs = ct_module_forward(net, inputs);
    CHECK(outputs);
    printf("model outputs.size: [%" PRId64 ", %" PRId64 "] on %s\n", ct_tensor_size(outputs, 0),
           ct_tensor_size(outputs, 1), ct_device_format(ct_tensor_device(outputs), name, sizeof name));
    if (!ct_device_equal(ct_tensor_device(outputs), device)) {
        fprintf(stderr, "error: the outputs should be gathered on the main device\n");
        goto done;
    }
    printf("device_count :%d\n", ct_device_count(CT_OPENCL));
    exit_code = 0;

done:
    ct_module_release(net);
    ct_scope_pop();
    return exit_code;
}
