/* raylet.c: wiring of the raylet's parts, its start, its loop turn and its shutdown.
 *
 * Work posted to the loop (RPC handlers, stream events) only changes state and marks
 * what is dirty; an ev_prepare watcher, which libev runs after each batch of callbacks
 * and before it blocks again, then re-examines the lease queue and hands the report
 * thread the new applied seq and, when the table changed, a fresh copy of the rows. So
 * a burst of events costs one copy and one report, and the ack goes out in the same
 * loop turn that applied the event. */
#include "raylet.h"

#include "cpu_quota.h"
#include "daemon_calls.h"
#include "resource_rows.h"
#include "lease_service.h"
#include "object_service.h"
#include "log_apply.h"
#include "log_service.h"
#include "gcs_link.h"
#include "node_detect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actor_manager.h"
#include "admission.h"
#include "cluster_view.h"
#include "peers.h"
#include "results.h"
#include "ids.h"
#include "log.h"
#include "object_fetch.h"
#include "rpc_async.h"
#include "stale_sockets.h"
#include "port_probe.h"
#include "user_dirs.h"
#include "task_manager.h"
#include "job_mirror.h"
#include "packages.h"
#include "worker_pool.h"
#include "qty.h"

void raylet_fail(raylet *r, int code)
{
    if (r->exit_code == 0)
        r->exit_code = code;
    esc_loop_stop(r->loop);
}

static void on_stop_due(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    raylet *r = t->data;
    ESC_INFO("the cluster stopped and its GCS did not come back within %d ms: exiting",
             r->cfg.exit_on_stop_ms);
    esc_loop_stop(r->loop);
}

void raylet_cluster_stopping(raylet *r, bool stop_all)
{
    if (stop_all) {
        ESC_INFO("the whole cluster is stopping: exiting");
        esc_loop_stop(r->loop);
        return;
    }
    if (r->cfg.exit_on_stop_ms < 0) {
        ESC_INFO("the GCS is stopping; retrying until it is back");
        return;
    }
    ESC_INFO("the GCS is stopping; exiting in %d ms unless it is back", r->cfg.exit_on_stop_ms);
    ev_timer_stop(esc_loop_ev(r->loop), &r->stop_timer);
    ev_timer_set(&r->stop_timer, r->cfg.exit_on_stop_ms / 1e3, 0.);
    ev_timer_start(esc_loop_ev(r->loop), &r->stop_timer);
}

void raylet_cluster_back(raylet *r)
{
    if (!ev_is_active(&r->stop_timer))
        return;
    ESC_INFO("the GCS is back: staying");
    ev_timer_stop(esc_loop_ev(r->loop), &r->stop_timer);
}

void raylet_changed(raylet *r, bool may_admit)
{
    if (may_admit)
        r->queue_dirty = true;
}

/* Rows that changed only because tasks started or ended (held quantities), and the
 * queue's demand, are copied at most this often: a copy is as big as the node's table (thousands of ephemeral
 * resources), and nothing waits for held quantities but status and other raylets'
 * spillback, which can live with a few milliseconds. The applied seq (the ack that
 * WaitApplied waits for) is never held back. */
#define ROWS_MIN_INTERVAL_MS 20

static void on_rows_due(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    raylet_flush(t->data);
}

/* True when the rows may be copied now; else the copy is due when the timer fires. */
static bool rows_due(raylet *r)
{
    uint64_t now = esc_now_ms();
    if (r->force_publish || now >= r->rows_published_ms + ROWS_MIN_INTERVAL_MS)
        return true;
    if (!ev_is_active(&r->rows_timer)) {
        uint64_t due = r->rows_published_ms + ROWS_MIN_INTERVAL_MS - now;
        ev_timer_set(&r->rows_timer, (double)due / 1e3, 0.);
        ev_timer_start(esc_loop_ev(r->loop), &r->rows_timer);
    }
    return false;
}

/* The queue's demand, when it moved since the last report (computed from the shapes,
 * not the queue: task_manager.c). */
static void publish_demand(raylet *r)
{
    uint64_t v = task_manager_queue_version(r->tasks);
    if (v == r->published_queue_version)
        return;
    r->published_queue_version = v;
    size_t n = 0;
    Escher__Demand **d = task_manager_demand(r->tasks, &n);
    gcs_link_publish_demand(r->link, d, n);
}

