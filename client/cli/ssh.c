/* ssh.c: running shell scripts on a cluster file's hosts with the OpenSSH client, and
 * the small string helpers the launcher builds them with. */
#include "cluster.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void cl_puts(cl_str *b, const char *s)
{
    size_t n = strlen(s);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *ns = esc_xrealloc(b->s, cap);
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n + 1);
    b->n += n;
}

void cl_printf(cl_str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    cl_puts(b, s);
    free(s);
}

void cl_quote(cl_str *b, const char *word)
{
    cl_puts(b, "'");
    for (const char *p = word; *p; p++) {
        char one[2] = {*p, 0};
        cl_puts(b, *p == '\'' ? "'\\''" : one);
    }
    cl_puts(b, "'");
}

const char *cl_last_line(const char *text, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!text)
        return buf;
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    size_t n = (size_t)(end - start) < len - 1 ? (size_t)(end - start) : len - 1;
    memcpy(buf, start, n);
    buf[n] = '\0';
    return buf;
}

static int mkdirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int cl_state_dir(const cl_cluster *c, char *out, size_t len)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        home = "/root";
    if ((size_t)snprintf(out, len, "%s/.escher/clusters/%s", home, c->name) >= len ||
        mkdirs(out) != 0) {
        fprintf(stderr, "escher: cannot create the cluster's state directory %s: %s\n", out,
                strerror(errno));
        return -1;
    }
    char hosts[4200];
    snprintf(hosts, sizeof hosts, "%s/hosts", out);
    return mkdirs(hosts);
}

int cl_ssh_argv(const cl_cluster *c, const char *host, bool tty, char **argv, char store[][512])
{
    int n = 0, k = 0;
    char state[4096];
    if (cl_state_dir(c, state, sizeof state) != 0)
        state[0] = '\0';
#define ADD(s) (argv[n++] = (s))
    /* An option that does not fit its slot (a state path or user@host over 511 bytes)
     * is refused, never cut short. */
#define ADDF(...)                                                                      \
    do {                                                                               \
        if ((size_t)snprintf(store[k], 512, __VA_ARGS__) >= 512) {                     \
            fprintf(stderr, "escher: an ssh option for %s is over 511 bytes\n", host); \
            return -1;                                                                 \
        }                                                                              \
        argv[n++] = store[k++];                                                        \
    } while (0)
    ADD("ssh");
    if (c->ssh_key) {
        ADD("-i");
        ADD(c->ssh_key);
        ADD("-o");
        ADD("IdentitiesOnly=yes");
    }
    ADD("-p");
    ADDF("%d", c->ssh_port);
    ADD("-o");
    ADD("BatchMode=yes");
    ADD("-o");
    ADD("StrictHostKeyChecking=accept-new");
    ADD("-o");
    ADDF("UserKnownHostsFile=%s/known_hosts", state);
    ADD("-o");
    ADD("ConnectTimeout=10");
    ADD("-o");
    ADD("LogLevel=ERROR");
    if (tty)
        ADD("-t");
    if (c->ssh_user)
        ADDF("%s@%s", c->ssh_user, host);
    else
        ADD((char *)host);
    argv[n] = NULL;
#undef ADD
#undef ADDF
    return n;
}

static char *slurp_fd(int fd)
{
    cl_str b = {0};
    cl_puts(&b, "");
    lseek(fd, 0, SEEK_SET);
    char buf[4096];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf - 1)) > 0) {
        buf[r] = '\0';
        cl_puts(&b, buf);
    }
    return b.s;
}

static int temp_fd(void)
{
    char path[] = "/tmp/escher-ssh-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

int cl_ssh_script(const cl_cluster *c, const char *host, const char *script, char **out,
                  char **err)
{
    char *argv[32];
    char store[8][512];
    int n = cl_ssh_argv(c, host, false, argv, store);
    if (n < 0)
        return -1;
    argv[n++] = "sh";
    argv[n++] = "-s";
    argv[n] = NULL;
    int in = temp_fd(), o = temp_fd(), e = temp_fd();
    if (in < 0 || o < 0 || e < 0 || write(in, script, strlen(script)) != (ssize_t)strlen(script)) {
        if (in >= 0)
            close(in);
        if (o >= 0)
            close(o);
        if (e >= 0)
            close(e);
        return -1;
    }
    lseek(in, 0, SEEK_SET);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        execvp("ssh", argv);
        dprintf(2, "cannot run ssh: %s\n", strerror(errno));
        _exit(127);
    }
    int status = -1;
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    if (out)
        *out = slurp_fd(o);
    if (err)
        *err = slurp_fd(e);
    close(in);
    close(o);
    close(e);
    if (pid < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}
