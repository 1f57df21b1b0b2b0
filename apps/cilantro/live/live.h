/* live.h: `cilantro serve`, the live controller on escher (serve.c). */
#ifndef CILANTRO_LIVE_H
#define CILANTRO_LIVE_H

/* argv[0] is "serve"; returns the exit status (0, 1 on a failed run, 2 on bad usage). */
int cil_serve_cmd(int argc, char **argv);

#endif
