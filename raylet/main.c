/* main.c: escher-raylet, the node agent. Flags in docs/processes.md, design in
 * docs/raylet.md. Exit codes: 0 after SIGTERM/SIGINT, 1 on a runtime failure (cannot
 * listen, cannot register, declared dead), 2 on bad flags or a missing token. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "raylet.h"
#include "version.h"

int main(int argc, char **argv)
{
    esc_log_init("raylet", ESC_LOG_INFO);
    signal(SIGPIPE, SIG_IGN);

    raylet r;
    memset(&r, 0, sizeof r);
    char err[512] = {0};
    if (config_parse(argc, argv, &r.cfg, err, sizeof err) != 0) {
        ESC_ERROR("%s", err);
        config_free(&r.cfg);
        return 2;
    }
    if (r.cfg.version) {
        printf("escher-raylet %s\n", ESC_VERSION);
        config_free(&r.cfg);
        return 0;
    }
    if (r.cfg.help) {
        fputs(config_usage(), stdout);
        config_free(&r.cfg);
        return 0;
    }
    if (raylet_start(&r, err, sizeof err) != 0) {
        ESC_ERROR("%s", err);
        r.exit_code = 1;
        return raylet_shutdown(&r);
    }
    raylet_run(&r);
    return raylet_shutdown(&r);
}
