/* harness.c: see harness.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double h_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int h_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    int port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static const char *bin_dir(void)
{
    const char *d = getenv("ESCHER_BIN_DIR");
    return d ? d : "build";
}

/* Writes value to dir/name (mode 0600) and its path into path. */
static void write_secret(const char *dir, const char *name, const char *value, char *path,
                         size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(value, f);
    fclose(f);
    chmod(path, 0600);
}

/* The whole answer of GET path on 127.0.0.1:port (headers included), malloc'd; NULL
 * when the connection fails. */
static char *http_get(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (write(fd, req, (size_t)n) != n) {
        free(buf);
        close(fd);
        return NULL;
    }
    ssize_t got;
    while ((got = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (cap - len < 4096)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    buf[len] = '\0';
    return buf;
}

bool h_metric(int port, const char *series, double *out)
{
    char *text = http_get(port, "/metrics");
    if (!text)
        return false;
    size_t n = strlen(series);
    bool found = false;
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, series, n) == 0 && line[n] == ' ') {
            *out = strtod(line + n + 1, NULL);
            found = true;
            break;
        }
    }
    free(text);
    return found;
}

void h_init(h_cluster *c, int node_timeout_ms)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/escher-test-XXXXXX");
    if (!mkdtemp(c->dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(c->token, sizeof c->token, "test-token-%d-%ld", (int)getpid(), (long)time(NULL));
    write_secret(c->dir, "token", c->token, c->token_file, sizeof c->token_file);
    snprintf(c->daemon_key, sizeof c->daemon_key, "test-daemon-%d-%ld", (int)getpid(),
             (long)time(NULL));
    write_secret(c->dir, "daemon_key", c->daemon_key, c->daemon_key_file,
                 sizeof c->daemon_key_file);
    snprintf(c->operator_key, sizeof c->operator_key, "test-operator-%d-%ld", (int)getpid(),
             (long)time(NULL));
    write_secret(c->dir, "operator", c->operator_key, c->operator_file,
                 sizeof c->operator_file);
    c->node_timeout_ms = node_timeout_ms ? node_timeout_ms : 2000;
    c->job_timeout_ms = 1500;
    c->gcs_port = h_free_port();
    snprintf(c->gcs_addr, sizeof c->gcs_addr, "127.0.0.1:%d", c->gcs_port);
}

/* fork + exec argv with stderr appended to logfile. */
static pid_t spawn(char *const argv[], const char *logfile)
{
    pid_t pid = fork();
    if (pid == 0) {
        /* Daemons die with the test, even when the test is killed before h_stop. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static bool file_nonempty(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = 0;
    while (n && (out[n - 1] == '\n'))
        out[--n] = 0;
    return n > 0;
}

static bool wait_file(const char *path, char *out, size_t len, pid_t pid, int timeout_ms)
{
    double end = h_now_ms() + timeout_ms;
    while (h_now_ms() < end) {
        if (file_nonempty(path, out, len))
            return true;
        if (!h_alive(pid))
            return false;
        sleep_ms(10);
    }
    return false;
}

bool h_alive(pid_t pid)
{
    if (pid <= 0)
        return false;
    int status;
    return waitpid(pid, &status, WNOHANG) == 0;
}

void h_kill(pid_t *pid, int sig)
{
    if (*pid <= 0)
        return;
    kill(*pid, sig);
    if (sig == SIGKILL || sig == SIGTERM) {
        int status;
        waitpid(*pid, &status, 0);
        *pid = 0;
    }
}

int h_redis_start(h_cluster *c)
{
    c->redis_port = h_free_port();
    char port[16], log[300];
    snprintf(port, sizeof port, "%d", c->redis_port);
    snprintf(log, sizeof log, "%s/redis.log", c->dir);
    char *argv[] = {"/usr/bin/redis-server", "--port", port, "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", NULL};
    c->redis_pid = spawn(argv, log);
    snprintf(c->storage, sizeof c->storage, "redis://127.0.0.1:%d", c->redis_port);
    /* Ready when it accepts a connection. */
    double end = h_now_ms() + 10000;
    while (h_now_ms() < end) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->redis_port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return 0;
        sleep_ms(20);
    }
    return -1;
}

static int split_words(char *s, char **out, int max);

/* Polls until something accepts a TCP connection on the loopback port. */
static bool accepting(int port, int timeout_ms)
{
    double end = h_now_ms() + timeout_ms;
    while (h_now_ms() < end) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return true;
        sleep_ms(20);
    }
    return false;
}

