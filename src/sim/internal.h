/* internal.h — private state of the simulator (src/sim/): ranks with their nodes in flat
 * arrays, successor lists in CSR form, per-stream ready heaps, communicator groups with their
 * in-flight collective instances, point-to-point channels, and the global event heap.
 * engine.c runs it, fold.c decides classes, report.c and timeline.c read the finished state.
 *
 * Module map (arrows point one way: each file uses only those below it and this header):
 *   build.c    etk_sim_new / etk_sim_set_classes / etk_sim_free: construction and teardown
 *   setup.c    etk_sim_add_rank_trace: node setup (timing, streams, dependencies, cycles)
 *   engine.c   the event loop: event heap, completions, etk_sim_run_until, etk_sim_finish
 *   streams.c  stream scheduling: ready heaps per stream kind, issuing nodes to lanes
 *   coll.c     collective instances and send/recv channel matching, collective cost cache
 *   host.c     the host thread that issues each rank's nodes (compute.host_op_ns > 0)
 *   pool.c     growable arrays, the huge-page block (sim_grow, sim_reserve), the event heap
 *   util/kmap.h  the hash table (ids, group names, channels, cost cache)
 * setup -> coll -> pool; engine -> streams -> coll -> pool; engine, setup -> host; build -> pool;
 * report.c, timeline.c, phases.c, memory.c read the state; fold.c decides classes first. */
#ifndef ETK_SIM_INTERNAL_H
#define ETK_SIM_INTERNAL_H

#include <stdint.h>

#include "etkit/sim.h"
#include "util/kmap.h"

#define SIM_NONE UINT32_MAX /* == ETK_KMAP_NONE */

/* Stream kinds. The first three have a limited number of streams per rank; receives and
 * zero-resource nodes (metadata, unknown types) run without a stream. K_COPY: host<->device
 * copies marked for the copy engines (attribute copy_engine 1 = host to device, 2 = device to
 * host, live mode's records): one engine per direction (lane), each one copy at a time, beside
 * the compute stream. */
/* comm_stream_per_group: streams per rank (groups and send peers); past it streams are shared
 * (key % SIM_MAX_LANES). Until s27 there were 32: a rank of a 64-rank HPCC had sent to more than
 * 32 peers by its ring tests, and the ring's two messages then shared a stream. */
#define SIM_MAX_LANES 65535u
enum { K_CPU = 0, K_COMP = 1, K_COMM = 2, K_RECV = 3, K_FREE = 4, K_COPY = 5, K_COUNT = 6 };
#define SIM_HOST_SYNC (1ull << 63)
#define SIM_HOST_VAL(x) ((x) & ~SIM_HOST_SYNC)
enum { ST_WAIT = 0, ST_READY = 1, ST_ISSUED = 2, ST_DONE = 3 };

/* The longest simulated time accepted (ns): 10^18 ns = 31.7 years; past it an input is out of
 * range (and sums would near the 64-bit limit). */
#define SIM_MAX_NS 1000000000000000000ull

typedef struct snode {
    uint64_t id;
    uint64_t dur_ns;   /* compute/replay time; COLL: collective cost; SEND: transfer cost */
    uint64_t start_ns; /* issue time */
    uint64_t end_ns;
    uint64_t xfer_ns;  /* COLL/SEND/RECV: when the transfer started */
    uint64_t bytes;    /* comm bytes (COLL/SEND/RECV), tensor bytes otherwise */
    uint64_t flops;
    uint64_t mem_alloc, mem_free; /* mem_alloc_bytes / mem_free_bytes attributes (memory.c) */
    uint64_t host_ns;  /* host model (etk_sim.host_on): until the host thread reaches the node, its
                        * issue cost in ns (0: not issued by the host); then the time it is issued
                        * (SIM_HOST_SYNC: a host_sync node; the host waits for its completion) */
    const etk_node *src;
    uint32_t succ_begin, n_succ; /* CSR into srank.succ */
    uint32_t extra;              /* overflow successor list head (srank.xe), SIM_NONE if none */
    uint32_t pending;            /* unfinished dependencies */
    uint32_t aux;                /* COLL: group index; SEND/RECV: channel index */
    uint32_t pos;                /* COLL: simulated-member position in the group */
    uint32_t qnext;              /* channel queue link */
    uint32_t seq;                /* COLL: instance number on its group */
    uint8_t kind, type, ctype, state;
    uint16_t stream;
    uint16_t lane;               /* K_COMM with comm_stream_per_group: the rank's stream of the
                                  * node's group (point-to-point: one stream per peer); K_COPY:
                                  * its copy engine */
} snode;

