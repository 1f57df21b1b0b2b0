/* packages.c: the node's package cache (packages.h).
 *
 * A fetch is blocking work (KV reads, hashing, tar), so each runs on a thread of its
 * own and hands its outcome back to the loop through an ev_async: fetches are rare (one
 * per package per node), and a thread per fetch keeps one slow package from delaying
 * another. A package that is ready costs a task one map lookup. */
#include "packages.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ids.h"
#include "log.h"
#include "package.h"
#include "rpc.h"
#include "strmap.h"
#include "xalloc.h"

typedef enum { PKG_FETCHING, PKG_READY } pkg_state;

typedef struct pkg {
    struct pkg *next_done; /* on the list of fetches handed back to the loop */
    packages *pk;
    char hash[ESC_PACKAGE_HEX + 1];
    pkg_state state;
    esc_strmap *jobs; /* job ids that used it here (values unused) */
    pthread_t thread;
    /* the fetch's outcome, written by its thread before it is handed back */
    int code;
    char error[300];
    uint64_t bytes, ms;
} pkg;

struct packages {
    struct ev_loop *loop;
    char *root;
    esc_rpc_channel *gcs;
    packages_ready_fn fn;
    void *ud;
    esc_strmap *pkgs; /* hash -> pkg */
    ev_async wake;
    pthread_mutex_t mu;
    pkg *done; /* fetches ended, not yet taken by the loop (under mu) */
};

static void pkg_dir(const packages *pk, const char *hash, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", pk->root, hash);
}

static void pkg_free(pkg *p)
{
    esc_strmap_free(p->jobs);
    free(p);
}

/* Drops p and its directory. */
static void pkg_remove(packages *pk, pkg *p)
{
    char dir[4200];
    pkg_dir(pk, p->hash, dir, sizeof dir);
    if (esc_package_remove_tree(dir) != 0)
        ESC_WARN("package %.16s...: cannot remove %s: %s", p->hash, dir, strerror(errno));
    else
        ESC_DEBUG("package %.16s...: no job uses it here, removed", p->hash);
    esc_strmap_del(pk->pkgs, p->hash);
    pkg_free(p);
}

/* ------------------------------------------------------------------ fetching */

static void *fetch_main(void *arg)
{
    pkg *p = arg;
    packages *pk = p->pk;
    char dir[4200];
    pkg_dir(pk, p->hash, dir, sizeof dir);
    esc_status st = {0};
    uint64_t t0 = esc_now_ms();
    p->code = esc_package_fetch(pk->gcs, p->hash, dir, &p->bytes, &st);
    p->ms = esc_now_ms() - t0;
    snprintf(p->error, sizeof p->error, "%s", st.message);
    pthread_mutex_lock(&pk->mu);
    p->next_done = pk->done;
    pk->done = p;
    pthread_mutex_unlock(&pk->mu);
    ev_async_send(pk->loop, &pk->wake);
    return NULL;
}

/* One fetch handed back: the package is ready (or dropped, if no job wants it any more),
 * or forgotten so that the next task tries again; the waiting tasks learn which. */
static void fetch_ended(packages *pk, pkg *p)
{
    pthread_join(p->thread, NULL);
    char hash[sizeof p->hash], why[400];
    snprintf(hash, sizeof hash, "%s", p->hash);
    if (p->code != ESC_OK) {
        snprintf(why, sizeof why, "cannot fetch the job's package: %s", p->error);
        ESC_WARN("%s", why);
        esc_strmap_del(pk->pkgs, p->hash);
        pkg_free(p);
        pk->fn(pk->ud, hash, why);
        return;
    }
    ESC_INFO("package %.16s... fetched: %llu bytes in %llu ms", hash,
             (unsigned long long)p->bytes, (unsigned long long)p->ms);
    p->state = PKG_READY;
    if (esc_strmap_count(p->jobs) == 0)
        pkg_remove(pk, p);
    pk->fn(pk->ud, hash, NULL);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop;
    (void)revents;
    packages *pk = w->data;
    pthread_mutex_lock(&pk->mu);
    pkg *list = pk->done;
    pk->done = NULL;
    pthread_mutex_unlock(&pk->mu);
    while (list) {
        pkg *p = list;
        list = p->next_done;
        fetch_ended(pk, p);
    }
}

