/* test_topo.c — the fabric (src/net/topo.c): routes, hop counts and latencies on the
 * rail-optimized SuperPOD preset and the Llama 3 preset (16 GPUs per ToR, 3,072-GPU pods, 1:7
 * above the pod), bottleneck bandwidth by hand for in-pod vs cross-pod traffic, link factors,
 * and the YAML errors of the fabric keys. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "etkit/net.h"

static void route_is(const etk_fabric *f, uint32_t a, uint32_t b, uint32_t links, uint32_t hops,
                     double lat)
{
    etk_route r;
    etk_fabric_route(f, a, b, &r);
    assert_int_equal(r.n, links);
    assert_int_equal(r.switch_hops, hops);
    assert_true(fabs(r.latency_ns - lat) < 1e-9);
}

/* SuperPOD, 64 nodes: NVLink 500 ns; NIC endpoints 1,400 ns + 200 ns per switch. Node 1's GPU 0
 * is on the same rail leaf as node 0's GPU 0 (32 nodes per leaf): 1 switch, 1,600 ns, links NIC
 * up + NIC down. GPU 0 -> GPU 9 (node 1, rail 1): NVLink to GPU 1 first (PXN), then rail 1:
 * 4 links, 500 + 1,600 ns. Node 32 is in the other scalable unit: leaf, spine, leaf = 3
 * switches, 2,000 ns, 4 links. */
static void test_superpod_routes(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100-superpod", 64, &c, &err), 0);
    assert_int_equal(c.net_model, ETK_NET_FLOW);
    etk_fabric f;
    etk_fabric_of(&c, &f);
    assert_true(f.rail);
    assert_int_equal(f.nodes, 64);
    route_is(&f, 0, 3, 2, 0, 500);
    route_is(&f, 0, 8, 2, 1, 1600);
    route_is(&f, 0, 9, 4, 1, 2100);
    route_is(&f, 0, 256, 4, 3, 2000);
    route_is(&f, 5, 5, 0, 0, 0);
    /* links: 4 per GPU (NVLink, NIC, each way), 2 per rail leaf (2 units x 8 rails), 2 per pod */
    assert_int_equal(etk_fabric_links(&c, &f, NULL), 4 * 512 + 2 * 16 + 2);
}

/* Llama 3, 768 nodes = 2 pods of 384 nodes (3,072 GPUs). Same ToR (nodes 0 and 1): 1 switch,
 * 1,600 ns; another ToR of the pod: 3 switches, 2,000 ns; the other pod: 5 switches (leaf,
 * spine, core, spine, leaf), 2,400 ns, 6 links. */
static void test_llama3_routes(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("llama3", 768, &c, &err), 0);
    etk_fabric f;
    etk_fabric_of(&c, &f);
    assert_false(f.rail);
    route_is(&f, 0, 8, 2, 1, 1600);
    route_is(&f, 0, 11, 2, 1, 1600); /* no rails: any NIC of the ToR */
    route_is(&f, 0, 16, 4, 3, 2000);
    route_is(&f, 0, 3072, 6, 5, 2400);
    double *caps = malloc(sizeof *caps * etk_fabric_links(&c, &f, NULL));
    uint32_t nl = etk_fabric_links(&c, &f, caps);
    /* last two links: the pods' downlinks; pod uplinks before them: 3,072 x 50 / 7 B/ns */
    assert_true(fabs(caps[nl - 1] - 3072 * 50.0 / 7) < 1e-6);
    assert_true(fabs(caps[nl - 3] - 3072 * 50.0 / 7) < 1e-6);
    free(caps);
}

/* Every GPU of pod 0 sends 47 MB (50 MB on the wire at the NIC efficiency 47/50) at once. To a
 * GPU of another ToR in the same pod (full bisection): each NIC at 50 B/ns, 1,000,000 ns +
 * 2,000. To its counterpart in pod 1: 3,072 flows share the pod uplink of 3,072 x 50 / 7 B/ns,
 * 50/7 each: 7,000,000 ns + 2,400 — the 1:7 oversubscription, exactly 7x slower. */
static void test_llama3_oversubscription(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("llama3", 768, &c, &err), 0);
    const uint32_t n = 3072;
    etk_flow_op *ops = calloc(n, sizeof *ops);
    uint32_t *pr = malloc(sizeof *pr * 2 * n);
    for (int cross = 0; cross < 2; cross++) {
        for (uint32_t g = 0; g < n; g++) {
            pr[2 * g] = g;
            /* in pod: node + 192 (other half of the pod), same local GPU; cross: + 3,072 */
            pr[2 * g + 1] = cross ? g + n : (g + 1536) % n;
            ops[g] = (etk_flow_op){.type = -1, .bytes = 47000000, .ranks = pr + 2 * g,
                                   .n_ranks = 2};
        }
        assert_int_equal(etk_net_flow_run(&c, ops, n, &err), 0);
        double want = cross ? 7e6 + 2400 : 1e6 + 2000;
        for (uint32_t g = 0; g < n; g += 511)
            assert_true(fabs(ops[g].finish_ns - want) < 2);
    }
    free(ops);
    free(pr);
}

