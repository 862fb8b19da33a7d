/* proto.h — the live-mode wire protocol between a rank (the stand-in libraries, live/) and the
 * coordinator (src/live/coord.c). Packets of 1 to ETK_LIVE_BATCH fixed-size messages (SOCK_SEQPACKET) on a Unix
 * socket in the coordinator's private temporary folder; plain C, no etkit dependency, so the
 * stand-in libraries include it without linking libetkit.
 *
 * A rank describes its work as Chakra nodes with rank-local increasing ids: host time between
 * calls as CPU nodes chained one after the other (duration_ns), GPU work (kernels, copies,
 * collectives, send/recv) depending on the CPU node that issued it and on the previous work of
 * its CUDA stream. NODE messages get no answer. A blocking call sends WAIT naming a CPU node
 * that depends on what the call waits for; the answer is that node's end time, the rank's new
 * virtual time. docs/live.md describes when the coordinator runs the engine. */
#ifndef ETK_LIVE_PROTO_H
#define ETK_LIVE_PROTO_H

#include <stdint.h>

#define ETK_LIVE_VERSION 3
#define ETK_LIVE_MAX_DEPS 8
#define ETK_LIVE_BATCH 64 /* messages per packet at most (NODE messages are sent in batches) */

enum {
    ETK_LM_HELLO = 1,     /* rank -> coord: rank connects (answer: ETK_LR_CONFIG); `rank` is the
                             process's; a process driving G GPUs speaks for the engine ranks
                             rank*G .. rank*G+G-1 (`rank` of every later message) */
    ETK_LM_NODE = 2,      /* rank -> coord: one node (no answer) */
    ETK_LM_WAIT = 3,      /* rank -> coord: a node the rank blocks on (answer: ETK_LR_TIME) */
    ETK_LM_COMM_INIT = 4, /* rank -> coord: join communicator `group` as member `peer` of `tag`
                             (answer: ETK_LR_COMM with the group's name) */
    ETK_LM_EXIT = 5,      /* rank -> coord: normal exit (after its last NODE) */
    ETK_LM_COMM_SPLIT = 6,/* rank -> coord: split communicator `group` (member `peer` of `tag`),
                             split number n, color m (-1: none), key k (answer: ETK_LR_COMM with
                             the new group's name, t_ns = the member's rank in it, dep_end[0] =
                             its size; name "" for color -1) */
    ETK_LM_EXTERN = 7,    /* rank -> coord: enters a blocking call outside etkit (a real MPI
                             call) at host time dur_ns: it submits nothing earlier (no answer);
                             flags ETK_LF_NOLATE: when it returns it submits nothing dated before
                             its return but receives (its send or collective node is in already);
                             n_deps > 0: after the call the rank waits for the nodes deps[]
                             (submitted before: its sends or collective) and submits nothing else
                             but receives if ETK_LF_NOLATE: the engine runs on while one of them
                             is not done, and no further than the last one's end */
    ETK_LM_EXTERN_END = 8,/* rank -> coord: ... and is back (no answer) */
};

enum {
    ETK_LR_CONFIG = 1,
    ETK_LR_TIME = 2,
    ETK_LR_COMM = 3,
    ETK_LR_ERROR = 4, /* the run is over: msg says why; the rank prints it and exits */
};

/* node flags */
#define ETK_LF_CPU 1u    /* is_cpu_op */
#define ETK_LF_KERNEL 2u /* a kernel timed by the coordinator from its name (--kernels) */
#define ETK_LF_GEMM 4u   /* a GEMM timed by the compute model from m, n, k, flops, bytes */
#define ETK_LF_NOLATE 8u /* EXTERN: see above */
#define ETK_LF_POLL 16u  /* WAIT of a poll that found nothing (MPI_Test, MPI_Iprobe): its node
                            depends on the host chain only, which ends at `m` (ns); the answer
                            may come before the engine gets there, when ranks inside real calls
                            hold the engine back (a polling rank may be what they wait for) */
#define ETK_LF_ANY 64u   /* EXTERN with n_deps > 0: the call returns when one of deps[] is done
                            (MPI_Waitany, MPI_Waitsome): the engine runs on while none is, and no
                            further than the first one's end */
#define ETK_LF_QUERY 32u /* WAIT of a poll (with ETK_LF_POLL, ending at `m`): deps[1..n_deps) are
                            not dependencies but the rank's nodes asked about (7 at most); with
                            `group` set, a probe of that communicator (source member `peer`, tag
                            `tag`; -1: any). The answer's dep_end[0] has bit k-1 set when deps[k]
                            was done by the answer's time (a send: and matched by a receive),
                            bit n_deps-1 when a send the probe matches (the oldest unmatched of
                            its channel) had arrived; when the answer comes early (ranks inside
                            real calls hold the engine back), the bits say what was done by the
                            engine's time and dep_end[1] is 1 */

typedef struct etk_live_msg {
    uint32_t op;
    uint32_t rank;
    uint64_t id;                      /* node id (rank-local, increasing) */
    uint64_t deps[ETK_LIVE_MAX_DEPS]; /* data dependencies */
    uint32_t n_deps;
    int32_t type;                     /* etk_node_type */
    int32_t coll;                     /* etk_coll_type of a COLL node; GEMM: ETK_PREC_* + 1 of
                                         the call's dtype (0: the cluster's precision) */
    int32_t peer;                     /* SEND: dst, RECV: src (global ranks); COMM_INIT: member */
    int32_t tag;                      /* SEND/RECV: comm_tag; COMM_INIT: members */
    uint32_t flags;                   /* ETK_LF_* */
    uint64_t dur_ns;                  /* duration (CPU nodes, copies) */
    uint64_t bytes;                   /* tensor_size or comm_size */
    uint64_t flops;                   /* num_ops */
    int64_t m, n, k;                  /* GEMM shape */
    int64_t mem_alloc, mem_free;      /* device bytes allocated / freed by this node */
    char name[128];                   /* node name; WAIT: the call the rank waits in */
    char group[64];                   /* pg_name; COMM_INIT: the unique id's text */
} etk_live_msg;

typedef struct etk_live_reply {
    uint32_t op;
    int32_t status;      /* the engine rank answered (a process may speak for several) */
    uint64_t t_ns;       /* TIME: the rank's new virtual time */
    uint64_t dep_end[2]; /* TIME: end times of the WAIT's first two dependencies */
    /* CONFIG: the modelled GPU and the job */
    uint32_t version, world, local_world, sms, cc_major, cc_minor;
    uint32_t gpus;       /* GPUs per process (--gpus-per-process) */
    uint64_t hbm_bytes;
    double hbm_Bps, pcie_Bps, nvlink_Bps;
    double cpu_scale;
    uint64_t epoch_ns;   /* CLOCK_REALTIME at virtual time 0 */
    char gpu_name[64];
    char msg[384];       /* ERROR text; COMM: the group name */
} etk_live_reply;

#endif
