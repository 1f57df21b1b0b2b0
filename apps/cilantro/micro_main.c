/* micro_main.c: the cilantro-micro executable, `cilantro micro` on its own. */
#include "cilantro/micro.h"

int main(int argc, char **argv) { return cil_micro_cmd(argc, argv); }
