/* server.c: the GCS's life, shared by escher-gcs (main.c) and the tests that run a GCS
 * in their own process (tests/unit/gcs_fixture.c, the handler fuzz target): open the
 * tables and load storage, start serving, stop, close. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_calls.h"
#include "gcs.h"
#include "ids.h"
#include "log.h"
#include "metrics_http.h"
#include "port_probe.h"

static void on_sweep(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    gcs *g = t->data;
    uint64_t now = esc_now_ms();
    gcs_nodes_sweep(g, now);
    gcs_jobs_sweep(g, now);
    gcs_objects_sweep(g);
}

/* SIGUSR1 (`escher stop --all`): every raylet is told to exit now; the GCS itself
 * stops once they hung up (or after STOP_ALL_WAIT_MS), so raylets go first. */
#define STOP_ALL_WAIT_MS 5000

static void on_stop_all_tick(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    gcs *g = t->data;
    if (gcs_pubsub_raylets(g) == 0 || esc_now_ms() >= g->stop_all_deadline_ms)
        esc_loop_stop(g->loop);
}

static void on_stop_all(struct ev_loop *ev, ev_signal *w, int revents)
{
    (void)revents;
    gcs *g = w->data;
    if (g->stop_all)
        return;
    ESC_INFO("stopping the whole cluster (SIGUSR1): %zu raylet(s) told to exit",
             gcs_pubsub_raylets(g));
    g->stop_all = true;
    gcs_pubsub_stopping(g);
    g->stop_all_deadline_ms = esc_now_ms() + STOP_ALL_WAIT_MS;
    ev_timer_init(&g->stop_all_timer, on_stop_all_tick, 0.05, 0.05);
    g->stop_all_timer.data = g;
    ev_timer_start(ev, &g->stop_all_timer);
}

static void register_services(gcs *g)
{
    gcs_nodes_register(g);
    gcs_pubsub_register(g);
    gcs_registry_register(g);
    gcs_wait_register(g);
    gcs_status_register(g);
    gcs_jobs_register(g);
    gcs_grants_register(g);
    gcs_kv_register(g);
    gcs_packages_register(g);
    gcs_objects_register(g);
    gcs_history_register(g);
}

static void gcs_free_tables(gcs *g)
{
    gcs_nodes_free(g);
    gcs_registry_free(g);
    gcs_jobs_free(g);
    gcs_kv_free(g);
    gcs_objects_free(g);
    gcs_ring_free(&g->ring);
    gcs_history_free(g);
}

int gcs_start(gcs *g)
{
    char err[512], addr[300];
    snprintf(addr, sizeof addr, "%s:%d", g->cfg.bind, g->cfg.port);
    /* From here on writes reach storage from the loop, without blocking it; the loading
     * before this point could stay synchronous, as nothing was served yet. */
    if (esc_storage_attach(g->store, esc_loop_ev(g->loop), err, sizeof err) != 0) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    if (esc_port_probe(g->cfg.bind, g->cfg.port, err, sizeof err) != 0) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    g->server = esc_rpc_server_new(addr, g->cfg.token, esc_loop_post, g->loop, err, sizeof err);
    if (!g->server) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    /* The GCS stores strings and echoes them back (entrypoints, KV keys, labels): one
     * that is not UTF-8 would break every strict client reading it later. */
    esc_rpc_server_require_utf8(g->server);
    register_services(g);
    if (esc_daemon_calls_apply(g->server, g->cfg.daemon_key) != 0) {
        fprintf(stderr, "escher-gcs: bad daemon-only call table\n");
        return 1;
    }
    gcs_load_init(g);
    if (gcs_metrics_start(g) != 0)
        return 1;
    if (gcs_dashboard_start(g) != 0)
        return 1;
    if (esc_rpc_server_start(g->server) != 0) {
        fprintf(stderr, "escher-gcs: cannot start the server\n");
        return 1;
    }
    int port = esc_rpc_server_port(g->server);
    if (g->cfg.port_file && esc_metrics_write_port_file(g->cfg.port_file, port) != 0) {
        fprintf(stderr, "escher-gcs: cannot write %s: %s\n", g->cfg.port_file, strerror(errno));
        return 1;
    }
    ESC_INFO("serving on %s:%d (storage %s)", g->cfg.bind, port, g->cfg.storage_uri);
    double period = g->cfg.node_timeout_ms / 4000.0;
    ev_timer_init(&g->sweep, on_sweep, period, period > 0.25 ? 0.25 : period);
    g->sweep.data = g;
    ev_timer_start(esc_loop_ev(g->loop), &g->sweep);
    ev_signal_init(&g->stop_all_sig, on_stop_all, SIGUSR1);
    g->stop_all_sig.data = g;
    ev_signal_start(esc_loop_ev(g->loop), &g->stop_all_sig);
    ev_unref(esc_loop_ev(g->loop)); /* the watcher alone does not keep the loop running */
    return 0;
}

void gcs_stop(gcs *g)
{
    /* The loop ends on SIGTERM/SIGINT or after a stop of the whole cluster: a clean
     * stop, which the raylets hear of (gcs_pubsub_close_all). */
    g->clean_stop = true;
    ev_ref(esc_loop_ev(g->loop));
    ev_signal_stop(esc_loop_ev(g->loop), &g->stop_all_sig);
    if (g->stop_all)
        ev_timer_stop(esc_loop_ev(g->loop), &g->stop_all_timer);
    ev_timer_stop(esc_loop_ev(g->loop), &g->sweep);
    gcs_load_stop(g);
    gcs_metrics_stop(g);
    gcs_dashboard_stop(g);
    ESC_INFO("shutting down");
}


int gcs_open(gcs *g, const gcs_config *cfg, char *err, size_t errlen)
{
    esc_storage *store = esc_storage_open(cfg->storage_uri, err, errlen);
    if (!store) {
        memset(g, 0, sizeof *g);
        return -1;
    }
    return gcs_open_store(g, cfg, store, err, errlen);
}

int gcs_open_store(gcs *g, const gcs_config *cfg, esc_storage *store, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    g->cfg = *cfg;
    g->store = store;
    g->loop = esc_loop_new();
    g->nodes = esc_strmap_new();
    g->registry = esc_strmap_new();
    g->ns_rows = esc_strmap_new();
    g->jobs = esc_strmap_new();
    g->kv = esc_strmap_new();
    gcs_ring_init(&g->ring, 65536);
    gcs_writes_init(g);
    gcs_objects_init(g);
    gcs_history_init(g);
    err[0] = '\0';
    if (gcs_persist_load(g, err, errlen) == 0)
        return 0;
    if (!err[0])
        snprintf(err, errlen, "cannot load the stored state");
    return -1;
}

void gcs_close(gcs *g)
{
    if (!g->loop) {
        /* The storage did not open: nothing else was made. */
        return;
    }
    gcs_writes_close_all(g); /* closes the store */
    gcs_pubsub_close_all(g);
    gcs_wait_close_all(g);
    gcs_objects_close_all(g);
    gcs_metrics_stop(g); /* when gcs_start failed after starting it */
    gcs_dashboard_stop(g);
    esc_rpc_server_free(g->server);
    esc_loop_drain(g->loop);
    gcs_free_tables(g);
    gcs_writes_free(g);
    esc_loop_free(g->loop);
    esc_storage_close(g->store);
}
