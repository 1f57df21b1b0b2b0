/* cpu_quota.h: enforced CPU shares. A worker runs in a cgroup of its own whose CPU quota is
 * the CPU amount its task (or actor) holds, so a task holding 0.25 CPU gets a quarter of a
 * core however hard it spins (docs/workers.md, "CPU shares").
 *
 * The raylet makes one directory for itself under its own cgroup of the cpu controller,
 * "escher-raylet-<pid>", and one per worker in it, "w-<worker id>". On cgroup v2 (the
 * unified hierarchy with the cpu controller available) the quota is cpu.max; on a hybrid
 * host (cgroup v1 cpu mounted, as on these machines) cpu.cfs_quota_us over
 * cpu.cfs_period_us. The period is 100 ms; a quota never goes below the kernel's 1 ms.
 * A task holding no CPU runs without a quota; a worker enters its cgroup only at its first
 * task that holds CPU (a cgroup competes for the CPU as one weighted group: workers that
 * hold none stay with the machine's other processes). Weights (cpu.shares, cpu.weight)
 * follow what is held: the raylet's directory weighs as the node's CPUs, each worker as
 * the CPU its task holds, so contention is shared as the accounts are. Directories of raylets that are gone
 * (killed with -9) are removed when the next raylet on the machine starts.
 *
 * Owned by the raylet's loop thread. Every call takes a NULL quota (shares not enforced
 * on this node) as a no-op.
 */
#ifndef RAYLET_CPU_QUOTA_H
#define RAYLET_CPU_QUOTA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct cpu_quota cpu_quota;

/* Finds a cpu controller this process may write (root: NULL to find it from
 * /proc/self/mountinfo, or a controller directory to use) and makes the raylet's
 * directory, weighted like node_cpu processes (fixed point: the node's CPUs) against the
 * machine's others. NULL, with a one-line reason in why, when shares cannot be enforced
 * here (no cpu controller, read-only, not permitted). */
cpu_quota *cpu_quota_new(const char *root, int64_t node_cpu, char *why, size_t whylen);

/* "cgroup v1" or "cgroup v2": how shares are enforced. */
const char *cpu_quota_kind(const cpu_quota *q);

/* Makes the worker's cgroup and moves pid (the whole process) into it, without a quota.
 * Returns 0, or -1 (logged) when the kernel refused: the worker then runs unenforced. */
int cpu_quota_add(cpu_quota *q, const char *worker_id, pid_t pid);

/* Sets the worker's quota and weight to cpu (fixed point, ESC_QTY_SCALE per CPU); cpu <= 0
 * lifts the quota. Returns 0, or -1 (logged). */
int cpu_quota_set(cpu_quota *q, const char *worker_id, int64_t cpu);

/* Removes the worker's cgroup (its processes must be gone: the kernel refuses to remove
 * a cgroup with processes in it). */
void cpu_quota_remove(cpu_quota *q, const char *worker_id);

/* Removes the raylet's directory (and worker cgroups left in it) and frees q. */
void cpu_quota_free(cpu_quota *q);

#endif