static void publish_if_changed(raylet *r)
{
    if (!r->registered || r->stopping)
        return;
    uint64_t v = accounting_version(r->acct);
    bool rows_changed = r->force_publish || v != r->published_version;
    bool demand_changed =
        r->tasks && task_manager_queue_version(r->tasks) != r->published_queue_version;
    bool changed = rows_changed || demand_changed;
    if (changed && r->applied_seq == r->published_seq && !rows_due(r))
        return;
    if (!changed && r->applied_seq == r->published_seq)
        return;
    if (changed)
        r->rows_published_ms = esc_now_ms();
    if (demand_changed)
        publish_demand(r);
    resource_rows *rows =
        rows_changed ? resource_rows_build(r->acct, gcs_link_take_spare(r->link)) : NULL;
    r->published_version = v;
    r->published_seq = r->applied_seq;
    r->force_publish = false;
    gcs_link_publish(r->link, r->applied_seq, rows);
}

void raylet_flush(raylet *r)
{
    /* The ack first, so a long queue or freeing a big event does not delay it; grants
     * then publish again. */
    publish_if_changed(r);
    log_apply_free_spent(r);
    if (r->queue_dirty) {
        r->queue_dirty = false;
        if (admission_count(r->admission) > 0) {
            admission_reexamine(r->admission);
            publish_if_changed(r);
        }
    }
    /* Last: whatever ended in this turn, re-examination included, is told now. */
    if (r->tasks)
        results_flush(r->results);
}

static void on_prepare(struct ev_loop *ev, ev_prepare *w, int revents)
{
    (void)ev;
    (void)revents;
    raylet_flush(w->data);
}

/* "host:port", with brackets around an IPv6 host. */
static void log_node(const raylet *r)
{
    char line[768];
    size_t off = 0;
    for (size_t i = 0; i < r->node.nphysical && off < sizeof line - 80; i++) {
        char q[40];
        const raylet_amount *a = &r->node.physical[i];
        int n = snprintf(line + off, sizeof line - off, "%s%s=%s", i ? " " : "", a->name,
                         a->unbounded ? "inf" : esc_qty_format(a->qty, q, sizeof q));
        if (n > 0)
            off += (size_t)n;
    }
    ESC_INFO("node %s at %s: %s", r->node.hostname, r->address, line);
}

/* The object store's capacity: the node's object_store_memory, in bytes. */
static uint64_t store_capacity(const node_info *n)
{
    for (size_t i = 0; i < n->nphysical; i++)
        if (!strcmp(n->physical[i].name, "object_store_memory"))
            return (uint64_t)(n->physical[i].qty / ESC_QTY_SCALE);
    return 0;
}

/* mkdir -p, for the default log and socket folders. */
static int make_dirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* escher-worker lives next to escher-raylet (the build and the install put them
 * together). */
