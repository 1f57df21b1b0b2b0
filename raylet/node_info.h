/* node_info.h: the node's physical resources and labels as registered with the GCS (node_info.c). */
#ifndef RAYLET_NODE_INFO_H
#define RAYLET_NODE_INFO_H

#include "config.h"
#include "node_detect.h"

/* The node's physical resources and labels, as registered with the GCS. */
typedef struct {
    raylet_amount *physical;
    size_t nphysical;
    raylet_label *labels;
    size_t nlabels;
    char hostname[256];
} node_info;

/* Builds the node description from the flags and detection. */
void node_info_build(node_info *n, const raylet_config *cfg, const node_detected *d);
void node_info_free(node_info *n);

#endif
