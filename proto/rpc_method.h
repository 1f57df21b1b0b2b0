/* rpc_method.h: a gRPC method named by a handle instead of by its name as a string.
 *
 * The build generates one handle per method of every service of proto/'s .proto files
 * (proto/gen_methods.c writes rpc_methods.h and rpc_methods.c beside the protobuf-c
 * code): ESC_M_<SERVICE>_<METHOD>, such as ESC_M_GCS_SUBSCRIBE. Code that calls or
 * serves a method names its handle, so a method renamed or removed in a .proto breaks
 * the build of its users instead of failing, at run time, the calls that spell the old
 * name (docs/architecture.md, "Method handles").
 */
#ifndef ESC_RPC_METHOD_H
#define ESC_RPC_METHOD_H

#include <stdbool.h>

#include <protobuf-c/protobuf-c.h>

/* Method number `index` of service `svc` (its position in the .proto, as protobuf-c keeps
 * svc->methods). Handles are static constants: pass their address, never copy a new one
 * together by hand. */
typedef struct {
    const ProtobufCServiceDescriptor *svc;
    unsigned index;
} esc_rpc_method;

/* True when m names a method of its service: a handle the generator wrote always does;
 * NULL or one put together by hand may not. */
static inline bool esc_rpc_method_valid(const esc_rpc_method *m)
{
    return m && m->svc && m->index < m->svc->n_methods;
}

/* The method's descriptor (its proto name, request and reply types); m must be valid. */
static inline const ProtobufCMethodDescriptor *esc_rpc_method_desc(const esc_rpc_method *m)
{
    return &m->svc->methods[m->index];
}

/* The method's proto name ("Subscribe"), or "(invalid method)" for an invalid handle:
 * for log lines and error messages, which must not fail themselves. */
static inline const char *esc_rpc_method_name(const esc_rpc_method *m)
{
    return esc_rpc_method_valid(m) ? esc_rpc_method_desc(m)->name : "(invalid method)";
}

#endif
