/* layerdag.h — the LayerDAG model (private to src/synth; docs/synth.md "LayerDAG model"): three
 * per-layer stages on a pooled encoding of the prefix graph — a layer-size classifier (size 0
 * stops), a discrete diffusion denoiser of the new layer's tokens (prior: the token marginal),
 * a Bernoulli diffusion denoiser of the edges into the new layer (prior: the mean candidate edge
 * density), and a far-parent classifier (parents beyond the edge window: stop, or a layer
 * distance bucket and the parent's token, one at a time) — trained with Adam, teacher-forced over the layers of every graph. */
#ifndef ETK_SYNTH_LAYERDAG_H
#define ETK_SYNTH_LAYERDAG_H

#include <jansson.h>

#include "nn.h"

#define LD_WINDOW 8      /* edge candidates: the nodes of the last 8 layers */
#define LD_SIZES 64      /* size classes 0 (stop) .. 63 */
#define LD_STEPS 4       /* diffusion steps */
#define LD_HIDDEN 32
#define LD_SIZE_CHUNK 32 /* training: an Adam step of the size stage every 32 layers */
#define LD_SIN 8
/* prefix features: token histograms, layer index, last layer size, prefix node count, graph
 * label, and the graph profile (layers left, scale class) */
#define LD_F (2 * ETK_SYNTH_N_TOKENS + 6 * LD_SIN)
#define LD_TOK_IN (LD_F + 2 * ETK_SYNTH_N_TOKENS + 4)                          /* token denoiser */
#define LD_EDGE_IN (LD_F + 2 * ETK_SYNTH_N_TOKENS + LD_WINDOW + 3 + 4)         /* edge denoiser */
/* far parents (layer distance > LD_WINDOW): distance buckets 9-16, 17-32, ..., 257-512, > 512 */
#define LD_FAR_BUCKETS 7
#define LD_FAR_MAX 4                                                           /* per node */
#define LD_FAR_IN (LD_F + ETK_SYNTH_N_TOKENS + LD_FAR_MAX + 1 + LD_FAR_BUCKETS)
#define LD_FAR_OUT (1 + LD_FAR_BUCKETS * ETK_SYNTH_N_TOKENS) /* stop, or (bucket, parent token) */
/* labeled models: attribute bin codes given (token, label bucket): the buckets cut the training
 * graphs' labels at their 1/8 ... 7/8 quantiles */
#define LD_LABEL_BUCKETS 8
/* profile guidance (s31): the token stage's logits gain LD_GUIDE x log(profile share / training
 * marginal share) per token (both add-1/2 smoothed); chosen on a validation split carved from the
 * training split (docs/synth.md "Profile guidance") */
#define LD_GUIDE 0.5

/* a training graph's profile (version 4): its layer count, attribute scale class and label
 * bucket (0 unlabeled), and (version 5) its token counts. A sample draws one profile (of the label's bucket under --label) and every
 * stage conditions on it: the layers left and the scale class are prefix features, so the size
 * stage's stop and layer sizes follow the drawn graph, not a hazard pooled over all graphs. */
typedef struct syn_ld_profile {
    uint32_t layers;
    int32_t scale;
    int32_t bucket;
    /* version 5: the graph's token counts; the token, edge and far-parent stages see their shares
     * in place of the prefix's token histogram (which fed the stages' own draws back) */
    uint32_t tok[ETK_SYNTH_N_TOKENS];
} syn_ld_profile;

typedef struct syn_layerdag {
    syn_mlp size, tok, edge, far;
    uint32_t n_prof;
    syn_ld_profile *prof;
    uint32_t max_layers; /* twice the most layers seen: a safety stop */
    double edge_prior;   /* fraction of window candidates that are parents */
    uint32_t epochs;
    bool labeled;        /* trained with graph labels (step times) */
    double label_min_ns, label_max_ns; /* their range */
    double loss[4];      /* mean training loss of the last epoch: size, token, edge, far parents */
    double lcut_ns[LD_LABEL_BUCKETS - 1]; /* labeled: the bucket bounds (ascending) */
    shist lbins[LD_LABEL_BUCKETS][ETK_SYNTH_N_TOKENS]; /* labeled: bin codes given label bucket, token */
} syn_layerdag;

typedef struct syn_ld_opts {
    uint32_t epochs; /* 0: 8 */
    uint64_t seed;
    /* Polyak averaging: the saved weights are the mean of the weights after every graph's Adam
     * step over the last `average` epochs (0: off, the last iterate; at most epochs) */
    uint32_t average;
    const double *labels_ns; /* NULL, or a label (step time, ns) per graph */
} syn_ld_opts;

int syn_ld_train(etk_synth_model *m, etk_synth_graph *const *gs, size_t n, const syn_ld_opts *o, etk_error *err);
/* label_ns > 0: the target label (models trained with labels). The graph has the layer count of a
 * drawn training-graph profile (syn_ld_profile), or fewer layers when max_nodes cuts it; nodes > 0:
 * exactly that many nodes, the profile's layer count scaled by nodes / its node count (max_nodes
 * ignored) */
int syn_ld_sample(const etk_synth_model *m, uint32_t max_nodes, uint32_t nodes, double label_ns, srng *r,
                  etk_synth_graph **out);
/* a profile's node count (the sum of its token counts) */
uint32_t syn_ld_prof_nodes(const syn_ld_profile *pf);
void syn_ld_free(syn_layerdag *ld);
/* a profile drawn uniformly among the training graphs' (those of label bucket `bucket` when
 * some are, bucket -1: all) */
const syn_ld_profile *syn_ld_profile_draw(const syn_layerdag *ld, int bucket, srng *r);
/* the profile guidance of the token stage: g[t] = LD_GUIDE x log(((c_t + 1/2) / (C + T/2)) /
 * ((M_t + 1/2) / (M + T/2))), c the profile's token counts (C their sum), M the training
 * marginal's (m->tok_marginal), T the number of tokens */
void syn_ld_guide(const etk_synth_model *m, const syn_ld_profile *pf, double *g);
/* the label bucket (0 .. LD_LABEL_BUCKETS - 1) of a label in a labeled model's range */
int syn_ld_label_bucket(const syn_layerdag *ld, double label_ns);
/* a node's attribute values: bins from the label bucket's table of a labeled model given a label
 * (when it has the token), else from the count model's bins given the graph's scale class
 * (`scale`, -1: none) and the token, backing off to the token's pooled bins */
void syn_ld_attr_values(const etk_synth_model *m, int tok, double label_ns, int scale, srng *r, double *val);
json_t *syn_ld_json(const syn_layerdag *ld);
/* from the model file's "layerdag" object; errors name path and field */
int syn_ld_from_json(json_t *o, const char *path, syn_layerdag **out, etk_error *err);
#endif
