/* cpu_quota.c: worker cgroups whose CPU quota is what the task holds (cpu_quota.h). */
#include "cpu_quota.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "qty.h"
#include "xalloc.h"

#define PERIOD_US 100000LL
#define V1_SHARES_PER_CPU 1024LL /* cpu.shares of one process's weight */
#define V2_WEIGHT_PER_CPU 100LL  /* cpu.weight of one process's weight */
#define MIN_QUOTA_US 1000LL /* the kernel refuses less */
#define DIR_PREFIX "escher-raylet-"

struct cpu_quota {
    bool v2;
    char dir[PATH_MAX]; /* this raylet's directory */
};

/* Writes text to dir/name (one write: cgroup files take a value per write). */
static int write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static bool file_has_word(const char *path, const char *word)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char w[64];
    bool found = false;
    while (!found && fscanf(f, "%63s", w) == 1)
        found = !strcmp(w, word);
    fclose(f);
    return found;
}

static bool has_option(const char *opts, const char *want)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", opts);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, want))
            return true;
    return false;
}

/* The mount point of the cgroup2 hierarchy offering cpu, else of the v1 cpu controller,
 * from /proc/self/mountinfo ("... MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS"). */
static int find_mount(char *out, size_t len, bool *v2)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -1;
    char line[2048], v1[PATH_MAX] = "";
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char mnt[PATH_MAX], fstype[64], super[512];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
            sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2)
            continue;
        char ctl[PATH_MAX + 32];
        snprintf(ctl, sizeof ctl, "%s/cgroup.controllers", mnt);
        if (!strcmp(fstype, "cgroup2") && file_has_word(ctl, "cpu")) {
            snprintf(out, len, "%s", mnt);
            *v2 = found = true;
        } else if (!strcmp(fstype, "cgroup") && has_option(super, "cpu") && !*v1) {
            snprintf(v1, sizeof v1, "%s", mnt);
        }
    }
    fclose(f);
    if (!found && *v1) {
        snprintf(out, len, "%s", v1);
        *v2 = false;
        found = true;
    }
    return found ? 0 : -1;
}

/* This process's cgroup in that hierarchy, from /proc/self/cgroup ("ID:CONTROLLERS:PATH";
 * v2's line is "0::PATH"). */
static int own_path(bool v2, char *out, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -1;
    char line[PATH_MAX + 128];
    int rc = -1;
    while (rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        bool match = v2 ? c1[1] == 0 && !strcmp(line, "0") : has_option(c1 + 1, "cpu");
        if (match) {
            snprintf(out, len, "%s", c2 + 1);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

/* Removes a raylet directory: its worker cgroups, then itself. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char sub[PATH_MAX + 300];
        while ((e = readdir(d)))
            if (!strncmp(e->d_name, "w-", 2)) {
                snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
                if (rmdir(sub) != 0)
                    ESC_DEBUG("cannot remove %s: %s", sub, strerror(errno));
            }
        closedir(d);
    }
    rmdir(dir);
}

/* Directories of raylets that are gone (killed with -9: nothing else removes them). */
static void remove_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    char dir[PATH_MAX + 300];
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, DIR_PREFIX, strlen(DIR_PREFIX)))
            continue;
        long pid = strtol(e->d_name + strlen(DIR_PREFIX), NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
            remove_tree(dir);
        }
    }
    closedir(d);
}

/* The directory to make ours in, and the hierarchy's version. */
static int find_base(const char *root, char *base, size_t len, bool *v2, char *why,
                     size_t whylen)
{
    if (root) {
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/cgroup.controllers", root);
        *v2 = access(probe, F_OK) == 0;
        snprintf(base, len, "%s", root);
        return 0;
    }
    char mnt[PATH_MAX], own[PATH_MAX];
    if (find_mount(mnt, sizeof mnt, v2) != 0) {
        snprintf(why, whylen, "no cgroup cpu controller is mounted");
        return -1;
    }
    if (own_path(*v2, own, sizeof own) != 0) {
        snprintf(why, whylen, "no cpu cgroup for this process in /proc/self/cgroup");
        return -1;
    }
    snprintf(base, len, "%.2000s%.2000s", mnt, strcmp(own, "/") ? own : "");
    return 0;
}

/* A cgroup's weight against its siblings for cpu (fixed point) CPUs: one process's
 * weight per CPU, within the kernel's bounds. */
static void weight_text(bool v2, int64_t cpu, char *out, size_t len)
{
    long long per = v2 ? V2_WEIGHT_PER_CPU : V1_SHARES_PER_CPU;
    long long lo = v2 ? 1 : 2, hi = v2 ? 10000 : 262144;
    long long w = cpu > 0 ? cpu * per / ESC_QTY_SCALE : lo;
    snprintf(out, len, "%lld", w < lo ? lo : w > hi ? hi : w);
}