int h_redis_start_durable(h_cluster *c)
{
    if (!c->redis_port)
        c->redis_port = h_free_port();
    char port[16], log[300];
    snprintf(port, sizeof port, "%d", c->redis_port);
    snprintf(log, sizeof log, "%s/redis.log", c->dir);
    /* The append-only file lives in the cluster directory, which a restart reuses. */
    char *argv[] = {"/usr/bin/redis-server", "--port", port, "--bind", "127.0.0.1",
                    "--save", "", "--dir", c->dir, "--appendonly", "yes",
                    "--appendfsync", "always", NULL};
    c->redis_pid = spawn(argv, log);
    snprintf(c->storage, sizeof c->storage, "redis://127.0.0.1:%d", c->redis_port);
    return accepting(c->redis_port, 10000) ? 0 : -1;
}

int h_gcs_start(h_cluster *c)
{
    char exe[512], port[16], portfile[300], log[300], nto[16], jto[16];
    snprintf(exe, sizeof exe, "%s/gcs/escher-gcs", bin_dir());
    snprintf(port, sizeof port, "%d", c->gcs_port);
    snprintf(portfile, sizeof portfile, "%s/gcs.port", c->dir);
    snprintf(log, sizeof log, "%s/gcs.log", c->dir);
    snprintf(nto, sizeof nto, "%d", c->node_timeout_ms);
    snprintf(jto, sizeof jto, "%d", c->job_timeout_ms);
    unlink(portfile);
    char words[sizeof c->gcs_extra];
    snprintf(words, sizeof words, "%s", c->gcs_extra);
    char *argv[64] = {exe, "--bind", "127.0.0.1", "--port", port, "--port-file", portfile,
                      "--token-file", c->token_file, "--storage", c->storage[0] ? c->storage : "memory",
                      "--node-timeout-ms", nto, "--heartbeat-ms", "100", "--job-timeout-ms", jto,
                      "--daemon-key-file", c->daemon_key_file,
                      "--operator-key-file", c->operator_file};
    int n = 21;
    n += split_words(words, argv + n, 40);
    argv[n] = NULL;
    c->gcs_pid = spawn(argv, log);
    char buf[32];
    return wait_file(portfile, buf, sizeof buf, c->gcs_pid, 15000) ? 0 : -1;
}

/* Splits extra flags on spaces into argv (no quoting needed by the tests). */
static int split_words(char *s, char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, " "); tok && n < max; tok = strtok(NULL, " "))
        out[n++] = tok;
    return n;
}

int h_raylet_start(h_cluster *c, int i, const char *extra)
{
    h_raylet *r = &c->raylets[i];
    if (extra)
        snprintf(r->extra, sizeof r->extra, "%s", extra);
    if (!r->port)
        r->port = h_free_port();
    char exe[512], port[16], idfile[300], log[300], words[512];
    snprintf(exe, sizeof exe, "%s/raylet/escher-raylet", bin_dir());
    snprintf(port, sizeof port, "%d", r->port);
    snprintf(idfile, sizeof idfile, "%s/node_id.%d", c->dir, i);
    snprintf(log, sizeof log, "%s/raylet.%d.log", c->dir, i);
    snprintf(words, sizeof words, "%s", r->extra);
    unlink(idfile);
    /* Task logs where `escher logs` looks for a session's: DIR/logs/tasks. */
    char logdir[300];
    snprintf(logdir, sizeof logdir, "%s/logs/tasks", c->dir);
    char *argv[72] = {exe, "--gcs-address", c->gcs_addr, "--token-file", c->token_file,
                      "--bind", "127.0.0.1", "--port", port, "--node-id-file", idfile,
                      "--num-cpus", "4", "--num-gpus", "0", "--log-dir", logdir,
                      "--daemon-key-file", c->daemon_key_file};
    int n = 19;
    n += split_words(words, argv + n, 40);
    argv[n] = NULL;
    if (r->hide_dir[0]) {
        /* unshare and sh exec in turn: the pid stays the raylet's. */
        char *hidden[80] = {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                            "mount -t tmpfs none \"$0\" && exec \"$@\"", r->hide_dir};
        memcpy(hidden + 8, argv, (size_t)(n + 1) * sizeof *argv);
        r->pid = spawn(hidden, log);
    } else {
        r->pid = spawn(argv, log);
    }
    if (i >= c->nraylets)
        c->nraylets = i + 1;
    return wait_file(idfile, r->node_id, sizeof r->node_id, r->pid, 15000) ? 0 : -1;
}