static void worker_exe(char *out, size_t len)
{
    char self[PATH_MAX - 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(out, len, "%s/escher-worker", n > 0 ? self : ".");
}

/* A package fetch ended: the tasks that waited for it run, or fail with why. */
static void on_package_ready(void *ud, const char *hash, const char *why)
{
    raylet *r = ud;
    task_manager_package_ready(r->tasks, hash, why);
}

static int64_t node_cpus(const raylet *r)
{
    for (size_t i = 0; i < r->node.nphysical; i++)
        if (!strcmp(r->node.physical[i].name, "CPU"))
            return r->node.physical[i].qty;
    return 0;
}

/* CPU shares are enforced where a cgroup cpu controller is writable (cpu_quota.h), unless
 * --no-cpu-quota; either way the node says so in its NodeInfo. */
static void start_quota(raylet *r)
{
    char why[256] = "disabled by --no-cpu-quota";
    if (!r->cfg.no_cpu_quota)
        r->quota = cpu_quota_new(NULL, node_cpus(r), why, sizeof why);
    if (r->quota)
        snprintf(r->cpu_shares, sizeof r->cpu_shares, "%s", cpu_quota_kind(r->quota));
    else
        snprintf(r->cpu_shares, sizeof r->cpu_shares, "%s", why);
    ESC_INFO("CPU shares %s: %s", r->quota ? "enforced" : "not enforced", r->cpu_shares);
}

static int start_workers(raylet *r, char *err, size_t errlen)
{
    char exe[PATH_MAX], sock[108], logs[PATH_MAX], base[64];
    worker_exe(exe, sizeof exe);
    /* /tmp/escher-<uid>: this user's, checked (user_dirs.h); sockets and default logs. */
    esc_user_tmp_dir(base, sizeof base);
    if (esc_user_dir_make(base, err, errlen) != 0)
        return -1;
    if (r->cfg.log_dir)
        snprintf(logs, sizeof logs, "%s", r->cfg.log_dir);
    else
        snprintf(logs, sizeof logs, "%s/logs/raylet-%d", base, (int)getpid());
    snprintf(sock, sizeof sock, "%s/raylet-%d.sock", ESC_SOCKET_DIR, (int)getpid());
    if (make_dirs(logs) != 0 || make_dirs(ESC_SOCKET_DIR) != 0) {
        snprintf(err, errlen, "cannot create %s or %s: %s", logs, ESC_SOCKET_DIR,
                 strerror(errno));
        return -1;
    }
    /* Raylets killed with -9 leave their sockets here; nothing else removes them. */
    size_t stale = esc_remove_stale_sockets(ESC_SOCKET_DIR);
    if (stale)
        ESC_INFO("removed %zu worker sockets of raylets that are gone", stale);
    snprintf(r->log_dir, sizeof r->log_dir, "%s", logs);
    r->jobs = job_mirror_new();
    /* Package copies: this raylet's own directory, named by its pid, so that raylets
     * sharing a log directory (tests, several nodes on one machine) never share one. */
    char pkgs[PATH_MAX];
    snprintf(pkgs, sizeof pkgs, "%.4000s/packages/raylet-%d", logs, (int)getpid());
    r->packages = packages_new(esc_loop_ev(r->loop), pkgs, r->cfg.gcs_address, r->cfg.token,
                               on_package_ready, r, err, errlen);
    if (!r->packages)
        return -1;
    start_quota(r);
    worker_pool_config pc = {.worker_exe = exe, .socket_path = sock, .log_dir = logs,
                             .package_root = packages_root(r->packages), .quota = r->quota};
    r->pool = worker_pool_new(esc_loop_ev(r->loop), &pc, err, errlen);
    return r->pool ? 0 : -1;
}

/* Objects arriving here wake the tasks and actor calls that wait for them as arguments. */
static void on_object_arrived(void *ud, const char *id)
{
    raylet *r = ud;
    task_manager_object_arrived(r->tasks, id);
    actor_manager_object_arrived(r->actors, id);
}

static void on_fetch_failed(void *ud, const char *id, const char *why)
{
    raylet *r = ud;
    task_manager_object_failed(r->tasks, id, why);
    actor_manager_object_failed(r->actors, id, why);
}

int raylet_start(raylet *r, char *err, size_t errlen)
{
    node_detected d;
    node_detect(&d, !r->cfg.has_num_gpus);
    node_info_build(&r->node, &r->cfg, &d);

    r->acct = accounting_new();
    if (!r->acct) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < r->node.nphysical; i++)
        accounting_set_physical(r->acct, r->node.physical[i].name, r->node.physical[i].qty,
                              r->node.physical[i].unbounded);

    r->loop = esc_loop_new();
    esc_loop_stop_on_signals(r->loop);
    r->admission = admission_new();
    r->leases = lease_service_new(r);
    r->async = esc_rpc_async_new(esc_loop_post, r->loop); /* before the objects: they use it */
    r->objects = object_service_new(r, store_capacity(&r->node));
    r->view = cluster_view_new();
    r->peers = peers_new(r, r->cfg.forward_timeout_ms);
    r->results = results_new(r);
    r->tasks = task_manager_new(r);
    r->actors = actor_manager_new(r);
    r->fetcher = object_fetch_new(r);
    if (!r->fetcher) {
        snprintf(err, errlen, "cannot start the object fetch threads");
        return -1;
    }
    object_waiters waiters = {on_object_arrived, on_fetch_failed, r};
    object_service_set_waiters(r->objects, &waiters);
    if (start_workers(r, err, errlen) != 0)
        return -1;
    r->logs = log_service_new(r);
    char listen[300];
    esc_host_port(listen, sizeof listen, r->cfg.bind, r->cfg.port);
    if (esc_port_probe(r->cfg.bind, r->cfg.port, err, errlen) != 0)
        return -1;
    r->server = esc_rpc_server_new(listen, r->cfg.token, esc_loop_post, r->loop, err, errlen);
    if (!r->server)
        return -1;
    if (lease_service_serve(r->leases, r->server) != 0 ||
        object_service_serve(r->objects, r->server) != 0 ||
        task_manager_serve(r->tasks, r->server) != 0 ||
        results_serve(r->results, r->server) != 0 ||
        log_service_serve(r->logs, r->server) != 0 ||
        esc_daemon_calls_apply(r->server, r->cfg.daemon_key) != 0 ||
        esc_rpc_server_start(r->server) != 0) {
        snprintf(err, errlen, "cannot start the gRPC server on %s", listen);
        return -1;
    }
    esc_host_port(r->address, sizeof r->address, r->cfg.node_ip, esc_rpc_server_port(r->server));
    log_node(r);
    if (raylet_metrics_start(r, err, errlen) != 0)
        return -1;

    struct ev_loop *ev = esc_loop_ev(r->loop);
    ev_prepare_init(&r->flush, on_prepare);
    r->flush.data = r;
    ev_prepare_start(ev, &r->flush);
    ev_unref(ev); /* the flush watcher alone does not keep the loop running */
    ev_timer_init(&r->rows_timer, on_rows_due, 0., 0.);
    ev_timer_init(&r->stop_timer, on_stop_due, 0., 0.);
    r->stop_timer.data = r;
    r->rows_timer.data = r;

    r->link = gcs_link_new(r);
    if (gcs_link_start(r->link) != 0) {
        snprintf(err, errlen, "cannot start the GCS report thread");
        return -1;
    }
    return 0;
}