typedef struct heapent {
    uint64_t key;
    uint32_t idx;
} heapent;

typedef struct uheap {
    heapent *a;
    uint32_t n, cap;
} uheap;

typedef struct xedge {
    uint32_t to, next;
} xedge;


typedef struct srank {
    snode *nodes;
    uint32_t n, cap;
    uint32_t *succ;
    uint32_t n_succ, cap_succ;
    xedge *xe;
    uint32_t n_xe, cap_xe;
    etk_kmap ids;          /* id -> node index (ids outside the dense table) */
    uint32_t *dense;   /* id - dense_lo -> node index, for dense ids */
    uint64_t dense_lo;
    uint32_t dense_n;
    uheap ready[K_COUNT];
    uint32_t busy[3]; /* bitmask of busy streams per limited kind */
    uint32_t busy_copy; /* K_COPY: bitmask of busy copy engines (lane 0 H2D, 1 D2H) */
    uint32_t *lane_key;    /* comm_stream_per_group: group (or send peer) of each stream ... */
    uint64_t *lane_busy;   /* ... and which are busy (bits); SIM_MAX_LANES at most */
    uint32_t n_lanes, cap_lanes;
    uint32_t n_done;
    uint32_t n_comp, n_xfer, n_cpu;
    uint64_t last_t;
    etk_sim_rank_stats st;
    uint64_t p2p_count, p2p_bytes, p2p_time;
    uint64_t missing;
    uint64_t ctrl_dropped;
    uint64_t mem_cur;  /* bytes allocated now (memory.c) */
    /* host model (host.c): the host thread issues the rank's nodes in trace order */
    uint64_t host_t;      /* when the host issued the last node it reached */
    uint32_t host_next;   /* the next node index it has not reached */
    uint32_t host_wait;   /* a host_sync node it waits for (SIM_NONE: none) */
    uheap host_blocked;   /* nodes whose dependencies are done but the host has not reached them
                           * (behind host_wait), by index */
    bool dirty, simulated;
} srank;

typedef struct sinst {
    int32_t ctype;
    uint64_t bytes, dur, issue_first;
    uint64_t xfer_t0; /* flow network model: when the transfer started */
    uint32_t arrived;
    uint32_t first_rank, first_node;
    uint32_t *node; /* [n_sim] node index per simulated member, SIM_NONE if not arrived */
    struct sinst *next_free;
} sinst;

typedef struct scollstat {
    uint64_t count, bytes, time;
} scollstat;

typedef struct sgroup {
    const char *name;
    const uint32_t *ranks; /* members in file order */
    uint32_t n;
    uint32_t *sorted;      /* members sorted (built on first use) */
    uint32_t *simpos;      /* [n] for sorted[i]: simulated-member position or SIM_NONE */
    uint32_t *simrank;     /* [n_sim] */
    uint32_t n_sim;
    uint32_t *issued;      /* [n_sim] collectives issued so far by each simulated member */
    sinst **inst;          /* in-flight instances, inst[k - base] */
    uint32_t inst_head, inst_n, inst_cap;
    uint32_t base;
    sinst *free_inst;
    scollstat stat[ETK_COLL_TYPE_COUNT];
    bool prepared;
} sgroup;

typedef struct schan {
    uint32_t src, dst;    /* simulated ranks */
    uint32_t sq_head, sq_tail, rq_head, rq_tail;
} schan;

typedef struct sevent {
    uint64_t t, seq;
    uint32_t a, b;
    uint32_t kind;
} sevent;

enum { EV_NODE = 0, EV_COLL = 1, EV_P2P = 2, EV_HOST = 3 };