int h_start_cluster(h_cluster *c, int n, const char *const *extras)
{
    if (h_gcs_start(c) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (h_raylet_start(c, i, extras ? extras[i] : NULL) != 0)
            return -1;
    return 0;
}

int h_teardown(void **state)
{
    h_stop(*state);
    return 0;
}

esc_client *h_join(h_cluster *c, esc_client *of, int local)
{
    esc_connect_opts o = {.address = c->gcs_addr, .token = c->token,
                          .node_id = c->raylets[local].node_id, .session_dir = c->dir,
                          .join = of};
    esc_client *cl = NULL;
    esc_status st = {0};
    if (esc_connect(&o, &cl, &st) != ESC_OK) {
        fprintf(stderr, "join failed: %s %s\n", esc_status_name(st.code), st.message);
        exit(1);
    }
    return cl;
}

const char *h_tasks_lib(void)
{
    static char lib[512];
    snprintf(lib, sizeof lib, "%s/tests/tasks/libescher_test_tasks.so", bin_dir());
    return lib;
}

esc_client *h_connect(h_cluster *c, const char *ns, int local, bool detached)
{
    esc_connect_opts o = {.address = c->gcs_addr, .token = c->token, .namespace_ = ns,
                          .node_id = local >= 0 ? c->raylets[local].node_id : "",
                          .detached = detached, .session_dir = c->dir};
    esc_client *cl = NULL;
    esc_status st = {0};
    /* A daemon just (re)started on a loaded machine may refuse the very first connection:
     * a few tries, as a user would retry. */
    int rc = ESC_UNAVAILABLE;
    for (int i = 0; i < 10 && rc == ESC_UNAVAILABLE; i++) {
        if (i)
            sleep_ms(300);
        rc = esc_connect(&o, &cl, &st);
    }
    if (rc != ESC_OK) {
        fprintf(stderr, "connect failed: %s %s\n", esc_status_name(st.code), st.message);
        exit(1);
    }
    return cl;
}

void h_show_logs(h_cluster *c, int lines)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "tail -n %d %s/*.log 1>&2", lines, c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: cannot show the logs in %s\n", c->dir);
}

static void dump_logs(h_cluster *c)
{
    if (getenv("H_DUMP_LOGS"))
        h_show_logs(c, 30);
}

static int g_unclean;

int h_unclean_exits(void)
{
    return g_unclean;
}

/* SIGTERM and reap; a daemon must exit 0 (under ASan that also means: no leak). */
static void stop_daemon(pid_t *pid, const char *what, const char *log)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGTERM);
    int status = 0;
    waitpid(*pid, &status, 0);
    *pid = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    g_unclean++;
    fprintf(stderr, "harness: %s did not exit cleanly (status 0x%x); end of %s:\n", what,
            (unsigned)status, log);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tail -n 40 %s 1>&2", log);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: cannot show %s\n", log);
}

void h_stop(h_cluster *c)
{
    dump_logs(c);
    char log[320];
    for (int i = 0; i < c->nraylets; i++) {
        snprintf(log, sizeof log, "%s/raylet.%d.log", c->dir, i);
        stop_daemon(&c->raylets[i].pid, "escher-raylet", log);
    }
    snprintf(log, sizeof log, "%s/gcs.log", c->dir);
    stop_daemon(&c->gcs_pid, "escher-gcs", log);
    h_kill(&c->redis_pid, SIGTERM);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", c->dir);
}

bool h_wait_until(bool (*check)(void *), void *arg, int timeout_ms)
{
    double end = h_now_ms() + timeout_ms;
    while (h_now_ms() < end) {
        if (check(arg))
            return true;
        sleep_ms(20);
    }
    return check(arg);
}

void h_marker_path(char *out, size_t size)
{
    static int n;
    snprintf(out, size, "/tmp/escher-marker-%d-%d", (int)getpid(), ++n);
    unlink(out);
}

static bool file_exists(void *path)
{
    return access(path, F_OK) == 0;
}

bool h_wait_marker(const char *path, int timeout_ms)
{
    bool ok = h_wait_until(file_exists, (void *)path, timeout_ms);
    unlink(path);
    return ok;
}
