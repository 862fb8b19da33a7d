/* coord_priv.h — the live-mode coordinator's state, shared by its parts (src/live/):
 *   coord.c   the socket, the event loop and the scheduling rule (etk_live_run)
 *   procs.c   the rank processes (spawn, reap, end) and their connections (accept, drain)
 *   nodes.c   messages into Chakra nodes (per-rank batches for the engine), kernel times, the record
 *   comm.c    communicators: joins and splits into the engine's groups
 * coord -> (procs, nodes, comm); procs, comm -> coord's live_reply. */
#ifndef ETK_LIVE_COORD_PRIV_H
#define ETK_LIVE_COORD_PRIV_H

#include <stdbool.h>
#include <sys/types.h>

#include "etkit/live.h"
#include "live/proto.h"
#include "util/outset.h"

enum { R_START = 0, R_RUN, R_WAIT, R_INIT, R_DONE, R_EXTERN };

typedef struct lrank {
    int fd;
    pid_t pid;
    int state;
    bool eof, reaped, said_exit;
    bool hello;          /* its process (or one it exec'd) has connected at least once */
    bool worked;         /* the current connection sent work (anything but host CPU nodes and EXIT):
                            until then a new hello for the rank supersedes it (a wrapper that execs
                            the program, or runs helper commands first: pyenv's shims) */
    int status;          /* wait status */
    uint64_t wait_id, wait_dep[2];
    uint64_t poll_ns;    /* R_WAIT in a poll (ETK_LF_POLL): the time it waits for, else 0 */
    char call[128];
    etk_trace **chunk;   /* the rank's nodes in chunks of a fixed capacity (never reallocated: the
                            engine points into them); the last one takes new nodes */
    uint32_t n_chunk, cap_chunk;
    size_t pend;         /* in the last chunk: the first node not yet given to the engine */
    uint32_t n_slim;     /* chunks [0, n_slim) are slim: all their nodes done, their attributes and
                            dependencies freed (the engine reads only done nodes' names) */
    size_t slim_pos;     /* in chunk n_slim: the nodes before it are done */
    uint64_t n_given;    /* nodes given to the engine */
    etk_writer *rec;     /* --record: the rank's trace file, written as nodes go to the engine */
    uint64_t exit_ns;
    uint64_t extern_ns;  /* R_EXTERN: the rank's host time (it submits nothing earlier) */
    bool extern_nolate;  /* R_EXTERN: ... but receives (ETK_LF_NOLATE) */
    bool extern_any;     /* R_EXTERN: it returns when one of tied[] is done (ETK_LF_ANY) */
    uint64_t tied[8];    /* R_EXTERN: the nodes it waits for after the call (proto.h) */
    uint32_t n_tied;
    uint32_t unmatched_in; /* channels into this rank with more sends than receives so far */
    uint64_t unmatched_out; /* this rank's sends no receive matches yet */
    /* R_WAIT in a query (ETK_LF_QUERY): its nodes, or its probe (communicator index, sender's
     * global rank or -1, tag or -1) */
    uint64_t q_ids[ETK_LIVE_MAX_DEPS];
    uint32_t n_q;
    bool probe;
    uint32_t probe_comm;
    int64_t probe_src, probe_tag;
} lrank;

typedef struct lcomm {
    char key[96];
    uint32_t n, arrived;
    uint32_t *ranks;     /* global rank of each member */
    uint32_t *waiting;   /* ranks to answer */
    int64_t *color, *skey; /* ncclCommSplit: per member of the parent */
    char name[96];
    bool done, split;
} lcomm;

/* A point-to-point channel (sender, receiver, comm_tag): sends minus receives submitted, and the
 * sends no receive matches yet (the sender's node ids, oldest first: q[qh .. qh+qn)). */
typedef struct lchan {
    uint32_t src, dst, tag;
    int64_t bal;
    bool used;
    uint64_t *q;
    uint32_t qh, qn, qcap;
} lchan;

typedef struct kstat {
    char *name;
    uint64_t ns, count;
    bool guessed;
} kstat;