struct etk_sim {
    etk_cluster cl;
    bool any_fp8;              /* a node ran at the FP8 peak ("precision": "fp8"): MFU against it */
    etk_sim_opts o;
    etk_sim_costs costs;
    uint64_t progress_tick;    /* events handled, for o.progress */
    uint32_t n_ranks;
    uint32_t nstreams[3];
    srank *r;
    uint32_t *cls, *rep, *csize; /* rank -> class, class -> representative, class size */
    uint32_t n_classes;
    bool folded;
    const etk_groups *eg;
    sgroup *g;
    uint32_t n_g;
    uint32_t g_all;          /* index of the all-ranks group */
    uint32_t *all_ranks;
    etk_kmap gnames;             /* (hash, len) -> group index */
    etk_kmap costcache;          /* (group << 8 | type, bytes) -> index into costs_ns */
    uint64_t *costv;
    uint32_t n_costv, cap_costv;
    schan *ch;
    uint32_t n_ch, cap_ch;
    etk_kmap chmap;
    sevent *ev;
    uint32_t n_ev, cap_ev;
    uint64_t seq;
    uint64_t now;
    struct etk_net_flows *nf; /* flow network model: concurrent transfers share links (NULL:
                                 each collective costs its isolated time) */
    uint32_t *dirty;
    uint32_t n_dirty, cap_dirty;
    uint32_t *held;          /* dispatch_lanes: ready nodes whose stream is busy */
    uint32_t cap_held;
    bool finished, broken;
    etk_sim_result res;
    uint64_t missing_total;
    uint64_t no_size; /* collectives without comm_size in the trace being added */
    uint64_t no_type, neg_ops; /* ... without comm_type (ALL_REDUCE), with num_ops < 0 (0) */
    uint64_t p2p_mismatch;     /* matched send/recv pairs of different comm_size */
    uint32_t flops_overflow_rank; /* the first rank whose FLOP sum passed 2^64, or SIM_NONE */
    uint64_t p2p_first[4];     /* the first: send rank, send id, recv rank, recv id */
    uint64_t p2p_first_b[2];   /* its send and recv bytes */
    char notes[1024]; /* warnings for the user (etk_sim_result.warnings) */
    uint32_t notes_dropped;
    char *pool;       /* see sim_reserve */
    size_t pool_used, pool_cap;
    etk_compute_params comp; /* copy of *o.compute (o.compute points here) */
    double *speed;           /* copy of o.rank_speed (o.rank_speed points here) */
    bool mem_tracked;        /* some node has mem_alloc_bytes / mem_free_bytes */
    bool host_on;            /* host model: compute.host_op_ns > 0 (host.c) */
};


/* ---------- shared by the engine's parts (build.c, setup.c, coll.c, streams.c, engine.c) ---------- */
int sim_grow(void **p, uint32_t *cap, uint32_t need, size_t elem);
bool sim_in_pool(const etk_sim *s, const void *p);
void *sim_pool_take(etk_sim *s, size_t bytes);
int sim_grow_p(etk_sim *s, void **p, uint32_t *cap, uint32_t need, size_t elem);
int sim_ev_push(etk_sim *s, uint64_t t, uint32_t kind, uint32_t a, uint32_t b);
sevent sim_ev_pop(etk_sim *s);
int sim_flow_pump(etk_sim *s, uint64_t t_end, etk_error *err);
uint64_t sim_def_comp(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes);
int sim_oom(etk_error *err);
int sim_prepare_group(etk_sim *s, sgroup *g, etk_error *err);
uint32_t sim_group_pos(const sgroup *g, uint32_t rank);
uint32_t sim_find_group(const etk_sim *s, const char *name);
uint32_t sim_get_chan(etk_sim *s, uint32_t src, uint32_t dst, int32_t tag, bool *o);
uint64_t sim_coll_cost(etk_sim *s, uint32_t gi, int ctype, uint64_t bytes, bool *o);
int sim_coll_arrive(etk_sim *s, uint32_t r, uint32_t i, uint64_t t, etk_error *err);
int sim_p2p_try(etk_sim *s, uint32_t c, uint64_t t, etk_error *err);
void sim_chan_append(snode *nodes, uint32_t *head, uint32_t *tail, uint32_t i);
/* Warnings for the user (the library never prints): "; "-separated, the first few kept. */
void sim_note(etk_sim *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sim_release_stream(srank *R, snode *n);
int sim_dispatch(etk_sim *s, uint32_t r, uint64_t t, etk_error *err);

static inline int uheap_push(uheap *h, uint64_t key, uint32_t idx)
{
    if (h->n == h->cap && sim_grow((void **)&h->a, &h->cap, h->n + 1, sizeof(heapent)) != 0)
        return -1;
    uint32_t i = h->n++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (h->a[p].key <= key)
            break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i].key = key;
    h->a[i].idx = idx;
    return 0;
}

