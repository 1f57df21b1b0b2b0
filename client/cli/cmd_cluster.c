/* cmd_cluster.c: `escher up`, `escher down`, `escher exec` and `escher attach`: a
 * cluster described by a cluster file (cluster_file.c), started over SSH (ssh.c).
 *
 * Each host gets a session directory (the cluster file's session_dir) in the layout of
 * docs/processes.md, so `escher status` and `escher stop --session-dir` work there. Its
 * daemons run under systemd (systemd: true, and systemd runs on the host) or under
 * supervise.sh, a shell loop this file writes into the session directory: it restarts
 * its daemon when that exits with anything but status 0, and stops it on SIGTERM.
 *
 * Local state, ~/.escher/clusters/<name>/: known_hosts (ssh's), and hosts/<host> for
 * each host `up` started something on: its role, session directory, install prefix and
 * the hash of its configuration. `down` stops exactly those. */
#include "cli.h"
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cluster_units.h"
#include "xalloc.h"

#define UP_TIMEOUT_S 60

/* ------------------------------------------------------------------ remote scripts */

/* The supervisor (written to <session>/supervise.sh): supervise.sh NAME EXE ARGS... */
static const char supervise_sh[] =
    "#!/bin/sh\n"
    "# supervise.sh NAME EXE ARGS...: written by `escher up`. Runs EXE, and runs it again\n"
    "# 1 s after it exits with any status but 0; SIGTERM stops it (and EXE) for good.\n"
    "sd=$(dirname \"$0\"); name=$1; shift\n"
    "echo $$ > \"$sd/sup/$name.pid\"\n"
    "child=; stopping=\n"
    "trap 'stopping=1; [ -n \"$child\" ] && kill -TERM \"$child\" 2>/dev/null' TERM INT\n"
    "exe=$(readlink -f \"$1\")\n"
    "while :; do\n"
    "  \"$@\" </dev/null >>\"$sd/logs/$name.log\" 2>&1 &\n"
    "  child=$!\n"
    "  ticks=$(cut -d' ' -f22 /proc/$child/stat 2>/dev/null)\n"
    "  [ -n \"$ticks\" ] && echo \"$child $ticks $exe\" > \"$sd/pids/$name.pid\"\n"
    "  wait \"$child\"; rc=$?\n"
    "  while [ -n \"$stopping\" ] && kill -0 \"$child\" 2>/dev/null; do wait \"$child\"; done\n"
    "  if [ -n \"$stopping\" ] || [ \"$rc\" -eq 0 ]; then\n"
    "    rm -f \"$sd/pids/$name.pid\" \"$sd/sup/$name.pid\"; exit 0\n"
    "  fi\n"
    "  echo \"supervise.sh: $name exited with status $rc; restarting it in 1 s\" >>\"$sd/logs/$name.log\"\n"
    "  sleep 1\n"
    "  [ -n \"$stopping\" ] && { rm -f \"$sd/pids/$name.pid\" \"$sd/sup/$name.pid\"; exit 0; }\n"
    "done\n";