struct etk_live {
    const etk_cluster *cl;
    const etk_live_opts *o;
    etk_sim *s;
    etk_groups *groups;
    etk_outset rec_set;  /* --record: the rank set, written in a temporary folder, published whole */
    bool rec_open;
    lrank *r;
    uint32_t n;          /* engine ranks: n_proc processes x gpp GPUs */
    uint32_t n_proc, gpp; /* process p drives ranks p*gpp .. p*gpp+gpp-1 over one socket */
    int lfd;
    char dir[64], path[100];
    lcomm *comms;
    uint32_t n_comms;
    double held_since;   /* real time the engine has been held at held_ns with polls waiting */
    uint64_t held_ns;
    lchan *chans;        /* open addressing, cap_chans a power of two */
    uint32_t n_chans, cap_chans;
    kstat *ks;
    uint32_t n_ks;
    char **names;        /* interned node names and pg_names (open addressing, cap_names a power of 2):
                            nodes point here, not at a copy each */
    uint32_t n_names, cap_names;
    etk_live_reply cfg;
    char fail[900];
    etk_live_msg inbuf[ETK_LIVE_BATCH]; /* one packet */
    struct { int fd; uint32_t rank; bool bystander; } *orphan; /* connections drained, not the rank's:
                          superseded ones that did no work, and bystanders (accept_one) */
    uint32_t n_orphan, cap_orphan;
    unsigned fd_epoch; /* bumped at each accept and close while running: run_loop rebuilds its epoll set */
    double connect_timeout_s; /* ETK_LIVE_CONNECT_TIMEOUT (default 60): a rank without a connection
                                 while every other rank waits is reported after this long */
    double limbo_since;  /* real time (s) since when only such ranks keep the run from advancing; 0 */
    pid_t launcher;      /* --launcher: the one process started */
    unsigned prec_warned; /* precisions (bits) whose missing peak was reported */
    bool debug;          /* ETK_LIVE_DEBUG set: log why the engine is held (stderr) */
    bool launcher_reaped;
    int launcher_status;
};
typedef struct etk_live coord;

/* coord.c */
void live_reply(coord *c, uint32_t rank, etk_live_reply *rp);
/* nodes.c */
int live_take_node(coord *c, uint32_t rank, const etk_live_msg *m, etk_error *err);
int live_flush(coord *c, etk_error *err);
int live_record_open(coord *c, etk_error *err);
int live_write_record(coord *c, etk_error *err);
void live_drop_pending(coord *c, uint32_t rank);
void live_nodes_free(coord *c);
void live_kernel_report(coord *c);
/* procs.c */
/* "exited with status N" / "was killed by signal N (name)" for a wait status */
void live_describe_status(char *buf, size_t len, int st);
/* collects exited children (ranks, the launcher) without blocking */
void live_reap(coord *c);
/* ends the launcher and every rank still running: SIGTERM, then SIGKILL after a grace */
void live_end_ranks(coord *c);
/* starts the ranks' processes (or the launcher) with the stand-in libraries preloaded */
int live_spawn(coord *c, etk_error *err);
/* accepts one connection and its hello (a wrapper's earlier connection is superseded) */
int live_accept_one(coord *c, etk_error *err);
/* reads what superseded connection k sent: host time and EXIT dropped, work fails the run */
int live_drain_orphan(coord *c, uint32_t k, etk_error *err);
/* rank i's process runs without a connection to etkit live (never connected, or exec'd) */
bool live_in_limbo(const coord *c, uint32_t i);
/* --launcher: whether the launcher exited (c->fail set when it failed or left ranks unconnected) */
bool live_launcher_gone(coord *c);
/* comm.c */
const lcomm *live_find_comm(const coord *c, const char *group);
int live_comm_join(coord *c, uint32_t rank, const etk_live_msg *m, etk_error *err);

/* ETK_LF_QUERY: the bits of rank's query answered at t (proto.h): its nodes done by t, or a send
 * matching its probe arrived by t. */
uint64_t live_query(coord *c, uint32_t rank, uint64_t t);

#endif