/* --link-factor: nic:17:0.5 halves GPU 17's NIC links; the bad specs name what is wrong. In the
 * analytical model an all-reduce over {1, 9} (two nodes, 2,000 ns, 50 GB/s: 2α + 2·(1/2)·S/B =
 * 4,000 + 1,000,000 ns for S = 50 MB, ring) takes 1,000,000 ns more with nic:9:0.5, and a group
 * not containing GPU 9 is unchanged. */
static void test_link_factor(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 4, &c, &err), 0);
    uint32_t g[2] = {1, 9}, h[2] = {2, 10};
    uint64_t base = etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 50000000, g, 2);
    assert_int_equal(base, 4000 + 1000000);
    assert_int_equal(etk_link_factor_parse(&c, "nic:9:0.5", &err), 0);
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 50000000, g, 2), 4000 + 2000000);
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 50000000, h, 2), base);
    etk_fabric f;
    etk_fabric_of(&c, &f);
    double *caps = malloc(sizeof *caps * etk_fabric_links(&c, &f, NULL));
    etk_fabric_links(&c, &f, caps);
    assert_true(fabs(caps[2 * 32 + 9] - 25) < 1e-12);  /* NIC up of GPU 9 */
    assert_true(fabs(caps[3 * 32 + 9] - 25) < 1e-12);  /* NIC down */
    assert_true(fabs(caps[2 * 32 + 10] - 50) < 1e-12); /* its neighbour is untouched */
    free(caps);
    assert_int_equal(etk_link_factor_parse(&c, "dim:0:0.5", &err), 0);
    assert_int_equal(etk_link_factor_parse(&c, "nic:99:0.5", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "rank 99 out of range (the cluster has 32 GPUs)"));
    assert_int_equal(etk_link_factor_parse(&c, "pcie:1:0.5", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "unknown link kind 'pcie'"));
    assert_int_equal(etk_link_factor_parse(&c, "nic:1:0", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "factor 0: expected a number in [0.001, 1000]"));
    /* issue #18: 1e-300 ran into a 1.84e19 ns collective; 1e300 was told it is not positive */
    assert_int_equal(etk_link_factor_parse(&c, "nic:1:1e-300", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "factor 1e-300: expected a number in [0.001, 1000]"));
    assert_int_equal(etk_link_factor_parse(&c, "nic:1:1e300", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "factor 1e+300: expected a number in [0.001, 1000]"));
    assert_int_equal(etk_link_factor_parse(&c, "nic:1:0.001", &err), 0);
    assert_int_equal(etk_link_factor_parse(&c, "nic:1", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "expected nic:RANK:F"));
    assert_int_equal(etk_link_factor_parse(&c, "dim:2:0.5", &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "dimension 2 out of range (the cluster has 2)"));
}

/* The flow model's state is sized by the links a collective's ranks use, not by the fabric
 * (fuzz_cluster once spent 72 s of CPU costing 11 collectives on a 6M-GPU flow cluster, each
 * allocating and checking all 24M links). On the SuperPOD preset with 750,000 nodes (6M GPUs)
 * and with 64 nodes: a send from GPU 0 to the last GPU (another rail, another leaf, one pod)
 * crosses NVLink up and down (PXN), NIC up, leaf up, leaf down, NIC down = 6 links and takes
 * S/eff / 50 B/ns + 500 + 1,400 + 3 x 200 ns on both; an all-reduce over GPUs 0..15 uses the
 * same links and takes the same time on both fabrics. */
static double session_ns(const etk_cluster *c, int32_t type, uint64_t bytes, const uint32_t *r,
                         uint32_t n, uint32_t *links)
{
    etk_net_flows *s;
    etk_error err = {0};
    assert_int_equal(etk_net_flows_new(c, &s, &err), 0);
    assert_int_equal(etk_net_flows_start(s, type, bytes, r, n, 7, &err), 0);
    uint64_t tag = 0;
    double t = -1;
    assert_int_equal(etk_net_flows_next(s, INFINITY, &tag, &t), 1);
    assert_int_equal(tag, 7);
    *links = etk_net_flows_links(s);
    etk_net_flows_free(s);
    return t;
}