/* Shell functions every script starts with (after SD and P are set). */
static const char functions_sh[] =
    "sup_alive() {\n"
    "  spid=$(cat \"$SD/sup/$1.pid\" 2>/dev/null) && [ -n \"$spid\" ] &&\n"
    "    tr '\\0' ' ' </proc/$spid/cmdline 2>/dev/null | grep -qF \"$SD/supervise.sh $1 \"\n"
    "}\n"
    "running() {\n"
    "  if [ -f \"$SD/systemd\" ]; then systemctl is-active -q \"escher-$1.service\"; else sup_alive \"$1\"; fi\n"
    "}\n"
    "stop_all() {\n"
    "  if [ -f \"$SD/systemd\" ]; then\n"
    "    systemctl disable --now escher-raylet.service escher-gcs.service >/dev/null 2>&1\n"
    "    rm -f /etc/systemd/system/escher-gcs.service /etc/systemd/system/escher-raylet.service\n"
    "    rm -f /etc/escher/escher-gcs.env /etc/escher/escher-raylet.env\n"
    "    systemctl daemon-reload\n"
    "  fi\n"
    "  for n in raylet gcs; do sup_alive $n && kill -TERM \"$spid\"; done\n"
    "  i=0\n"
    "  while { sup_alive raylet || sup_alive gcs; } && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done\n"
    "  for n in raylet gcs; do sup_alive $n && kill -KILL \"$spid\"; done\n"
    "  if [ -d \"$SD/pids\" ] && [ -x \"$P/bin/escher\" ]; then\n"
    "    \"$P/bin/escher\" stop --session-dir \"$SD\" >/dev/null 2>&1\n"
    "  fi\n"
    "  [ \"${1:-}\" = keep ] || rm -rf \"$SD\"\n"
    "}\n"
    "wait_file() {\n"
    "  i=0\n"
    "  while [ ! -s \"$SD/$1\" ]; do\n"
    "    i=$((i+1))\n"
    "    if [ $i -gt 300 ] || grep -q '^supervise.sh: ' \"$SD/logs/$2.log\" 2>/dev/null; then\n"
    "      echo \"start $2: $(grep -v '^supervise.sh: ' \"$SD/logs/$2.log\" 2>/dev/null | tail -n 1)"
    " (not ready; log: $SD/logs/$2.log)\" >&2\n"
    "      stop_all keep; exit 1\n"
    "    fi\n"
    "    sleep 0.1\n"
    "  done\n"
    "}\n";

typedef struct {
    cl_cluster *c;
    cl_host *h;
    bool head;
    char *sd;          /* session directory there */
    cl_str gcs_args[2]; /* the flags after the program: [0] shell-quoted, [1] plain (for
                         * systemd's EnvironmentFile, which splits them on whitespace) */
    cl_str raylet_args[2];
    cl_str env;        /* "export K='V'\n" lines */
    cl_str envfile;    /* "K=V\n" lines (systemd's EnvironmentFile) */
    char hash[17];
} host_plan;

static void word(cl_str *b, const char *flag, const char *value)
{
    if (!value)
        return;
    cl_printf(&b[0], " %s ", flag);
    cl_quote(&b[0], value);
    cl_printf(&b[1], " %s %s", flag, value);
}

/* A flag without a value. */
static void flag_word(cl_str *b, const char *flag)
{
    cl_printf(&b[0], " %s", flag);
    cl_printf(&b[1], " %s", flag);
}

static void sd_word(cl_str *b, const char *flag, const char *sd, const char *file)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", sd, file);
    word(b, flag, path);
}

static void map_words(cl_str *b, const char *flag, const cl_map *m)
{
    if (!m->n)
        return;
    cl_str list = {0};
    cl_puts(&list, "");
    for (size_t i = 0; i < m->n; i++)
        cl_printf(&list, "%s%s=%s", i ? "," : "", m->v[i].key, m->v[i].value);
    word(b, flag, list.s);
    free(list.s);
}

static void env_lines(host_plan *p, const cl_map *m)
{
    for (size_t i = 0; i < m->n; i++) {
        cl_printf(&p->env, "export %s=", m->v[i].key);
        cl_quote(&p->env, m->v[i].value);
        cl_puts(&p->env, "\n");
        cl_printf(&p->envfile, "%s=%s\n", m->v[i].key, m->v[i].value);
    }
}

static void fnv(uint64_t *h, const char *s)
{
    for (; s && *s; s++) {
        *h ^= (unsigned char)*s;
        *h *= 1099511628211ULL;
    }
    *h ^= 0xff;
    *h *= 1099511628211ULL;
}

