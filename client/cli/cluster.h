/* cluster.h: `escher up/down/exec/attach`: the cluster file (cluster_file.c), running
 * commands on its hosts over SSH (ssh.c) and the launcher (cmd_cluster.c). */
#ifndef ESC_CLI_CLUSTER_H
#define ESC_CLI_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#define CL_MAX_HOSTS 256

typedef struct {
    char *key, *value;
} cl_kv;

typedef struct {
    cl_kv *v;
    size_t n;
} cl_map;

/* One host of the cluster file (the head is hosts[0]). */
typedef struct {
    char *address;       /* SSH host and the node's --node-ip */
    char *num_cpus, *num_gpus, *memory, *object_store_memory; /* NULL: detected */
    cl_map resources;    /* NAME -> QTY */
    cl_map labels;       /* KEY -> VALUE */
    cl_map env;          /* this host's extra environment (over the cluster's) */
} cl_host;

typedef struct {
    char *path;          /* the cluster file */
    char *name;          /* cluster_name */
    char *ssh_user;      /* NULL: ssh's default */
    char *ssh_key;       /* NULL: ssh's default identities */
    int ssh_port;        /* 22 */
    char *prefix;        /* install_prefix: <prefix>/bin/escher... (/usr/local) */
    char *storage;       /* "memory" or "redis://HOST:PORT[/DB]" */
    int gcs_port;        /* ports.gcs: 6380 */
    int raylet_port;     /* ports.raylet: 0 (any free port) */
    char *node_timeout_ms; /* NULL: the GCS's default */
    char *session_dir;   /* template; "{host}" and "{name}" are replaced */
    bool systemd;
    cl_map env;          /* environment: for every host */
    cl_host hosts[CL_MAX_HOSTS];
    size_t nhosts;
} cl_cluster;

/* Reads and checks a cluster file. Prints "escher: FILE:LINE: ..." and returns -1 on
 * an error. */
int cl_load(const char *path, cl_cluster *c);
void cl_free(cl_cluster *c);
/* The session directory of host h on that host (malloc'd). */
char *cl_session_dir(const cl_cluster *c, const cl_host *h);

/* ------------------------------------------------------------------ ssh.c */

/* The cluster's local state directory, ~/.escher/clusters/<name> (created). */
int cl_state_dir(const cl_cluster *c, char *out, size_t len);

/* Fills argv (at most 24 entries, NULL-terminated) with "ssh OPTIONS [-t] USER@HOST";
 * the strings live in store. Returns the count, or -1 (said on stderr) when an option
 * does not fit its 512 bytes. */
int cl_ssh_argv(const cl_cluster *c, const char *host, bool tty, char **argv,
                char store[][512]);

/* Runs the shell script on host (`sh -s`, the script on its stdin: secrets never on a
 * command line). out/err get its stdout and stderr (malloc'd, may be NULL). Returns its
 * exit status (255: ssh itself failed), or -1 when ssh could not run. */
int cl_ssh_script(const cl_cluster *c, const char *host, const char *script, char **out,
                  char **err);

/* The last non-empty line of text (in buf). */
const char *cl_last_line(const char *text, char *buf, size_t len);

/* Appends a shell single-quoted word to a growing string. */
typedef struct {
    char *s;
    size_t n, cap;
} cl_str;
void cl_puts(cl_str *b, const char *s);
void cl_printf(cl_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cl_quote(cl_str *b, const char *word);

#endif