static inline uint32_t uheap_pop(uheap *h)
{
    uint32_t top = h->a[0].idx;
    heapent last = h->a[--h->n];
    uint32_t i = 0, n = h->n;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h->a[c + 1].key < h->a[c].key)
            c++;
        if (last.key <= h->a[c].key)
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n)
        h->a[i] = last;
    return top;
}

static inline void mark_dirty(etk_sim *s, uint32_t r)
{
    if (s->r[r].dirty)
        return;
    s->r[r].dirty = true;
    if (sim_grow((void **)&s->dirty, &s->cap_dirty, s->n_dirty + 1, sizeof(uint32_t)) != 0) {
        s->broken = true;
        return;
    }
    s->dirty[s->n_dirty++] = r;
}

/* host.c: the host thread. sim_host_gate: node i's dependencies are done at s->now; true if it
 * must wait for the host (an EV_HOST event at its issue time, or blocked behind a host_sync);
 * sim_host_resume: the host_sync node the host waited for completed at t. */
bool sim_host_gate(etk_sim *s, uint32_t r, uint32_t i);
void sim_host_resume(etk_sim *s, uint32_t r, uint64_t t);

static inline void make_ready_now(etk_sim *s, uint32_t r, uint32_t i)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    n->state = ST_READY;
    if (uheap_push(&R->ready[n->kind], n->id, i) != 0)
        s->broken = true;
    mark_dirty(s, r);
}

static inline void make_ready(etk_sim *s, uint32_t r, uint32_t i)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    if (s->host_on && n->host_ns && sim_host_gate(s, r, i))
        return;
    n->state = ST_READY;
    if (uheap_push(&R->ready[n->kind], n->id, i) != 0)
        s->broken = true;
    mark_dirty(s, r);
}

static inline uint32_t id_get(const srank *R, uint64_t id)
{
    if (id - R->dense_lo < R->dense_n)
        return R->dense[id - R->dense_lo];
    return etk_kmap_get(&R->ids, id, 0);
}


static inline void acc(srank *R, uint64_t t)
{
    uint64_t d = t - R->last_t;
    if (!d)
        return;
    if (R->n_comp) {
        R->st.compute_ns += d;
        if (R->n_xfer)
            R->st.overlapped_comm_ns += d;
    } else if (R->n_xfer) {
        R->st.exposed_comm_ns += d;
    } else if (R->n_cpu) {
        R->st.cpu_ns += d;
    } else {
        R->st.idle_ns += d;
    }
    R->last_t = t;
}

/* Reserve one huge-page block for the ranks' first node/successor/id arrays (engine.c). */
int sim_reserve(etk_sim *s, size_t bytes);
/* Fill s->res from the finished run (report.c). */
int sim_build_result(etk_sim *s, etk_error *err);
/* busbw factor of nccl-tests for a collective of type t on n ranks (report.c) */
double sim_busbw_factor(int t, uint32_t n);

/* phases.c: TTFT / TPOT of inference traces from node names (etk_sim_result.inference) */
int sim_phase_result(etk_sim *s, etk_error *err);

/* memory.c: memory over time from mem_alloc_bytes / mem_free_bytes node attributes */
void sim_mem_alloc(etk_sim *s, srank *R, const snode *n, uint64_t t);
void sim_mem_free(srank *R, const snode *n);
void sim_mem_result(etk_sim *s);
/* Perfetto counter events ("ph": "C") of rank r's allocated bytes; returns 0 or ETK_ENOMEM */
int sim_mem_timeline(const etk_sim *s, uint32_t r, FILE *f);

#endif