static void plan_host(cl_cluster *c, size_t i, const char *head_hash, host_plan *p)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    p->h = &c->hosts[i];
    p->head = i == 0;
    p->sd = cl_session_dir(c, p->h);
    for (int k = 0; k < 2; k++) {
        cl_puts(&p->gcs_args[k], "");
        cl_puts(&p->raylet_args[k], "");
    }
    cl_puts(&p->env, "");
    cl_puts(&p->envfile, "");
    char port[16], head_addr[600];
    snprintf(port, sizeof port, "%d", c->gcs_port);
    snprintf(head_addr, sizeof head_addr, "%s:%d", c->hosts[0].address, c->gcs_port);
    if (p->head) {
        word(p->gcs_args, "--port", port);
        sd_word(p->gcs_args, "--port-file", p->sd, "gcs.port");
        sd_word(p->gcs_args, "--token-file", p->sd, "token");
        sd_word(p->gcs_args, "--daemon-key-file", p->sd, "daemon_key");
        sd_word(p->gcs_args, "--operator-key-file", p->sd, "operator");
        word(p->gcs_args, "--storage", c->storage);
        word(p->gcs_args, "--node-timeout-ms", c->node_timeout_ms);
        /* Metrics on the host's address, so a Prometheus on the head reaches every node
         * through the discovery file (docs/observability.md, "Service discovery"). */
        word(p->gcs_args, "--metrics-port", "0");
        word(p->gcs_args, "--metrics-bind", c->hosts[0].address);
        sd_word(p->gcs_args, "--metrics-port-file", p->sd, "gcs.metrics_port");
        sd_word(p->gcs_args, "--metrics-sd-file", p->sd, "prometheus_sd.json");
    }
    cl_host *h = p->h;
    word(p->raylet_args, "--gcs-address", head_addr);
    sd_word(p->raylet_args, "--token-file", p->sd, "token");
    sd_word(p->raylet_args, "--daemon-key-file", p->sd, "daemon_key");
    word(p->raylet_args, "--node-ip", h->address);
    word(p->raylet_args, "--metrics-port", "0");
    word(p->raylet_args, "--metrics-bind", h->address);
    sd_word(p->raylet_args, "--metrics-port-file", p->sd, "raylet.metrics_port");
    if (p->head)
        flag_word(p->raylet_args, "--head");
    sd_word(p->raylet_args, "--node-id-file", p->sd, "node_id");
    sd_word(p->raylet_args, "--log-dir", p->sd, "logs/tasks");
    snprintf(port, sizeof port, "%d", c->raylet_port);
    word(p->raylet_args, "--port", port);
    word(p->raylet_args, "--num-cpus", h->num_cpus);
    word(p->raylet_args, "--num-gpus", h->num_gpus);
    word(p->raylet_args, "--memory", h->memory);
    word(p->raylet_args, "--object-store-memory", h->object_store_memory);
    map_words(p->raylet_args, "--resources", &h->resources);
    map_words(p->raylet_args, "--labels", &h->labels);
    cl_printf(&p->envfile, "PATH=%s/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
              c->prefix);
    env_lines(p, &c->env);
    env_lines(p, &h->env);
    uint64_t hv = 1469598103934665603ULL;
    fnv(&hv, p->head ? "head" : "worker");
    fnv(&hv, c->prefix);
    fnv(&hv, p->sd);
    fnv(&hv, c->systemd ? "systemd" : "supervise");
    fnv(&hv, p->gcs_args[0].s);
    fnv(&hv, p->raylet_args[0].s);
    fnv(&hv, p->env.s);
    fnv(&hv, head_hash);
    snprintf(p->hash, sizeof p->hash, "%016llx", (unsigned long long)hv);
}

static void plan_free(host_plan *p)
{
    free(p->sd);
    for (int k = 0; k < 2; k++) {
        free(p->gcs_args[k].s);
        free(p->raylet_args[k].s);
    }
    free(p->env.s);
    free(p->envfile.s);
}

/* SD, P, the environment and the functions. */
static void prelude(cl_str *b, const char *sd, const char *prefix, const char *env)
{
    cl_puts(b, "SD=");
    cl_quote(b, sd);
    cl_puts(b, "\nP=");
    cl_quote(b, prefix);
    /* The installed layout (docs/deploy.md, "Installing the SDK"): every program in
     * <prefix>/bin, found next to each other, and <prefix>/bin on the daemons' PATH
     * (escher-gang-ghost is run by name). A build directory's ESCHER_BIN_DIR does not
     * apply there. */
    cl_puts(b, "\nunset ESCHER_BIN_DIR\nexport PATH=\"$P/bin:$PATH\"\n");
    if (env)
        cl_puts(b, env);
    cl_puts(b, "export ESCHER_SESSION_DIR=\"$SD\"\n");
    cl_puts(b, functions_sh);
}