static pkg *start_fetch(packages *pk, const char *hash)
{
    pkg *p = esc_xcalloc(1, sizeof *p);
    p->pk = pk;
    snprintf(p->hash, sizeof p->hash, "%s", hash);
    p->state = PKG_FETCHING;
    p->jobs = esc_strmap_new();
    int e = pthread_create(&p->thread, NULL, fetch_main, p);
    if (e != 0) {
        ESC_ERROR("package %.16s...: cannot start a fetch thread: %s", hash, strerror(e));
        pkg_free(p);
        return NULL;
    }
    esc_strmap_put(pk->pkgs, hash, p);
    return p;
}

/* ------------------------------------------------------------------ the interface */

/* Caches of raylets that died without removing theirs ("raylet-<pid>" beside root,
 * whose process is gone), and root itself, made fresh. */
static int sweep_and_make(const char *root)
{
    char parent[4200];
    snprintf(parent, sizeof parent, "%s", root);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    if (mkdir(parent, 0755) != 0 && errno != EEXIST)
        return -1;
    DIR *d = opendir(parent);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int pid;
        char path[4500];
        if (sscanf(de->d_name, "raylet-%d", &pid) != 1 || pid <= 0 ||
            kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(path, sizeof path, "%s/%s", parent, de->d_name);
        esc_package_remove_tree(path);
    }
    if (d)
        closedir(d);
    if (esc_package_remove_tree(root) != 0)
        return -1;
    return mkdir(root, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

packages *packages_new(struct ev_loop *loop, const char *root, const char *gcs_address,
                       const char *token, packages_ready_fn fn, void *ud, char *err,
                       size_t errlen)
{
    /* What raylets that died left there is known to no one now. */
    if (sweep_and_make(root) != 0) {
        snprintf(err, errlen, "cannot make the package cache %s: %s", root, strerror(errno));
        return NULL;
    }
    packages *pk = esc_xcalloc(1, sizeof *pk);
    pk->loop = loop;
    pk->root = esc_xstrdup(root);
    pk->gcs = esc_rpc_channel_new(gcs_address, token);
    pk->fn = fn;
    pk->ud = ud;
    pk->pkgs = esc_strmap_new();
    pthread_mutex_init(&pk->mu, NULL);
    ev_async_init(&pk->wake, on_wake);
    pk->wake.data = pk;
    ev_async_start(loop, &pk->wake);
    return pk;
}

const char *packages_root(const packages *pk)
{
    return pk->root;
}

bool packages_use(packages *pk, const char *hash, const char *job_id)
{
    if (!pk)
        return true;
    pkg *p = esc_strmap_get(pk->pkgs, hash);
    if (!p && !(p = start_fetch(pk, hash)))
        return true; /* no thread: the worker reports the package missing */
    if (!esc_strmap_get(p->jobs, job_id))
        esc_strmap_put(p->jobs, job_id, p);
    return p->state == PKG_READY;
}

bool packages_ready(const packages *pk, const char *hash)
{
    const pkg *p = pk ? esc_strmap_get(pk->pkgs, hash) : NULL;
    return p && p->state == PKG_READY;
}

void packages_job_ended(packages *pk, const char *job_id)
{
    if (!pk)
        return;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(pk->pkgs, &pos, &k, &v)) {
        pkg *p = v;
        if (!esc_strmap_del(p->jobs, job_id) || esc_strmap_count(p->jobs) > 0)
            continue;
        if (p->state == PKG_READY)
            pkg_remove(pk, p); /* deleting the entry just returned is allowed */
    }
}

void packages_free(packages *pk)
{
    if (!pk)
        return;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(pk->pkgs, &pos, &k, &v)) {
        pkg *p = v;
        if (p->state == PKG_FETCHING)
            pthread_join(p->thread, NULL);
        pkg_free(p);
    }
    ev_async_stop(pk->loop, &pk->wake);
    esc_package_remove_tree(pk->root);
    esc_strmap_free(pk->pkgs);
    esc_rpc_channel_free(pk->gcs);
    pthread_mutex_destroy(&pk->mu);
    free(pk->root);
    free(pk);
}
