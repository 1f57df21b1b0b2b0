/* node_detect.c: what this machine has: CPUs, memory and CUDA GPUs.
 *
 * GPUs are counted through the CUDA runtime loaded with dlopen, in a short-lived child
 * process: the raylet itself never initializes CUDA (no context holding GPU memory, no
 * CUDA state inherited by forked workers), and a broken driver that crashes or hangs
 * costs a warning, not the raylet. Without the runtime or a device: 0 GPUs. */
#include "node_detect.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"

#define GPU_PROBE_TIMEOUT_MS 30000

/* ------------------------------------------------------------------ CPUs */

/* The CPU limit of a cgroup v2 (cpu.max "QUOTA PERIOD") or v1 (cfs quota/period),
 * rounded up to whole CPUs; 0 when there is none. */
static int64_t cgroup_cpu_limit(void)
{
    long long quota = -1, period = 0;
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        char q[32];
        if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0)
            quota = atoll(q);
        fclose(f);
    } else {
        f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
        if (f) {
            if (fscanf(f, "%lld", &quota) != 1)
                quota = -1;
            fclose(f);
        }
        f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
        if (f) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
    }
    if (quota <= 0 || period <= 0)
        return 0;
    return (quota + period - 1) / period;
}

static int64_t detect_cpus(void)
{
    int64_t n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? c : 1;
    }
    int64_t lim = cgroup_cpu_limit();
    if (lim > 0 && lim < n)
        n = lim;
    return n;
}

/* ---------------------------------------------------------------- memory */

static uint64_t read_u64_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[64] = {0};
    uint64_t v = 0;
    if (fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9')
        v = strtoull(buf, NULL, 10);
    fclose(f);
    return v;
}

static uint64_t detect_memory(void)
{
    uint64_t total = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            unsigned long long kb;
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
                total = (uint64_t)kb * 1024;
                break;
            }
        }
        fclose(f);
    }
    if (total == 0) {
        struct sysinfo si;
        if (sysinfo(&si) == 0)
            total = (uint64_t)si.totalram * si.mem_unit;
    }
    /* A cgroup limit below the machine's memory is what this node really has. */
    uint64_t lim = read_u64_file("/sys/fs/cgroup/memory.max");
    if (lim == 0)
        lim = read_u64_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    if (lim > 0 && (total == 0 || lim < total))
        total = lim;
    return total;
}

/* ------------------------------------------------------------------ GPUs */

typedef int (*cuda_count_fn)(int *);
typedef int (*cuda_set_fn)(int);
typedef int (*cuda_meminfo_fn)(size_t *, size_t *);

/* Runs in the child: prints "<count> <smallest device memory>" to fd. */
static void gpu_probe_child(int fd)
{
    static const char *const libs[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                       "libcudart.so.11.0",
                                       "/usr/local/cuda/lib64/libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !h; i++)
        h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    int count = 0;
    uint64_t mem = 0;
    if (h) {
        cuda_count_fn get_count;
        cuda_set_fn set_device;
        cuda_meminfo_fn mem_info;
        *(void **)&get_count = dlsym(h, "cudaGetDeviceCount");
        *(void **)&set_device = dlsym(h, "cudaSetDevice");
        *(void **)&mem_info = dlsym(h, "cudaMemGetInfo");
        if (get_count && get_count(&count) != 0)
            count = 0;
        for (int i = 0; i < count && set_device && mem_info; i++) {
            size_t free_b = 0, total_b = 0;
            if (set_device(i) == 0 && mem_info(&free_b, &total_b) == 0 && total_b > 0 &&
                (mem == 0 || total_b < mem))
                mem = total_b;
        }
    }
    char out[64];
    int n = snprintf(out, sizeof out, "%d %" PRIu64 "\n", count < 0 ? 0 : count, mem);
    if (write(fd, out, (size_t)n) < 0) {
        /* nothing to do: the parent reads 0 GPUs */
    }
}

static void detect_gpus(int *count, uint64_t *mem)
{
    *count = 0;
    *mem = 0;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        ESC_WARN("GPU detection skipped: pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        ESC_WARN("GPU detection skipped: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        gpu_probe_child(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    char buf[128];
    size_t len = 0;
    uint64_t deadline = esc_now_ms() + GPU_PROBE_TIMEOUT_MS;
    bool timed_out = false;
    for (;;) {
        uint64_t now = esc_now_ms();
        if (now >= deadline) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)(deadline - now));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        ssize_t n = read(fds[0], buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof buf - 1)
            break;
    }
    close(fds[0]);
    if (timed_out) {
        kill(pid, SIGKILL);
        ESC_WARN("GPU detection timed out after %d ms: 0 GPUs", GPU_PROBE_TIMEOUT_MS);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out)
        return;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ESC_WARN("GPU detection failed (probe %s %d): 0 GPUs",
                 WIFSIGNALED(status) ? "killed by signal" : "exited with",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return;
    }
    buf[len] = 0;
    ESC_DEBUG("GPU probe answered '%.*s'", (int)strcspn(buf, "\n"), buf);
    int c = 0;
    unsigned long long m = 0;
    if (sscanf(buf, "%d %llu", &c, &m) == 2 && c > 0) {
        *count = c;
        *mem = m;
    }
}

void node_detect(node_detected *d, bool probe_gpus)
{
    memset(d, 0, sizeof *d);
    d->cpus = detect_cpus();
    d->memory = detect_memory();
    if (probe_gpus)
        detect_gpus(&d->gpus, &d->gpu_memory);
}
