/* graph.c — rank graphs as token graphs peeled into layers (LayerDAG: layer 0 = the sources,
 * layer l+1 = the nodes whose parents are all placed), and their Weisfeiler-Lehman hash. */
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

etk_synth_graph *syn_graph_alloc(uint32_t n, uint32_t e)
{
    etk_synth_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->n = n;
    g->n_edges = e;
    g->tok = calloc(n ? n : 1, sizeof *g->tok);
    g->layer = calloc(n ? n : 1, sizeof *g->layer);
    g->par_off = calloc((size_t)n + 1, sizeof *g->par_off);
    g->par = calloc(e ? e : 1, sizeof *g->par);
    g->val = calloc(n ? (size_t)n * ETK_SYNTH_N_ATTR : 1, sizeof *g->val);
    if (!g->tok || !g->layer || !g->par_off || !g->par || !g->val) {
        etk_synth_graph_free(g);
        return NULL;
    }
    return g;
}

void etk_synth_graph_free(etk_synth_graph *g)
{
    if (!g)
        return;
    free(g->tok);
    free(g->layer);
    free(g->par_off);
    free(g->par);
    free(g->val);
    free(g);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int etk_synth_graph_build(uint32_t n, const uint16_t *tok, const double *val, const uint32_t *par_off,
                          const uint32_t *par, etk_synth_graph **out, uint32_t *order, etk_error *err)
{
    *out = NULL;
    uint32_t *lay = calloc(n ? n : 1, sizeof *lay), *indeg = calloc(n ? n : 1, sizeof *indeg);
    uint32_t *coff = calloc((size_t)n + 1, sizeof *coff), *ord = malloc((n ? n : 1) * sizeof *ord);
    uint32_t *newidx = malloc((n ? n : 1) * sizeof *newidx), *clean = NULL, *ch = NULL, *queue = NULL;
    etk_synth_graph *g = NULL;
    int rc = ETK_ENOMEM;
    if (!lay || !indeg || !coff || !ord || !newidx)
        goto done;
    /* de-duplicated parent lists without self loops */
    clean = malloc((par_off[n] ? par_off[n] : 1) * sizeof *clean);
    if (!clean)
        goto done;
    uint32_t *coffp = calloc((size_t)n + 1, sizeof *coffp);
    if (!coffp)
        goto done;
    uint32_t e = 0;
    for (uint32_t i = 0; i < n; i++) {
        coffp[i] = e;
        uint32_t s = e;
        for (uint32_t k = par_off[i]; k < par_off[i + 1]; k++) {
            uint32_t p = par[k];
            if (p == i || p >= n)
                continue;
            bool dup = false;
            for (uint32_t j = s; j < e && !dup; j++)
                dup = clean[j] == p;
            if (!dup)
                clean[e++] = p;
        }
        indeg[i] = e - s;
    }
    coffp[n] = e;
    /* children in CSR */
    for (uint32_t k = 0; k < e; k++)
        coff[clean[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        coff[i + 1] += coff[i];
    ch = malloc((e ? e : 1) * sizeof *ch);
    queue = malloc((n ? n : 1) * sizeof *queue);
    uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
    if (!ch || !queue || !fill) {
        free(coffp);
        free(fill);
        goto done;
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = coffp[i]; k < coffp[i + 1]; k++) {
            uint32_t p = clean[k];
            ch[coff[p] + fill[p]++] = i;
        }
    free(fill);
    /* Kahn in rounds: a round is a layer */
    uint32_t qh = 0, qt = 0, placed = 0, n_layers = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!indeg[i]) {
            queue[qt++] = i;
            lay[i] = 0;
        }
    while (qh < qt) {
        uint32_t end = qt;
        n_layers++;
        for (; qh < end; qh++) {
            uint32_t v = queue[qh];
            placed++;
            for (uint32_t k = coff[v]; k < coff[v + 1]; k++) {
                uint32_t c = ch[k];
                if (!--indeg[c]) {
                    lay[c] = lay[v] + 1;
                    queue[qt++] = c;
                }
            }
        }
    }
    if (placed != n) {
        free(coffp);
        rc = etk_err(err, ETK_EINVAL, "the graph has a cycle (%u of %u nodes could be placed in layers)", placed, n);
        goto done;
    }
    /* stable order by layer: counting sort */
    uint32_t *lstart = calloc((size_t)n_layers + 1, sizeof *lstart);
    if (!lstart) {
        free(coffp);
        goto done;
    }
    for (uint32_t i = 0; i < n; i++)
        lstart[lay[i] + 1]++;
    for (uint32_t l = 0; l < n_layers; l++)
        lstart[l + 1] += lstart[l];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = lstart[lay[i]]++;
        ord[j] = i;
        newidx[i] = j;
    }
    free(lstart);
    g = syn_graph_alloc(n, e);
    if (!g) {
        free(coffp);
        goto done;
    }
    g->n_layers = n_layers;
    uint32_t w = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = ord[j];
        g->tok[j] = tok[i];
        g->layer[j] = lay[i];
        if (val)
            memcpy(g->val + (size_t)j * ETK_SYNTH_N_ATTR, val + (size_t)i * ETK_SYNTH_N_ATTR,
                   ETK_SYNTH_N_ATTR * sizeof *val);
        g->par_off[j] = w;
        uint32_t s = w;
        for (uint32_t k = coffp[i]; k < coffp[i + 1]; k++)
            g->par[w++] = newidx[clean[k]];
        qsort(g->par + s, w - s, sizeof *g->par, cmp_u32);
        /* the main parent (a parent in the layer just before) first: the last one in the
         * sorted list has the highest index, hence the highest layer */
        if (w > s) {
            uint32_t last = g->par[w - 1];
            memmove(g->par + s + 1, g->par + s, (w - 1 - s) * sizeof *g->par);
            g->par[s] = last;
        }
    }
    g->par_off[n] = w;
    free(coffp);
    if (order)
        memcpy(order, ord, n * sizeof *ord);
    *out = g;
    g = NULL;
    rc = 0;
done:
    if (rc == ETK_ENOMEM)
        etk_err(err, ETK_ENOMEM, "out of memory peeling a graph of %u nodes", n);
    etk_synth_graph_free(g);
    free(lay);
    free(indeg);
    free(coff);
    free(ord);
    free(newidx);
    free(clean);
    free(ch);
    free(queue);
    return rc;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

uint64_t etk_synth_graph_wl_hash(const etk_synth_graph *g)
{
    uint32_t n = g->n;
    uint64_t *lab = malloc((n ? n : 1) * sizeof *lab), *nxt = malloc((n ? n : 1) * sizeof *nxt);
    uint64_t *down = calloc(n ? n : 1, sizeof *down);
    if (!lab || !nxt || !down) {
        free(lab);
        free(nxt);
        free(down);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++)
        lab[i] = mix(0x5157, g->tok[i]);
    for (int round = 0; round < 3; round++) {
        /* multisets by commutative sums of mixed labels: order-free */
        memset(down, 0, n * sizeof *down);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t up = 0;
            for (uint32_t k = g->par_off[i]; k < g->par_off[i + 1]; k++) {
                uint32_t p = g->par[k];
                up += mix(1, lab[p]);
                down[p] += mix(2, lab[i]);
            }
            nxt[i] = up;
        }
        for (uint32_t i = 0; i < n; i++)
            nxt[i] = mix(mix(lab[i], nxt[i]), down[i]);
        uint64_t *t = lab;
        lab = nxt;
        nxt = t;
    }
    qsort(lab, n, sizeof *lab, cmp_u64);
    uint64_t h = mix(n, g->n_edges);
    for (uint32_t i = 0; i < n; i++)
        h = mix(h, lab[i]);
    free(lab);
    free(nxt);
    free(down);
    return h;
}
