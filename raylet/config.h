/* config.h: the command line of escher-raylet (docs/processes.md), parsed and checked by config.c. */
#ifndef RAYLET_CONFIG_H
#define RAYLET_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A named quantity (fixed point) of a resource. */
typedef struct {
    char *name;
    int64_t qty;
    bool unbounded;
} raylet_amount;

typedef struct {
    char *key;
    char *value;
} raylet_label;

/* A loopback or LAN peer answers a forward in well under this; one that does not is
 * suspect (peers.h). */
#define RAYLET_FORWARD_TIMEOUT_MS 500

/* Rows of tasks that ended here kept for the state API (`escher list tasks --state
 * finished`, docs/observability.md): about 200 bytes each. */
#define RAYLET_ENDED_TASKS 1000
#define RAYLET_ENDED_TASKS_MAX 1000000

/* The command line (docs/processes.md), parsed by config.c. */
typedef struct {
    char *gcs_address;
    char *token;
    char *daemon_key;            /* the daemons' secret (docs/security.md) */
    char *bind;
    int port;
    char *node_ip;
    bool has_num_cpus, has_num_gpus, has_memory, has_object_store_memory;
    int64_t num_cpus;            /* fixed point */
    int64_t num_gpus;            /* fixed point */
    uint64_t memory;             /* bytes */
    uint64_t object_store_memory;/* bytes */
    raylet_amount *resources;    /* static custom resources */
    size_t nresources;
    raylet_label *labels;
    size_t nlabels;
    char *node_id_file;
    char *node_id;               /* NULL: let the GCS assign one */
    char *log_dir;               /* NULL: /tmp/escher-<uid>/logs/raylet-<pid> */
    int forward_timeout_ms;      /* calls to other raylets (peers.h) */
    bool no_cpu_quota;           /* --no-cpu-quota: CPU shares not enforced */
    bool head;                   /* --head: the node started with the GCS */
    int ended_tasks;             /* --ended-tasks: ended task rows kept (state API) */
    bool help;
    bool version;                /* --version */
    int exit_on_stop_ms;         /* --exit-on-cluster-stop; -1: keep retrying */
    int metrics_port;            /* --metrics-port; -1: no metrics endpoint */
    char *metrics_bind;          /* --metrics-bind (127.0.0.1) */
    char *metrics_port_file;     /* --metrics-port-file, or NULL */
} raylet_config;

/* Parses argv into cfg (token from --token-file or $ESCHER_TOKEN, daemon key from
 * --daemon-key-file or $ESCHER_DAEMON_KEY, which is then removed from the environment
 * that workers inherit). Returns 0, or -1
 * with a one-line reason in err. cfg is filled with defaults first and must be freed
 * with config_free either way. */
int config_parse(int argc, char **argv, raylet_config *cfg, char *err, size_t errlen);
void config_free(raylet_config *cfg);
/* The usage text printed by --help. */
const char *config_usage(void);

#endif