static void test_flow_state_by_links_used(void **st)
{
    (void)st;
    etk_cluster big, small;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100-superpod", 750000, &big, &err), 0);
    assert_int_equal(etk_cluster_preset("dgx-h100-superpod", 64, &small, &err), 0);
    assert_int_equal(big.n_npus, 6000000);
    etk_fabric f;
    etk_fabric_of(&big, &f);
    assert_int_equal(etk_fabric_links(&big, &f, NULL), 4u * 6000000 + 2 * 8 * 23438 + 2);
    uint64_t S = 1 << 20;
    double want = (double)llround(S / etk_nccl_link_eff(true)) / 50.0 + 500 + 1400 + 3 * 200;
    uint32_t lb, ls;
    uint32_t pb[2] = {0, big.n_npus - 1}, ps[2] = {0, small.n_npus - 1};
    double tb = session_ns(&big, -1, S, pb, 2, &lb), ts = session_ns(&small, -1, S, ps, 2, &ls);
    assert_int_equal(lb, 6);
    assert_int_equal(ls, 6);
    assert_true(fabs(tb - want) < 1e-6 && fabs(ts - want) < 1e-6);
    uint32_t r[16];
    for (uint32_t i = 0; i < 16; i++)
        r[i] = i;
    tb = session_ns(&big, ETK_COLL_ALL_REDUCE, S, r, 16, &lb);
    ts = session_ns(&small, ETK_COLL_ALL_REDUCE, S, r, 16, &ls);
    assert_int_equal(lb, ls);
    assert_true(lb >= 4 * 16 && lb <= 4 * 16 + 2 * 8);
    assert_true(tb > 0 && tb == ts);
    assert_int_equal(etk_net_coll_ns(&big, ETK_COLL_ALL_REDUCE, S, r, 16),
                     etk_net_coll_ns(&small, ETK_COLL_ALL_REDUCE, S, r, 16));
}

static void bad_yaml(const char *text, const char *want)
{
    etk_cluster c;
    etk_error err = {0};
    assert_int_not_equal(etk_cluster_parse(text, strlen(text), "x.yaml", &c, &err), 0);
    if (!strstr(err.msg, want))
        fail_msg("got '%s', want '%s'", err.msg, want);
}

static void test_yaml_errors(void **st)
{
    (void)st;
    const char *ok = "preset: dgx-h100\nnodes: 4\nnetwork_model: flow\n"
                     "fabric: {rail: true, leaf_nodes: 2, pod_oversubscription: 3}\n";
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_parse(ok, strlen(ok), "x.yaml", &c, &err), 0);
    assert_int_equal(c.net_model, ETK_NET_FLOW);
    assert_int_equal(c.fabric.nodes, 4);
    assert_true(fabs(c.fabric.nic_Bps - 50e9) < 1);
    bad_yaml("preset: dgx-h100\nfabric: {leaf_nodes: 2, pod_oversubscription: 0.5}\n",
             "x.yaml:2: fabric.pod_oversubscription: expected a ratio >= 1");
    bad_yaml("preset: dgx-h100\nfabric: {leaf_nodes: 2, spine: 4}\n", "spine");
    bad_yaml("preset: dgx-h100\nfabric: {rail: yes please}\n", "fabric.rail: expected true or false");
    bad_yaml("preset: dgx-h100\nfabric: {rail: true}\n", "fabric: missing leaf_nodes");
    bad_yaml("preset: dgx-h100\nnetwork_model: fluid\n",
             "x.yaml:2: network_model: expected flow or analytical, got fluid");
    /* the flow model numbers links in 32 bits: 8 x 134,217,728 = 2^30 GPUs have 4 x 2^30 NVLink
     * and NIC links + 2 x 8 rail leaves + 2 x 1 pod = 2^32 + 18 > UINT32_MAX; one node fewer
     * (2^30 - 8 GPUs: 2^32 - 32 + 18) is accepted */
    bad_yaml("name: big\ngpu: h100\nnetwork_model: flow\nnetwork:\n"
             "  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\n"
             "  - {size: 134217728, topology: Switch, bandwidth: 50, latency: 2000}\n",
             "x.yaml: cluster 'big': network_model: flow: the fabric of 1073741824 GPUs has "
             "4294967314 links, more than the flow model supports (4294967295, about 1 billion "
             "GPUs); use network_model: analytical");
    const char *edge = "name: big\ngpu: h100\nnetwork_model: flow\nnetwork:\n"
                       "  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\n"
                       "  - {size: 134217727, topology: Switch, bandwidth: 50, latency: 2000}\n";
    assert_int_equal(etk_cluster_parse(edge, strlen(edge), "x.yaml", &c, &err), 0);
    etk_fabric f;
    etk_fabric_of(&c, &f);
    assert_int_equal(etk_fabric_links(&c, &f, NULL), 4294967282u);
    uint32_t r[2] = {0, c.n_npus - 1};
    assert_true(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 1 << 20, r, 2) < UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_superpod_routes),
        cmocka_unit_test(test_llama3_routes),
        cmocka_unit_test(test_llama3_oversubscription),
        cmocka_unit_test(test_link_factor),
        cmocka_unit_test(test_flow_state_by_links_used),
        cmocka_unit_test(test_yaml_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