/* Prints "check:", then "hash=H" and "gcs=up|down raylet=up|down". */
static char *probe_script(const host_plan *p)
{
    cl_str b = {0};
    prelude(&b, p->sd, p->c->prefix, p->env.s);
    cl_puts(&b,
            "for x in escher escher-gcs escher-raylet escher-worker; do\n"
            "  [ -x \"$P/bin/$x\" ] || { echo \"check escher: $P/bin/$x is missing (install "
            "escher there, or set install_prefix)\" >&2; exit 3; }\n"
            "done\n"
            "out=$(\"$P/bin/escher\" --help 2>&1) || { echo \"check escher: $P/bin/escher "
            "--help failed: $(echo \"$out\" | tail -n 1)\" >&2; exit 3; }\n"
            "echo \"hash=$(cat \"$SD/config_hash\" 2>/dev/null)\"\n"
            "running gcs && echo gcs=up || echo gcs=down\n"
            "running raylet && echo raylet=up || echo raylet=down\n");
    return b.s;
}

static void launch(cl_str *b, const host_plan *p, const char *name, const cl_str *args)
{
    cl_printf(b, "if [ -n \"$use_systemd\" ]; then\n");
    cl_printf(b, "  { printf 'ESCHER_BIN=%%s\\n' \"$P/bin/escher-%s\"\n", name);
    cl_puts(b, "    printf 'ESCHER_FLAGS=%s\\n' ");
    cl_quote(b, args[1].s + 1);
    cl_puts(b, "\n    printf '%s' ");
    cl_quote(b, p->envfile.s);
    cl_printf(b, "\n  } > /etc/escher/escher-%s.env\n", name);
    cl_printf(b, "  cat > /etc/systemd/system/escher-%s.service <<'ESCHER_UNIT_EOF'\n%s"
                 "ESCHER_UNIT_EOF\n",
              name, !strcmp(name, "gcs") ? unit_gcs : unit_raylet);
    cl_printf(b, "  systemctl daemon-reload && systemctl enable --now escher-%s.service "
                 ">/dev/null 2>\"$SD/logs/systemctl.err\" || { echo \"start %s: systemctl: "
                 "$(tail -n 1 \"$SD/logs/systemctl.err\")\" >&2; stop_all keep; exit 1; }\n",
              name, name);
    cl_printf(b, "else\n  setsid sh \"$SD/supervise.sh\" %s \"$P/bin/escher-%s\"%s "
                 "</dev/null >/dev/null 2>&1 &\nfi\n",
              name, name, args[0].s);
}

static char *start_script(const host_plan *p, const char *token, const char *daemon_key)
{
    cl_str b = {0};
    prelude(&b, p->sd, p->c->prefix, p->env.s);
    cl_puts(&b, "stop_all\n"
                "mkdir -p \"$SD/pids\" \"$SD/logs/tasks\" \"$SD/sup\" && chmod 700 \"$SD\" || "
                "{ echo \"start: cannot create $SD\" >&2; exit 1; }\n"
                "umask 077\n");
    if (p->head)
        cl_puts(&b, "for f in token daemon_key operator; do\n"
                    "  od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' > \"$SD/$f\"\n"
                    "done\n");
    else
        cl_printf(&b, "printf %%s '%s' > \"$SD/token\"\nprintf %%s '%s' > \"$SD/daemon_key\"\n",
                  token, daemon_key);
    cl_printf(&b, "printf %%s '%s:%d' > \"$SD/gcs_address\"\n", p->c->hosts[0].address,
              p->c->gcs_port);
    cl_printf(&b, "cat > \"$SD/supervise.sh\" <<'ESCHER_SUPERVISE_EOF'\n%s"
                  "ESCHER_SUPERVISE_EOF\n",
              supervise_sh);
    cl_printf(&b, "use_systemd=\n");
    if (p->c->systemd)
        cl_puts(&b, "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then\n"
                    "  use_systemd=1; touch \"$SD/systemd\"; mkdir -p /etc/escher\n"
                    "else\n"
                    "  echo \"warning: systemd is not running here: the daemons run under "
                    "$SD/supervise.sh\" >&2\n"
                    "fi\n");
    if (p->head) {
        launch(&b, p, "gcs", p->gcs_args);
        cl_puts(&b, "wait_file gcs.port gcs\n");
    }
    launch(&b, p, "raylet", p->raylet_args);
    cl_puts(&b, "wait_file node_id raylet\n");
    cl_printf(&b, "printf %%s '%s' > \"$SD/config_hash\"\n", p->hash);
    return b.s;
}