esc_rpc_channel *raylet_channel_new(const raylet *r, const char *address)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(address, r->cfg.token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, r->cfg.daemon_key);
    return ch;
}

void raylet_run(raylet *r)
{
    esc_loop_run(r->loop);
}

int raylet_shutdown(raylet *r)
{
    r->stopping = true;
    if (r->loop)
        ESC_INFO("shutting down");
    raylet_metrics_stop(r);
    gcs_link_stop(r->link);
    esc_rpc_server_free(r->server);
    r->server = NULL;
    /* Running tasks end (and store their error objects) while the store still exists;
     * then the forwarding thread drains; then the loop runs what they posted. */
    worker_pool_free(r->pool);
    r->pool = NULL;
    cpu_quota_free(r->quota); /* after the workers: a cgroup with processes stays */
    r->quota = NULL;
    results_stop(r->results);
    peers_stop(r->peers); /* forwards not made end as failures, posted to the loop */
    task_manager_stop(r->tasks);
    object_service_stop(r->objects); /* nothing more goes out on the queue freed now */
    esc_rpc_async_free(r->async);
    r->async = NULL;
    object_fetch_stop(r->fetcher);
    if (r->loop)
        esc_loop_drain(r->loop);
    task_manager_free(r->tasks);
    r->tasks = NULL;
    actor_manager_free(r->actors);
    r->actors = NULL;
    object_fetch_free(r->fetcher);
    r->fetcher = NULL;
    packages_free(r->packages); /* its callback wakes tasks: after the task manager */
    r->packages = NULL;
    job_mirror_free(r->jobs);
    r->jobs = NULL;
    /* After everything that may still store a result (the actors' pending calls). */
    results_free(r->results);
    r->results = NULL;
    peers_free(r->peers);
    r->peers = NULL;
    cluster_view_free(r->view);
    r->view = NULL;
    lease_service_free(r->leases);
    r->leases = NULL;
    admission_free(r->admission); /* after both kinds took their entries out */
    r->admission = NULL;
    log_service_free(r->logs); /* like pulls: after the drain ran what calls posted */
    r->logs = NULL;
    object_service_free(r->objects);
    r->objects = NULL;
    gcs_link_free(r->link);
    r->link = NULL;
    if (r->loop) {
        struct ev_loop *ev = esc_loop_ev(r->loop);
        if (ev_is_active(&r->flush)) {
            ev_ref(ev);
            ev_prepare_stop(ev, &r->flush);
        }
        ev_timer_stop(ev, &r->rows_timer);
        ev_timer_stop(ev, &r->stop_timer);
        esc_loop_free(r->loop);
        r->loop = NULL;
    }
    log_apply_free_spent(r);
    free(r->spent);
    r->spent = NULL;
    accounting_free(r->acct);
    r->acct = NULL;
    node_info_free(&r->node);
    config_free(&r->cfg);
    return r->exit_code;
}
