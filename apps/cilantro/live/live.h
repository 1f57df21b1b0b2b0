/* live.h: `cilantro serve`, the live controller on escher (serve.c). */
#ifndef CILANTRO_LIVE_H
#define CILANTRO_LIVE_H

/* The feedback channel (docs/cilantro.md, "Feedback channel"): in the controller's
 * namespace, tenant T writes "T.hello" once and a record "T.feedback/<seq>" (seq zero
 * padded to 8 digits) every report period; T's grant covers the names starting "T.". */
#define CIL_FEEDBACK_KEY ".feedback/"
#define CIL_HELLO_KEY ".hello"

/* argv[0] is "serve"; returns the exit status (0, 1 on a failed run, 2 on bad usage). */
int cil_serve_cmd(int argc, char **argv);

#endif