static char *stop_script(const char *sd, const char *prefix)
{
    cl_str b = {0};
    prelude(&b, sd, prefix, NULL);
    cl_puts(&b, "stop_all\n"
                "if running gcs || running raylet || [ -e \"$SD\" ]; then\n"
                "  echo \"stop: $SD is still there, or a daemon still runs\" >&2; exit 1\n"
                "fi\n");
    return b.s;
}

/* ------------------------------------------------------------------ local state */

typedef struct {
    char role[16], sd[4096], prefix[4096], hash[32];
} host_record;

static int record_path(const cl_cluster *c, const char *host, char *out, size_t len)
{
    char state[4096];
    if (cl_state_dir(c, state, sizeof state) != 0)
        return -1;
    return (size_t)snprintf(out, len, "%s/hosts/%s", state, host) < len ? 0 : -1;
}

static int record_write(const cl_cluster *c, const host_plan *p, const char *hash)
{
    char path[4400];
    if (record_path(c, p->h->address, path, sizeof path) != 0)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "role=%s\nsession_dir=%s\nprefix=%s\nhash=%s\n", p->head ? "head" : "worker",
            p->sd, c->prefix, hash);
    return fclose(f);
}

static void copy(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src) < len - 1 ? strlen(src) : len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int record_read(const cl_cluster *c, const char *host, host_record *r)
{
    char path[4400], line[4200];
    memset(r, 0, sizeof *r);
    if (record_path(c, host, path, sizeof path) != 0)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "role=", 5))
            copy(r->role, sizeof r->role, line + 5);
        else if (!strncmp(line, "session_dir=", 12))
            copy(r->sd, sizeof r->sd, line + 12);
        else if (!strncmp(line, "prefix=", 7))
            copy(r->prefix, sizeof r->prefix, line + 7);
        else if (!strncmp(line, "hash=", 5))
            copy(r->hash, sizeof r->hash, line + 5);
    }
    fclose(f);
    return r->sd[0] ? 0 : -1;
}

static void record_remove(const cl_cluster *c, const char *host)
{
    char path[4400];
    if (record_path(c, host, path, sizeof path) == 0)
        unlink(path);
}

/* ------------------------------------------------------------------ steps */

static int host_fail(const char *cmd, const char *host, const char *step, int rc,
                     const char *err)
{
    char last[512];
    cl_last_line(err, last, sizeof last);
    if (rc == 255 && !last[0])
        snprintf(last, sizeof last, "ssh failed");
    else if (rc < 0)
        snprintf(last, sizeof last, "cannot run ssh");
    /* The remote scripts name their own step ("start raylet: ..."). */
    if (!strncmp(last, step, strlen(step)))
        fprintf(stderr, "escher %s: host %s: %s\n", cmd, host, last);
    else
        fprintf(stderr, "escher %s: host %s: %s: %s\n", cmd, host, step,
                last[0] ? last : "failed");
    return CLI_EXIT_FAIL;
}