cpu_quota *cpu_quota_new(const char *root, int64_t node_cpu, char *why, size_t whylen)
{
    char base[PATH_MAX];
    bool v2 = false;
    if (find_base(root, base, sizeof base, &v2, why, whylen) != 0)
        return NULL;
    const char *quota_file = v2 ? "cpu.max" : "cpu.cfs_quota_us";
    /* v2: a cgroup passes cpu to its children only once enabled in its subtree_control
     * (refused while it holds processes, unless it is the root). */
    if (v2 && write_file(base, "cgroup.subtree_control", "+cpu") != 0) {
        snprintf(why, whylen, "cgroup v2: cannot enable cpu below %.200s: %s", base,
                 strerror(errno));
        return NULL;
    }
    remove_stale(base);
    cpu_quota *q = esc_xcalloc(1, sizeof *q);
    q->v2 = v2;
    snprintf(q->dir, sizeof q->dir, "%.3000s/" DIR_PREFIX "%d", base, (int)getpid());
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/%s", q->dir, quota_file);
    if ((mkdir(q->dir, 0755) != 0 && errno != EEXIST) ||
        (v2 && write_file(q->dir, "cgroup.subtree_control", "+cpu") != 0) ||
        access(probe, W_OK) != 0) {
        snprintf(why, whylen, "cgroup %s: cannot use %.200s: %s", v2 ? "v2" : "v1", q->dir,
                 strerror(errno));
        rmdir(q->dir);
        free(q);
        return NULL;
    }
    /* Under load the raylet's workers compete with the machine's other processes as one
     * group: it weighs as much as the node's CPUs, not as one process. */
    char w[32];
    weight_text(v2, node_cpu, w, sizeof w);
    if (write_file(q->dir, v2 ? "cpu.weight" : "cpu.shares", w) != 0)
        ESC_WARN("cannot weigh %s as %s: %s", q->dir, w, strerror(errno));
    return q;
}

const char *cpu_quota_kind(const cpu_quota *q)
{
    return q && q->v2 ? "cgroup v2" : "cgroup v1";
}

static void worker_dir(const cpu_quota *q, const char *worker_id, char *out, size_t len)
{
    snprintf(out, len, "%.4000s/w-%.64s", q->dir, worker_id);
}

int cpu_quota_add(cpu_quota *q, const char *worker_id, pid_t pid)
{
    if (!q)
        return 0;
    char dir[PATH_MAX], text[32];
    worker_dir(q, worker_id, dir, sizeof dir);
    snprintf(text, sizeof text, "%d", (int)pid);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) ||
        (!q->v2 && write_file(dir, "cpu.cfs_period_us", "100000") != 0) ||
        write_file(dir, "cgroup.procs", text) != 0) {
        ESC_WARN("worker %d runs without a CPU quota: %s: %s", (int)pid, dir, strerror(errno));
        return -1;
    }
    return 0;
}

int cpu_quota_set(cpu_quota *q, const char *worker_id, int64_t cpu)
{
    if (!q)
        return 0;
    char dir[PATH_MAX], text[64];
    worker_dir(q, worker_id, dir, sizeof dir);
    long long us = cpu > 0 ? cpu * PERIOD_US / ESC_QTY_SCALE : -1;
    if (cpu > 0 && us < MIN_QUOTA_US)
        us = MIN_QUOTA_US;
    if (!q->v2)
        snprintf(text, sizeof text, "%lld", us);
    else if (us < 0)
        snprintf(text, sizeof text, "max %lld", PERIOD_US);
    else
        snprintf(text, sizeof text, "%lld %lld", us, PERIOD_US);
    if (write_file(dir, q->v2 ? "cpu.max" : "cpu.cfs_quota_us", text) != 0) {
        ESC_WARN("cannot set the CPU quota of worker %s to %s: %s", worker_id, text,
                 strerror(errno));
        return -1;
    }
    /* Among the raylet's workers, contention is shared in proportion to what each holds. */
    weight_text(q->v2, cpu, text, sizeof text);
    if (write_file(dir, q->v2 ? "cpu.weight" : "cpu.shares", text) != 0)
        ESC_WARN("cannot weigh worker %s as %s: %s", worker_id, text, strerror(errno));
    return 0;
}

void cpu_quota_remove(cpu_quota *q, const char *worker_id)
{
    if (!q)
        return;
    char dir[PATH_MAX];
    worker_dir(q, worker_id, dir, sizeof dir);
    if (rmdir(dir) != 0 && errno != ENOENT)
        ESC_DEBUG("cannot remove %s: %s", dir, strerror(errno));
}

void cpu_quota_free(cpu_quota *q)
{
    if (!q)
        return;
    remove_tree(q->dir);
    free(q);
}