static void print_warnings(const char *host, const char *err)
{
    if (!err)
        return;
    for (const char *p = err; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 9 && !strncmp(p, "warning: ", 9))
            fprintf(stderr, "escher up: host %s: %.*s\n", host, (int)n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* Reads the head's token and daemon key (hex). */
static int read_secrets(const cl_cluster *c, const host_plan *head, char *token,
                        char *daemon_key, size_t len)
{
    cl_str b = {0};
    prelude(&b, head->sd, c->prefix, NULL);
    cl_puts(&b, "cat \"$SD/token\" && echo && cat \"$SD/daemon_key\" && echo\n");
    char *out = NULL, *err = NULL;
    int rc = cl_ssh_script(c, head->h->address, b.s, &out, &err);
    free(b.s);
    int ok = rc == 0 && out && sscanf(out, "%127s %127s", token, daemon_key) == 2 &&
             strspn(token, "0123456789abcdef") == strlen(token) &&
             strspn(daemon_key, "0123456789abcdef") == strlen(daemon_key);
    (void)len;
    if (!ok)
        host_fail("up", head->h->address, "read the token and the daemon key", rc, err);
    free(out);
    free(err);
    return ok ? 0 : -1;
}

/* Counts the hosts with an ALIVE node in `escher status --json` on the head. */
static int alive_hosts(const cl_cluster *c, const host_plan *head, bool *alive, char *why,
                       size_t whylen)
{
    cl_str b = {0};
    prelude(&b, head->sd, c->prefix, head->env.s);
    cl_puts(&b, "\"$P/bin/escher\" status --json\n");
    char *out = NULL, *err = NULL;
    int rc = cl_ssh_script(c, head->h->address, b.s, &out, &err);
    free(b.s);
    int n = 0;
    json_error_t je;
    json_t *root = rc == 0 && out ? json_loads(out, 0, &je) : NULL;
    json_t *nodes = root ? json_object_get(root, "nodes") : NULL;
    if (!json_is_array(nodes))
        cl_last_line(err, why, whylen);
    for (size_t i = 0; i < c->nhosts; i++) {
        alive[i] = false;
        size_t k;
        json_t *node;
        json_array_foreach(nodes, k, node)
        {
            const char *addr = json_string_value(json_object_get(node, "address"));
            const char *state = json_string_value(json_object_get(node, "state"));
            size_t al = strlen(c->hosts[i].address);
            if (addr && state && !strcmp(state, "ALIVE") &&
                !strncmp(addr, c->hosts[i].address, al) && addr[al] == ':')
                alive[i] = true;
        }
        n += alive[i];
    }
    json_decref(root);
    free(out);
    free(err);
    return n;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Stops the hosts recorded in the state directory but not in the file (keep == NULL:
 * all recorded hosts). */
static int stop_recorded(const cl_cluster *c, const char *cmd, bool only_removed)
{
    char state[4096], dir[4200];
    if (cl_state_dir(c, state, sizeof state) != 0)
        return CLI_EXIT_FAIL;
    snprintf(dir, sizeof dir, "%s/hosts", state);
    DIR *d = opendir(dir);
    if (!d)
        return CLI_EXIT_OK;
    char *names[CL_MAX_HOSTS * 2];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < CL_MAX_HOSTS * 2)
        if (e->d_name[0] != '.')
            names[n++] = esc_xstrdup(e->d_name);
    closedir(d);
    int rc = CLI_EXIT_OK;
    /* Workers first, the head last: raylets leave before their GCS. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            host_record r;
            if (!names[i] || record_read(c, names[i], &r) != 0)
                continue;
            if ((pass == 0) != (strcmp(r.role, "head") != 0))
                continue;
            bool listed = false;
            for (size_t k = 0; k < c->nhosts; k++)
                listed |= !strcmp(c->hosts[k].address, names[i]);
            if (only_removed && listed)
                continue;
            char *script = stop_script(r.sd, r.prefix);
            char *err = NULL;
            int src = cl_ssh_script(c, names[i], script, NULL, &err);
            free(script);
            if (src != 0) {
                rc = host_fail(cmd, names[i], "stop", src, err);
            } else {
                record_remove(c, names[i]);
                printf("%s: stopped%s\n", names[i], only_removed ? " (no longer in the file)" : "");
            }
            free(err);
            free(names[i]);
            names[i] = NULL;
        }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    return rc;
}

/* ------------------------------------------------------------------ commands */

static const char up_usage[] =
    "usage: escher up CLUSTER_FILE\n"
    "\n"
    "Starts the cluster the file describes (docs/deploy.md, \"Multi-host clusters\"): over\n"
    "SSH, checks escher on every host, starts the head (GCS and raylet), then a raylet on\n"
    "each worker, waits until every node is ALIVE and prints `escher status` of the head.\n"
    "Run again, it leaves hosts whose configuration is unchanged alone and restarts the\n"
    "others. Local state: ~/.escher/clusters/<cluster_name>/.\n";

static int load(const char *usage, int argc, char **argv, cl_cluster *c, int maxpos,
                const char **pos, int *npos)
{
    cli_opt opts[] = {{NULL}};
    int rc = cli_parse(argc, argv, opts, pos, maxpos, npos, usage);
    if (rc == CLI_HELP)
        return CLI_HELP;
    if (rc)
        return rc;
    if (*npos < 1)
        return cli_usage("give the cluster file");
    return cl_load(pos[0], c) == 0 ? 0 : CLI_EXIT_FAIL;
}

static int up(cl_cluster *c)
{
    host_plan plans[CL_MAX_HOSTS];
    char token[128] = "", daemon_key[128] = "";
    int rc = stop_recorded(c, "up", true);
    if (rc)
        return rc;
    bool head_restarted = false;
    size_t planned = 0;
    for (size_t i = 0; i < c->nhosts && !rc; i++) {
        host_plan *p = &plans[i];
        plan_host(c, i, i ? plans[0].hash : "", p);
        planned++;
        const char *host = p->h->address;
        char *script = probe_script(p), *out = NULL, *err = NULL;
        int src = cl_ssh_script(c, host, script, &out, &err);
        free(script);
        if (src != 0) {
            rc = host_fail("up", host, "check escher", src, err);
        } else {
            char want[64];
            snprintf(want, sizeof want, "hash=%s\n", p->hash);
            bool same = strstr(out, want) != NULL;
            bool up_now = strstr(out, "raylet=up") && (!p->head || strstr(out, "gcs=up"));
            if (same && up_now && !(i > 0 && head_restarted)) {
                printf("%s: unchanged\n", host);
                record_write(c, p, p->hash);
            } else {
                const char *why = i > 0 && head_restarted && same && up_now
                                      ? "restarted (the head was restarted)"
                                  : strstr(out, "hash=\n") ? "started"
                                  : !same                  ? "restarted (its configuration changed)"
                                                           : "restarted (it was not running)";
                if (i > 0 && !token[0] && read_secrets(c, &plans[0], token, daemon_key,
                                                       sizeof token) != 0) {
                    rc = CLI_EXIT_FAIL;
                } else {
                    record_write(c, p, "starting");
                    free(err);
                    err = NULL;
                    script = start_script(p, token, daemon_key);
                    src = cl_ssh_script(c, host, script, NULL, &err);
                    free(script);
                    print_warnings(host, err);
                    if (src != 0) {
                        rc = host_fail("up", host, "start", src, err);
                    } else {
                        record_write(c, p, p->hash);
                        printf("%s: %s (%s)\n", host, why, p->head ? "head" : "worker");
                        if (p->head)
                            head_restarted = true;
                    }
                }
            }
        }
        free(out);
        free(err);
        fflush(stdout);
    }
    if (!rc) {
        bool alive[CL_MAX_HOSTS];
        char why[512] = "";
        time_t deadline = time(NULL) + UP_TIMEOUT_S;
        int n;
        while ((n = alive_hosts(c, &plans[0], alive, why, sizeof why)) < (int)c->nhosts &&
               time(NULL) < deadline)
            nap_ms(500);
        if (n < (int)c->nhosts) {
            for (size_t i = 0; i < c->nhosts; i++)
                if (!alive[i])
                    fprintf(stderr, "escher up: host %s: wait for the node: not ALIVE within "
                                    "%d s%s%s\n",
                            c->hosts[i].address, UP_TIMEOUT_S, why[0] ? ": " : "", why);
            rc = CLI_EXIT_FAIL;
        } else {
            printf("all %zu nodes are ALIVE; the head's GCS: %s:%d\n", c->nhosts,
                   c->hosts[0].address, c->gcs_port);
            fflush(stdout);
            cl_str b = {0};
            prelude(&b, plans[0].sd, c->prefix, plans[0].env.s);
            cl_puts(&b, "\"$P/bin/escher\" status\n");
            char *out = NULL;
            if (cl_ssh_script(c, c->hosts[0].address, b.s, &out, NULL) == 0)
                fputs(out, stdout);
            free(out);
            free(b.s);
        }
    }
    for (size_t i = 0; i < planned; i++)
        plan_free(&plans[i]);
    return rc;
}

int cmd_up(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    cl_cluster c;
    const char *pos[2];
    int npos = 0;
    int rc = load(up_usage, argc, argv, &c, 1, pos, &npos);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    rc = up(&c);
    cl_free(&c);
    return rc;
}

static const char down_usage[] =
    "usage: escher down CLUSTER_FILE\n"
    "\n"
    "Stops what `escher up CLUSTER_FILE` started, on every host it recorded (in\n"
    "~/.escher/clusters/<cluster_name>/hosts/): the daemons (systemd units, or the\n"
    "supervisors and their daemons) and the session directories. Nothing else.\n";

int cmd_down(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    cl_cluster c;
    const char *pos[2];
    int npos = 0;
    int rc = load(down_usage, argc, argv, &c, 1, pos, &npos);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    rc = stop_recorded(&c, "down", false);
    cl_free(&c);
    return rc;
}

/* The remote command line: the head's session, then CMD (or an interactive shell). */
static int to_head(cl_cluster *c, bool tty, int argc, char **argv)
{
    host_plan p;
    plan_host(c, 0, "", &p);
    cl_str b = {0};
    cl_puts(&b, "cd && unset ESCHER_BIN_DIR && ");
    cl_puts(&b, "ESCHER_SESSION_DIR=");
    cl_quote(&b, p.sd);
    cl_puts(&b, " && export ESCHER_SESSION_DIR && PATH=");
    cl_quote(&b, c->prefix);
    cl_puts(&b, "/bin:$PATH && export PATH");
    for (const char *e = p.env.s; e && *e;) {
        const char *nl = strchr(e, '\n');
        size_t n = nl ? (size_t)(nl - e) : strlen(e);
        cl_printf(&b, " && %.*s", (int)n, e);
        e += n + (nl ? 1 : 0);
    }
    cl_puts(&b, " && ");
    if (argc == 0) {
        cl_puts(&b, "exec \"${SHELL:-/bin/sh}\" -i");
    } else {
        for (int i = 0; i < argc; i++) {
            cl_puts(&b, i ? " " : "");
            cl_quote(&b, argv[i]);
        }
    }
    char *args[40];
    char store[8][512];
    int n = cl_ssh_argv(c, c->hosts[0].address, tty, args, store);
    if (n < 0) {
        free(b.s);
        return CLI_EXIT_FAIL;
    }
    args[n++] = b.s;
    args[n] = NULL;
    fflush(NULL);
    execvp("ssh", args);
    fprintf(stderr, "escher: cannot run ssh: %s\n", strerror(errno));
    return CLI_EXIT_FAIL;
}

static const char exec_usage[] =
    "usage: escher exec CLUSTER_FILE -- CMD ARGS...\n"
    "\n"
    "Runs CMD on the cluster's head over SSH, in the head's session ($ESCHER_SESSION_DIR\n"
    "set, <install_prefix>/bin first on $PATH, the file's environment): `escher status`\n"
    "works there. Exits with CMD's status (255: ssh failed).\n";

int cmd_exec(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    cl_cluster c;
    const char *pos[64];
    int npos = 0;
    int rc = load(exec_usage, argc, argv, &c, 64, pos, &npos);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (npos < 2) {
        cl_free(&c);
        return cli_usage("give the command to run: escher exec CLUSTER_FILE -- CMD ARGS...");
    }
    return to_head(&c, false, npos - 1, (char **)pos + 1);
}

static const char attach_usage[] =
    "usage: escher attach CLUSTER_FILE\n"
    "\n"
    "Opens an interactive shell on the cluster's head (ssh -t), in the head's session as\n"
    "for `escher exec`.\n";

int cmd_attach(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    cl_cluster c;
    const char *pos[2];
    int npos = 0;
    int rc = load(attach_usage, argc, argv, &c, 1, pos, &npos);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    return to_head(&c, true, 0, NULL);
}
